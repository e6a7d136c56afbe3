// The slowdown benchmark's sampler: one thread for the whole run, switched between off and a rate, that samples
// the main thread with stallcap_sample, the delivery the watchdog uses (EpisodeSampler): a one-shot timer on the
// thread's CPU clock, answered at the next scheduler tick that finds it running, the answer polled for.
import CStallCapture
import Foundation
import Synchronization

/// Samples one thread with stallcap_sample (the watchdog's delivery: a one-shot timer on the thread's CPU clock)
/// at the rate it is set to, or not at all, from one thread that lives for the whole benchmark.
final class SwitchedSampler: @unchecked Sendable {
    private let tid: pid_t
    /// False for the control: the sampler wakes at the rate, as paced, but sends no request.
    private let requests: Bool
    private let condition = NSCondition()
    private var hz = 0, generation = 0, quit = false  // under `condition`
    /// The generation the sampler has acted on: its requests of earlier ones are answered or cancelled.
    private let acknowledged = Atomic<Int>(0)
    /// When each sample's handler ran (CLOCK_MONOTONIC ns), in order; read after `stop`.
    private(set) var timestamps: [UInt64] = []
    /// Where the sampler ran: (CLOCK_MONOTONIC ns, CPU) after each request and each pacing wake-up, in order;
    /// read after `stop`.
    private(set) var places: [(ns: UInt64, cpu: Int32)] = []
    private(set) var missed = 0
    private let done = DispatchSemaphore(value: 0)

    init(tid: pid_t, requests: Bool) {
        self.tid = tid
        self.requests = requests
        Thread { [self] in run() }.start()
    }

    /// Sets the rate (0: off) and returns the new generation: the main thread works on until `settled` says so.
    func set(hz newHz: Int) -> Int {
        condition.lock()
        defer { condition.unlock() }
        hz = newHz
        generation += 1
        condition.signal()
        return generation
    }

    func settled(_ generation: Int) -> Bool { acknowledged.load(ordering: .acquiring) == generation }

    func stop() {
        condition.lock()
        quit = true
        condition.signal()
        condition.unlock()
        done.wait()
    }

    private func run() {
        var frames = [UInt](repeating: 0, count: 256)
        // Requests are paced in on time: the wait left when sampling stopped is owed when it resumes at that rate,
        // so each second of on windows gets `hz` requests, however the on stretches fall between the off ones.
        var seen = 0, next: UInt64 = 0, pacedHz = 0, owed = [Int: UInt64]()
        condition.lock()
        while !quit {
            if hz == 0 {
                if seen != generation {
                    seen = generation
                    let now = stallcap_monotonic_ns()
                    if pacedHz != 0 { owed[pacedHz] = next > now ? next - now : 0 }
                    pacedHz = 0
                    condition.unlock()
                    stallcap_sample_cancel()  // nothing may arrive in an off window
                    condition.lock()
                    acknowledged.store(seen, ordering: .releasing)
                }
                if hz == 0 && !quit { condition.wait() }
                continue
            }
            let now = stallcap_monotonic_ns()
            if seen != generation {  // just switched on
                seen = generation
                pacedHz = hz
                next = now + (owed[hz] ?? 0)
                acknowledged.store(seen, ordering: .releasing)
            }
            if next > now {  // paced as asked; a change of rate wakes it
                _ = condition.wait(until: Date(timeIntervalSinceNow: Double(next - now) / 1e9))
                places.append((stallcap_monotonic_ns(), currentCPU()))
                continue
            }
            next += 1_000_000_000 / UInt64(hz)  // behind (a sample waits for a tick): the next one at once
            guard requests else { continue }
            condition.unlock()
            var info = stallcap_sample_info()
            let status = frames.withUnsafeMutableBufferPointer {
                stallcap_sample(tid, 100_000_000, $0.baseAddress, 256, &info)
            }
            if status == STALLCAP_OK { timestamps.append(info.timestamp_ns) } else { missed += 1 }
            places.append((stallcap_monotonic_ns(), currentCPU()))
            condition.lock()
        }
        condition.unlock()
        stallcap_sample_end()
        done.signal()
    }
}

/// The CPU the calling thread runs on (sched_getcpu, a GNU extension the Glibc module does not export); -1 when
/// unknown.
func currentCPU() -> Int32 {
    typealias GetCPU = @convention(c) () -> Int32
    guard let symbol = getCPUSymbol else { return -1 }
    return unsafeBitCast(symbol, to: GetCPU.self)()
}
nonisolated(unsafe) private let getCPUSymbol = dlsym(nil, "sched_getcpu")
