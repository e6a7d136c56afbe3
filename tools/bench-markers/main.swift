// stallprof-bench-markers: what one StallMarker call costs the calling thread, without and with a watchdog, and
// whether it allocates (when tools/bench-markers.sh preloads its allocation counter). Prints figures.
//
//   stallprof-bench-markers [CALLS]
import Foundation
import StallFormat
import StallProfiler
#if canImport(Glibc)
import Glibc
#endif

let calls = CommandLine.arguments.dropFirst().first.flatMap(Int.init) ?? 200_000
typealias Counter = @convention(c) () -> UInt
// RTLD_DEFAULT (nil): the preloaded counter, when tools/bench-markers.sh preloads it.
let countAllocations = dlsym(nil, "stallprof_thread_allocations").map { unsafeBitCast($0, to: Counter.self) }

func now() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

let native = "cell " + String(calls)  // built at run time: a native string
let staticName: StaticString = "touchDown"
let long = String(repeating: "layout pass ", count: 10)  // 120 bytes: cut to 63

/// Runs `body` `count` times in batches of `batch` (default 256) with a pause of `pauseUs` microseconds (default
/// 2 ms) between batches; prints the median nanoseconds per call over the batches and the calling thread's
/// allocations. Batches of 256 overflow the thread's own ring (32 markers) between the watchdog's drains, so most
/// of their calls move the thread's oldest marker to the shared ring (or count it lost); batches of 32 a drain
/// apart stay in the thread's own ring.
func measure(_ label: String, _ count: Int, batch: Int = 256, pauseUs: UInt32 = 2_000, _ body: () -> Void) {
    var perCall: [Double] = []
    perCall.reserveCapacity(count / batch + 1)  // so the measurement itself allocates nothing
    let before = countAllocations?() ?? 0
    var done = 0
    while done < count {
        let size = min(batch, count - done)
        let start = now()
        for _ in 0..<size { body() }
        perCall.append(Double(now() - start) / Double(size))
        done += size
        usleep(pauseUs)
    }
    let allocations = (countAllocations?() ?? 0) - before
    perCall.sort()
    let median = perCall[perCall.count / 2], p99 = perCall[min(perCall.count - 1, perCall.count * 99 / 100)]
    let heap = countAllocations == nil ? "allocations not counted (run tools/bench-markers.sh)"
        : "\(allocations) heap allocations in \(count) calls"
    print("  \(label): median \(String(format: "%.1f", median)) ns, p99 of batches \(String(format: "%.1f", p99)) ns; \(heap)")
}

func run(_ title: String) {
    print(title)
    measure("mark(StaticString)", calls) { StallMarker.mark(staticName) }
    measure("mark(\"literal\"), the String overload", calls) { StallMarker.mark("touchDown") }
    measure("mark(String), native", calls) { StallMarker.mark(native) }
    measure("mark(String), 120 bytes cut to 63", calls) { StallMarker.mark(long) }
    measure("begin + end", calls / 2) { StallMarker.begin("perform").end() }
    // The watchdog of this bench drains every 62.5 ms (a quarter of the threshold; nothing answers its pings).
    measure("mark(\"literal\"), 32 per drain: the thread's own ring", min(calls, 3_200), batch: 32, pauseUs: 70_000) {
        StallMarker.mark("touchDown")
    }
}

run("no watchdog:")
let path = NSTemporaryDirectory() + "bench-markers-\(getpid()).stalls"
let watchdog = try StallWatchdog.start(StallWatchdog.Configuration(outputPath: path))
usleep(100_000)
run("watchdog running (threshold 250 ms):")
watchdog.stop()
let capture = try CaptureReader.read(path: path)
unlink(path)
print("capture: \(capture.markers.count) markers (\(capture.markers.filter { $0.kind == .interval }.count) intervals), "
    + "\(capture.droppedMarkers) lost")
