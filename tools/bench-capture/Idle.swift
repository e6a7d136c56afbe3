// The idle cost of the watchdog: an app that never stalls, its main queue serviced by RunLoop.main (the watchdog
// checks it without waking it, and sleeps on the run loop's epoll set), by dispatchMain() or by Swift concurrency's
// main actor as under an async @main (the watchdog reads libdispatch's main queue in place), in child processes
// with and without StallWatchdog (threshold 250 ms), interleaved; each child measures its own CPU over the same
// window.
import CStallCapture
import Foundation
import StallProfiler

/// Child: services the main queue with `loop` ("runloop", "dispatch" or "async") for `seconds` (after a 0.5 s settle) and
/// prints "cpu <ms per s>" and one "thread <name> <ms per s>" line per thread, all over the measured window only.
func idleChild(seconds: Double, watchdog: Bool, loop: String) {
    let path = NSTemporaryDirectory() + "stallprof-bench-idle-\(getpid()).stalls"
    let w = watchdog ? try! StallWatchdog.start(.init(threshold: .milliseconds(250), outputPath: path)) : nil
    nonisolated(unsafe) var start: (threads: [String: UInt64], cpu: Double, ns: UInt64) = ([:], 0, 0)
    let finish: @Sendable () -> Void = {
        let wall = Double(stallcap_monotonic_ns() - start.ns) / 1e9
        let cpu = processCPUSeconds() - start.cpu
        let threads1 = threadCPUSnapshot()
        print(String(format: "cpu %.4f", cpu / wall * 1000))
        for (name, ns) in threadCPUDelta(from: start.threads, to: threads1) {
            print(String(format: "thread %@ %.4f", name, Double(ns) / 1e6 / wall))
        }
        print("stalls \(w?.statistics.stalls ?? 0)")
        w?.stop()
        unlink(path)
    }
    guard loop == "dispatch" else {
        RunLoop.main.run(until: Date().addingTimeInterval(0.5))
        start = (threadCPUSnapshot(), processCPUSeconds(), stallcap_monotonic_ns())
        RunLoop.main.run(until: Date().addingTimeInterval(seconds))
        finish()
        return
    }
    if loop == "async" {
        // What an async @main does on Linux: main-actor jobs on the main queue, drained after dispatchMain(); the
        // app awaits Task.sleep, as an idle async app awaits its next event.
        Task { @MainActor in
            try await Task.sleep(for: .milliseconds(500))
            start = (threadCPUSnapshot(), processCPUSeconds(), stallcap_monotonic_ns())
            try await Task.sleep(for: .seconds(seconds))
            finish()
            fflush(nil)
            exit(0)
        }
        dispatchMain()
    }
    // Two main-queue blocks in all: one starts the window, one ends it.
    DispatchQueue.main.asyncAfter(deadline: .now() + 0.5) {
        start = (threadCPUSnapshot(), processCPUSeconds(), stallcap_monotonic_ns())
        DispatchQueue.main.asyncAfter(deadline: .now() + seconds) {
            finish()
            fflush(nil)  // every stream: the parent reads the lines from a pipe
            exit(0)
        }
    }
    dispatchMain()
}

/// Parent: `pairs` interleaved children without and with the watchdog, `seconds` each.
func benchIdle(pairs: Int, seconds: Double, loop: String) {
    func run(watchdog: Bool) -> (cpu: Double, threads: [String], stalls: Int) {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        child.arguments = ["idle-child", String(seconds), watchdog ? "1" : "0", loop]
        let pipe = Pipe()
        child.standardOutput = pipe
        try! child.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        var cpu = Double.nan, threads: [String] = [], stalls = 0
        for row in output.split(separator: "\n") {
            let fields = row.split(separator: " ")
            if fields.first == "cpu", fields.count == 2 { cpu = Double(fields[1]) ?? .nan }
            if fields.first == "stalls", fields.count == 2 { stalls = Int(fields[1]) ?? 0 }
            if fields.first == "thread", fields.count == 3, let v = Double(fields[2]) {
                threads.append(String(format: "    %@ %.3f ms CPU per second", String(fields[1]).padding(toLength: 26, withPad: " ", startingAt: 0), v))
            }
        }
        return (cpu, threads, stalls)
    }
    var without: [Double] = [], with: [Double] = [], lastWith: [String] = [], lastWithout: [String] = [], stalls = 0
    for i in 0..<pairs {  // ABBA order, so that a drift in the machine's load does not favour one side
        for watchdog in (i % 2 == 0 ? [false, true] : [true, false]) {
            let r = run(watchdog: watchdog)
            if watchdog { with.append(r.cpu); lastWith = r.threads; stalls += r.stalls } else { without.append(r.cpu); lastWithout = r.threads }
        }
    }
    let a = median(without), b = median(with)
    let name = ["dispatch": "dispatchMain() app", "async": "async @main app (main actor)"][loop] ?? "RunLoop.main app"
    print(String(format: "idle %@, threshold 250 ms: %d + %d child processes of %.0f s, interleaved (stalls seen: %d)", name, pairs, pairs, seconds, stalls))
    line("without watchdog", String(format: "median %6.3f ms CPU per second   (runs: %@)", a, without.map { String(format: "%.3f", $0) }.joined(separator: " ")))
    line("with watchdog", String(format: "median %6.3f ms CPU per second   (runs: %@)", b, with.map { String(format: "%.3f", $0) }.joined(separator: " ")))
    let goal = loop == "runloop" ? 0.3 : 0.5
    line("watchdog's idle cost (difference)", String(format: "%6.3f ms CPU per second   (ratio %.1fx; goal <= %.1f: %@)",
        b - a, b / max(a, 0.001), goal, b - a <= goal ? "met" : "not met"))
    print("  per thread over the window, last run with the watchdog:")
    lastWith.forEach { print($0) }
    print("  per thread over the window, last run without:")
    lastWithout.forEach { print($0) }
}
