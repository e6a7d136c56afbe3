// A thread spinning DEPTH frames deep that notes every gap in its own progress: the time it was stopped.
import CStallCapture
import Foundation
import Synchronization

/// Spins at a fixed stack depth, reading the monotonic clock in a tight loop; any two consecutive reads more than
/// `gapFloorNs` apart are recorded as a gap (the thread was stopped: a signal handler, an interrupt, preemption).
final class GapSpinner: @unchecked Sendable {
    let depth: Int
    let gapFloorNs: UInt64 = 1_000
    private(set) var tid: pid_t = 0
    private(set) var pthread: pthread_t? = nil
    private let ready = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private let stopFlag = Atomic<Bool>(false)
    /// Gaps as (start, end) pairs; written by the spinner only, read after `stop()`.
    private let gaps: UnsafeMutablePointer<UInt64>
    private let capacity: Int
    private var count = 0

    /// The CPU the spinner pins itself to, or nil.
    var cpu: Int? = nil

    init(depth: Int, capacity: Int = 1 << 20) {
        self.depth = depth
        self.capacity = capacity
        gaps = .allocate(capacity: 2 * capacity)
    }
    deinit { gaps.deallocate() }

    /// Starts the thread and returns once it spins.
    func start() {
        let thread = Thread { [self] in
            if let cpu { pinToCPU(cpu) }
            stallcap_warm_thread()
            tid = stallcap_gettid()
            pthread = pthread_self()
            ready.signal()
            _ = descend(depth)
            done.signal()
        }
        thread.start()
        ready.wait()
    }

    func stop() {
        stopFlag.store(true, ordering: .relaxed)
        done.wait()
    }

    @inline(never) func descend(_ level: Int) -> Int {
        if level <= 1 { return spin() }
        return descend(level - 1) &+ Int(opaque(level))
    }
    @inline(never) func opaque(_ v: Int) -> Int32 { Int32(truncatingIfNeeded: v) }

    @inline(never) private func spin() -> Int {
        var prev = stallcap_monotonic_ns()
        var iterations = 0
        while !stopFlag.load(ordering: .relaxed) {
            let now = stallcap_monotonic_ns()
            if now &- prev > gapFloorNs && count < capacity {
                gaps[2 * count] = prev
                gaps[2 * count + 1] = now
                count += 1
            }
            prev = now
            iterations &+= 1
        }
        return iterations
    }

    /// For each window (start, end) of a sample, the longest gap that began inside it (ns), or nil when none did.
    /// Call after `stop()`.
    func longestGaps(in windows: [(UInt64, UInt64)]) -> [UInt64?] {
        var result: [UInt64?] = []
        var g = 0
        for (start, end) in windows {  // windows and gaps are both in time order
            while g < count && gaps[2 * g] + 2_000 < start { g += 1 }
            var best: UInt64? = nil
            var k = g
            while k < count && gaps[2 * k] <= end + 2_000 {
                best = max(best ?? 0, gaps[2 * k + 1] - gaps[2 * k])
                k += 1
            }
            result.append(best)
        }
        return result
    }
}
