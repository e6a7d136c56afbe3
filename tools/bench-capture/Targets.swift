// The idle cost of watched targets (StallTarget): a RunLoop.main app with N idle event-loop threads, its watchdog
// watching the main queue alone or also every loop (threshold 250 ms each), in child processes, interleaved. The
// difference over N is the cost per target: the watchdog's checks and pings, and each loop's wake to answer them.
// The loops are SwiftNIO's shape (EventLoop: epoll_wait on a set of their own, woken through a pipe), or with
// `futex` a condition variable's wait (SerialThread), whose wake the watchdog's deep sleep cannot watch.
import CStallCapture
import Foundation
import StallProfiler
import StallSamples

/// Child: `loops` idle loops, watched (`watched`) or not, for `seconds` after a 0.5 s settle; prints "cpu <ms per s>"
/// and "stalls <n>". With `pool` (and no loops), the watched target is Swift's cooperative pool. With `epoll`, the
/// loops are EventLoops, else SerialThreads; with `queues`, serial DispatchQueues (`.queue`) instead of loops.
func targetsChild(seconds: Double, loops: Int, watched: Bool, pool: Bool = false, epoll: Bool = true, queues: Bool = false) {
    let path = NSTemporaryDirectory() + "stallprof-bench-targets-\(getpid()).stalls"
    var configuration = StallWatchdog.Configuration(threshold: .milliseconds(250), outputPath: path)
    let posts: [@Sendable (@escaping @Sendable () -> Void) -> Void] = (0..<(queues ? 0 : loops)).map { index in
        if epoll {
            let loop = EventLoop(index: index)
            return { loop.execute($0) }
        }
        let loop = SerialThread(name: "loop-\(index)")
        return { loop.post($0) }
    }
    if watched && queues {
        configuration.targets = (0..<loops).map { .queue("queue-\($0)", DispatchQueue(label: "queue-\($0)")) }
    } else if watched {
        configuration.targets = posts.enumerated().map { index, post in .executor("loop-\(index)", ping: post) }
        if pool { configuration.targets.append(.cooperativePool()) }
    }
    let watchdog = try! StallWatchdog.start(configuration)
    RunLoop.main.run(until: Date().addingTimeInterval(0.5))
    let cpu = processCPUSeconds(), start = stallcap_monotonic_ns(), threads0 = threadCPUSnapshot()
    RunLoop.main.run(until: Date().addingTimeInterval(seconds))
    let wall = Double(stallcap_monotonic_ns() - start) / 1e9
    print(String(format: "cpu %.4f", (processCPUSeconds() - cpu) / wall * 1000))
    for (name, ns) in threadCPUDelta(from: threads0, to: threadCPUSnapshot()) {
        print(String(format: "thread %@ %.4f", name, Double(ns) / 1e6 / wall))
    }
    print("stalls \(watchdog.statistics.stalls)")
    watchdog.stop()
    unlink(path)
}

/// Parent: for each count in `counts`, `pairs` interleaved children without and with the loops watched; the loops of
/// `kind` (epoll or futex).
func benchTargets(pairs: Int, seconds: Double, counts: [Int], kind: String) {
    func run(loops: Int, watched: Bool) -> (cpu: Double, stalls: Int) {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        // 0 loops: the cooperative pool is the one target.
        child.arguments = [
            "targets-child", String(seconds), loops == 0 ? "pool" : String(loops), watched ? "1" : "0", kind,
        ]
        let pipe = Pipe()
        child.standardOutput = pipe
        try! child.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        var cpu = Double.nan, stalls = 0
        for row in output.split(separator: "\n") {
            let fields = row.split(separator: " ")
            if fields.first == "cpu", fields.count == 2 { cpu = Double(fields[1]) ?? .nan }
            if fields.first == "stalls", fields.count == 2 { stalls = Int(fields[1]) ?? 0 }
        }
        return (cpu, stalls)
    }
    let kinds = ["epoll": "epoll loops (NIO's shape)", "futex": "futex loops (condition variable)", "queue": "serial queues"]
    print(String(format: "watched targets on an idle RunLoop.main app, threshold 250 ms, %@: %d + %d child processes of %.0f s per count, interleaved", kinds[kind] ?? kind, pairs, pairs, seconds))
    var costs: [(count: Int, cost: Double)] = []
    for count in counts {
        var without: [Double] = [], with: [Double] = [], stalls = 0
        for i in 0..<pairs {  // ABBA order
            for watched in (i % 2 == 0 ? [false, true] : [true, false]) {
                let r = run(loops: count, watched: watched)
                if watched { with.append(r.cpu); stalls += r.stalls } else { without.append(r.cpu) }
            }
        }
        let a = median(without), b = median(with), each = (b - a) / Double(max(1, count))
        let what = count == 0 ? "idle cooperative pool" : "\(count) idle \(kind == "queue" ? "queues" : "loops")"
        line("\(what), main queue alone", String(format: "median %6.3f ms CPU per second", a))
        line("\(what), \(count == 0 ? "" : "each ")watched", String(format: "median %6.3f ms CPU per second   (stalls seen: %d)", b, stalls))
        line("cost per target", String(format: "%6.3f ms CPU per second   (goal <= 0.05: %@)", each, each <= 0.05 ? "met" : "not met"))
        if count > 0 { costs.append((count, b - a)) }
    }
    // The first target also turns the deep sleep off (a fixed cost); the others add only their checks.
    if let first = costs.first, let last = costs.last, last.count > first.count {
        let marginal = (last.cost - first.cost) / Double(last.count - first.count)
        line("each target past the first", String(format: "%6.3f ms CPU per second   (%d to %d targets; the first costs %.3f)", marginal, first.count, last.count, first.cost))
    }
}
