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

/// Runs `rounds` of [off, 100 Hz, off, 1 kHz] windows of `seconds` each on the main thread; prints the slowdown.
func benchSlowdown(rounds: Int, seconds: Double, depth: Int) {
    precondition(stallcap_install(SIGPROF) == 0, "cannot install the handler")
    stallcap_warm_thread()
    let tid = stallcap_gettid()
    func window(hz: Int?) -> (rate: Double, samples: Int) {
        let sampler = hz.map { RateSampler(tid: tid, hz: $0) }
        sampler?.start()
        let t0 = stallcap_monotonic_ns()
        let chunks = work(depth: depth, until: t0 + UInt64(seconds * 1e9))
        let elapsed = Double(stallcap_monotonic_ns() - t0) / 1e9
        sampler?.stop()
        return (Double(chunks) / elapsed, sampler?.taken ?? 0)
    }
    _ = window(hz: nil)  // warm-up
    var slow100: [Double] = [], slow1k: [Double] = [], taken100 = 0, taken1k = 0
    for _ in 0..<rounds {
        let a = window(hz: nil).rate
        let s100 = window(hz: 100)
        let b = window(hz: nil).rate
        let s1k = window(hz: 1000)
        let c = window(hz: nil).rate
        slow100.append(100 * (1 - s100.rate / ((a + b) / 2)))
        slow1k.append(100 * (1 - s1k.rate / ((b + c) / 2)))
        taken100 += s100.samples
        taken1k += s1k.samples
    }
    print(String(format: "busy main thread (%d frames of work), %d rounds of %.1f s windows, interleaved:", depth, rounds, seconds))
    line("slowdown sampled at 100 Hz", String(format: "median %5.2f %%   (rounds: %@; %d samples)", median(slow100),
         slow100.map { String(format: "%.2f", $0) }.joined(separator: " "), taken100))
    line("slowdown sampled at 1 kHz", String(format: "median %5.2f %%   (rounds: %@; %d samples)", median(slow1k),
         slow1k.map { String(format: "%.2f", $0) }.joined(separator: " "), taken1k))
}
