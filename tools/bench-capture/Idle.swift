// The idle cost of the watchdog: a RunLoop.main app that never stalls, in child processes with and without
// StallWatchdog (threshold 250 ms), interleaved; each child measures its own CPU over the same window.
import CStallCapture
import Foundation
import StallProfiler

/// Child: runs RunLoop.main for `seconds` (after a 0.5 s settle) and prints "cpu <ms per s>" and one
/// "thread <name> <ms per s>" line per thread, all over the measured window only.
func idleChild(seconds: Double, watchdog: Bool) {
    let path = NSTemporaryDirectory() + "stallprof-bench-idle-\(getpid()).stalls"
    let w = watchdog ? try! StallWatchdog.start(.init(threshold: .milliseconds(250), outputPath: path)) : nil
    RunLoop.main.run(until: Date().addingTimeInterval(0.5))
    let threads0 = threadCPUSnapshot()
    let cpu0 = processCPUSeconds()
    let t0 = stallcap_monotonic_ns()
    RunLoop.main.run(until: Date().addingTimeInterval(seconds))
    let wall = Double(stallcap_monotonic_ns() - t0) / 1e9
    let cpu = processCPUSeconds() - cpu0
    let threads1 = threadCPUSnapshot()
    print(String(format: "cpu %.4f", cpu / wall * 1000))
    for (name, ns) in threadCPUDelta(from: threads0, to: threads1) {
        print(String(format: "thread %@ %.4f", name, Double(ns) / 1e6 / wall))
    }
    let stalls = w?.statistics.stalls ?? 0
    print("stalls \(stalls)")
    w?.stop()
    unlink(path)
}

/// Parent: `pairs` interleaved children without and with the watchdog, `seconds` each.
func benchIdle(pairs: Int, seconds: Double) {
    func run(watchdog: Bool) -> (cpu: Double, threads: [String], stalls: Int) {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        child.arguments = ["idle-child", String(seconds), watchdog ? "1" : "0"]
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
    print(String(format: "idle RunLoop.main app, threshold 250 ms: %d + %d child processes of %.0f s, interleaved (stalls seen: %d)", pairs, pairs, seconds, stalls))
    line("without watchdog", String(format: "median %6.3f ms CPU per second   (runs: %@)", a, without.map { String(format: "%.3f", $0) }.joined(separator: " ")))
    line("with watchdog", String(format: "median %6.3f ms CPU per second   (runs: %@)", b, with.map { String(format: "%.3f", $0) }.joined(separator: " ")))
    line("watchdog's idle cost (difference)", String(format: "%6.3f ms CPU per second   (ratio %.1fx)", b - a, b / max(a, 0.001)))
    print("  per thread over the window, last run with the watchdog:")
    lastWith.forEach { print($0) }
    print("  per thread over the window, last run without:")
    lastWithout.forEach { print($0) }
}
