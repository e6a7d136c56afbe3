// stallprof-bench-capture: measures the capture path. Driven by tools/bench-capture.sh, which prints the figures.
//
//   stallprof-bench-capture capture [SAMPLES] [DEPTH]   per-sample cost on a thread spinning DEPTH frames deep
//   stallprof-bench-capture idle [SECONDS]              CPU the watchdog costs an idle app
import CStallCapture
import Dispatch
import Foundation
import StallProfiler
import Synchronization

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

final class Spinner: @unchecked Sendable {
    let depth: Int
    var tid: pid_t = 0
    let ready = DispatchSemaphore(value: 0)
    nonisolated(unsafe) static var stop = false
    init(depth: Int) { self.depth = depth }

    @inline(never) func descend(_ level: Int) -> Int {
        if level <= 1 {
            var x = 0
            while !Spinner.stop { x &+= 1 }
            return x
        }
        return descend(level - 1) &+ Int(opaque(level))
    }
    @inline(never) func opaque(_ v: Int) -> Int32 { Int32(truncatingIfNeeded: v) }
}

func benchCapture(samples: Int, depth: Int) {
    precondition(stallcap_install(SIGPROF) == 0, "cannot install the handler")
    let spinner = Spinner(depth: depth)
    let thread = Thread {
        spinner.tid = stallcap_gettid()
        spinner.ready.signal()
        _ = spinner.descend(depth)
    }
    thread.start()
    spinner.ready.wait()
    var frames = [UInt](repeating: 0, count: 256)
    var roundTrips: [Double] = [], unwinds: [Double] = [], depths: [Double] = []
    var missed = 0
    for _ in 0..<samples {
        var info = stallcap_sample_info()
        let t0 = stallcap_monotonic_ns()
        let status = frames.withUnsafeMutableBufferPointer {
            stallcap_sample(spinner.tid, 100_000_000, $0.baseAddress, 256, &info)
        }
        let t1 = stallcap_monotonic_ns()
        if status == STALLCAP_OK {
            roundTrips.append(Double(t1 - t0) / 1000)
            unwinds.append(Double(info.unwind_ns) / 1000)
            depths.append(Double(info.frame_count))
        } else {
            missed += 1
        }
        usleep(1000)
    }
    Spinner.stop = true
    roundTrips.sort()
    unwinds.sort()
    print(String(format: "capture: %d samples, stack depth %.0f frames, %d missed", roundTrips.count, percentile(depths.sorted(), 0.5), missed))
    print(String(format: "  round trip (watchdog: signal, unwind, wake-up)  median %7.1f us   p99 %7.1f us", percentile(roundTrips, 0.5), percentile(roundTrips, 0.99)))
    print(String(format: "  unwind in the handler (sampled thread held up)  median %7.1f us   p99 %7.1f us", percentile(unwinds, 0.5), percentile(unwinds, 0.99)))
}

func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// CPU seconds of each thread of this process so far, by thread name (from /proc/self/task/*/schedstat).
func threadCPU() -> [(String, Double)] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.compactMap { tid in
        guard let comm = try? String(contentsOfFile: "/proc/self/task/\(tid)/comm", encoding: .utf8),
            let sched = try? String(contentsOfFile: "/proc/self/task/\(tid)/schedstat", encoding: .utf8),
            let ns = sched.split(separator: " ").first.flatMap({ Double($0) })
        else { return nil }
        return ("\(comm.trimmingCharacters(in: .whitespacesAndNewlines))[\(tid)]", ns / 1e9)
    }
}

func benchIdle(seconds: Double) {
    let path = NSTemporaryDirectory() + "stallprof-bench-idle-\(getpid()).stalls"
    func measure(_ label: String, watchdog: Bool) -> Double {
        let w = watchdog ? try! StallWatchdog.start(StallWatchdog.Configuration(outputPath: path)) : nil
        let cpu0 = processCPUSeconds()
        let t0 = Date()
        RunLoop.main.run(until: Date().addingTimeInterval(seconds))
        let cpu = processCPUSeconds() - cpu0
        let wall = Date().timeIntervalSince(t0)
        let threads = threadCPU()
        w?.stop()
        let perSecond = cpu / wall * 1000
        let padded = label.padding(toLength: 32, withPad: " ", startingAt: 0)
        print(String(format: "  %@ %.3f ms CPU per second (%.2f%% of one core)", padded, perSecond, perSecond / 10))
        if watchdog {
            for (name, seconds) in threads where seconds > 0 {
                print(String(format: "    thread %@ %.3f ms CPU per second", name.padding(toLength: 24, withPad: " ", startingAt: 0), seconds / wall * 1000))
            }
        }
        return perSecond
    }
    print(String(format: "idle app (main run loop idle, threshold 250 ms), %.0f s each:", seconds))
    let base = measure("without watchdog", watchdog: false)
    // Reference: a bare thread sending an empty block to the main queue at the watchdog's ping rate (every
    // 62.5 ms). What it costs is the price of waking the main run loop, whoever does it.
    let stopPinger = Atomic<Bool>(false)
    let pinger = Thread {
        while !stopPinger.load(ordering: .relaxed) {
            usleep(62_500)
            DispatchQueue.main.async {}
        }
    }
    pinger.start()
    let bare = measure("bare pinger, same rate", watchdog: false)
    stopPinger.store(true, ordering: .relaxed)
    usleep(100_000)
    let with = measure("with watchdog", watchdog: true)
    print(String(format: "  bare main-queue wake-ups         %.3f ms CPU per second", max(0, bare - base)))
    print(String(format: "  watchdog cost (difference)       %.3f ms CPU per second", max(0, with - base)))
    unlink(path)
}

let arguments = CommandLine.arguments
switch arguments.count > 1 ? arguments[1] : "" {
case "capture":
    benchCapture(samples: arguments.count > 2 ? Int(arguments[2])! : 2000, depth: arguments.count > 3 ? Int(arguments[3])! : 50)
case "idle":
    benchIdle(seconds: arguments.count > 2 ? Double(arguments[2])! : 5)
default:
    FileHandle.standardError.write(Data("usage: stallprof-bench-capture capture [SAMPLES] [DEPTH] | idle [SECONDS]\n".utf8))
    exit(64)
}
