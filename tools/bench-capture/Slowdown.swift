// How much a busy main thread slows down while it is sampled: work done per second with and without sampling,
// in interleaved one-second windows.
import CStallCapture
import Foundation
import Synchronization

/// Samples one thread at a fixed rate with stallcap_sample until stopped.
final class RateSampler: @unchecked Sendable {
    private let tid: pid_t
    private let intervalNs: UInt64
    private let stopFlag = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)
    private(set) var taken = 0
    private(set) var missed = 0

    init(tid: pid_t, hz: Int) {
        self.tid = tid
        intervalNs = 1_000_000_000 / UInt64(hz)
    }

    func start() {
        Thread { [self] in
            var frames = [UInt](repeating: 0, count: 256)
            var next = stallcap_monotonic_ns() + intervalNs
            while !stopFlag.load(ordering: .relaxed) {
                let now = stallcap_monotonic_ns()
                if next > now { usleep(UInt32((next - now) / 1000)) }
                next += intervalNs
                var info = stallcap_sample_info()
                let status = frames.withUnsafeMutableBufferPointer {
                    stallcap_sample(tid, 100_000_000, $0.baseAddress, 256, &info)
                }
                if status == STALLCAP_OK { taken += 1 } else { missed += 1 }
            }
            done.signal()
        }.start()
    }

    func stop() {
        stopFlag.store(true, ordering: .relaxed)
        done.wait()
    }
}

/// Work at a fixed depth: chunks of arithmetic, counted.
@inline(never) func work(depth: Int, until endNs: UInt64) -> Int {
    if depth > 1 { return work(depth: depth - 1, until: endNs) &+ Int(Int32(truncatingIfNeeded: depth)) }
    var chunks = 0
    var x: UInt64 = 0x9E37_79B9_7F4A_7C15
    while stallcap_monotonic_ns() < endNs {
        for _ in 0..<2_000 { x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 }
        chunks += 1
    }
    return chunks &+ Int(x & 1)
}

/// Runs `rounds` of [off, 100 Hz, off, 1 kHz, off] windows of `seconds` each on the main thread; prints the
/// slowdown: work per second of the main thread's own CPU time (the handler and the signal's kernel work are
/// charged to it, so this keeps every cost of a sample while other processes taking the CPU away do not count),
/// and work per wall-clock second (which also loses what the sampler takes from a shared CPU, and the noise).
func benchSlowdown(rounds: Int, seconds: Double, depth: Int) {
    precondition(stallcap_install(SIGPROF) == 0, "cannot install the handler")
    stallcap_warm_thread()
    let tid = stallcap_gettid()
    struct Window { var perCPU: Double; var perWall: Double; var samples: Int }
    func window(hz: Int?) -> Window {
        let sampler = hz.map { RateSampler(tid: tid, hz: $0) }
        sampler?.start()
        let c0 = ownThreadCPUNs()
        let t0 = stallcap_monotonic_ns()
        let chunks = Double(work(depth: depth, until: t0 + UInt64(seconds * 1e9)))
        let elapsed = Double(stallcap_monotonic_ns() - t0) / 1e9
        let cpu = Double(ownThreadCPUNs() &- c0) / 1e9
        sampler?.stop()
        return Window(perCPU: chunks / cpu, perWall: chunks / elapsed, samples: sampler?.taken ?? 0)
    }
    _ = window(hz: nil)  // warm-up
    var slow: [Int: (cpu: [Double], wall: [Double], samples: Int)] = [100: ([], [], 0), 1000: ([], [], 0)]
    var before = window(hz: nil)
    for _ in 0..<rounds {
        for hz in [100, 1000] {  // off, 100 Hz, off, 1 kHz, off, ...: each sampled window between two plain ones
            let sampled = window(hz: hz)
            let after = window(hz: nil)
            slow[hz]!.cpu.append(100 * (1 - sampled.perCPU / ((before.perCPU + after.perCPU) / 2)))
            slow[hz]!.wall.append(100 * (1 - sampled.perWall / ((before.perWall + after.perWall) / 2)))
            slow[hz]!.samples += sampled.samples
            before = after
        }
    }
    print(String(format: "busy main thread (%d frames of work), %d rounds of %.1f s windows, interleaved:", depth, rounds, seconds))
    for hz in [100, 1000] {
        let (cpu, wall, samples) = slow[hz]!
        // The signal waits for a scheduler tick that finds the thread running: asked for at 1 kHz, a thread gets
        // at most the kernel's HZ samples a second (250 here). The achieved rate is printed beside the figure.
        let rate = Double(samples) / (Double(rounds) * seconds)
        line("slowdown asked at \(hz == 100 ? "100 Hz" : "1 kHz"), per CPU second", String(format: "median %5.2f %%   (%d samples, %.0f a second; rounds: %@)",
             median(cpu), samples, rate, cpu.map { String(format: "%.2f", $0) }.joined(separator: " ")))
        line("  per wall-clock second", String(format: "median %5.2f %%   (rounds: %@)", median(wall),
             wall.map { String(format: "%.2f", $0) }.joined(separator: " ")))
    }
}
