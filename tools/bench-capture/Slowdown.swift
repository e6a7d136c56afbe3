// How much a busy main thread slows down while it is sampled: the CPU time a fixed amount of work takes with and
// without sampling, in many short interleaved blocks of windows (off, on, on, off), with a 95 % confidence
// interval of the mean (PairedStatistics.swift says why this statistic).
//
// What makes a window noisy, and what the design does about it:
// - the host's clock frequency, steal and a sibling hyperthread's load drift over tens of milliseconds: windows
//   are short (5 ms of CPU by default) and each contrast compares adjacent ones, in ABBA order;
// - other processes preempt the thread: cost is the thread's own CPU time (the handler, the signal's kernel work
//   and the timer's expiry run on its clock; another process's time does not), and the work per window is fixed,
//   so a preempted window is not a shorter one;
// - the switch: a request still outstanding when sampling stops would land in the next off window, and a sampler
//   just woken is not yet pacing. Between an off and an on window the main thread keeps working, uncounted, until
//   the sampler has acknowledged the change (its last request answered or cancelled). A sample counts in the
//   window its handler ran in (its timestamp), so its cost and its count always fall in the same window;
// - the first windows pay for page faults and cold caches: a warm-up of about 0.3 s and one block of each rate are
//   discarded.
// The sampler is not pinned: like the watchdog's thread it runs where the scheduler puts it, sometimes on the main
// thread's CPU, whose work its wake-ups (the pacing, and the hand-off's 1 ms polls while a request waits for its
// tick) then preempt: a real cost of sampling. Measured here (2026-12-06, load average 4-6), a sampler that only
// wakes at 1 kHz cost the thread 0.24 % unpinned and nothing pinned to the other CPU, and pinning both threads
// halved the 1 kHz slowdown (0.48 % to 0.25 %): pinning would hide that part, and with builds on the other CPU it
// would make the sampler wait. `control` runs the sampler's wake-ups without requests, to see that part alone.
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
            condition.lock()
        }
        condition.unlock()
        stallcap_sample_end()
        done.signal()
    }
}

/// A fixed amount of work at a fixed depth (the stack the handler walks): `chunks` runs of a multiply chain.
@inline(never) func work(depth: Int, chunks: Int) -> UInt64 {
    if depth > 1 { return work(depth: depth - 1, chunks: chunks) &+ UInt64(depth) }
    var x: UInt64 = 0x9E37_79B9_7F4A_7C15
    for _ in 0..<chunks {
        for _ in 0..<2_000 { x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 }
    }
    return x
}

/// One window's costs for the same work, and when it ran; or the sum of several windows.
struct WindowCost {
    var cpuNs = 0.0, wallNs = 0.0, instructions = 0.0
    var spans: [(start: UInt64, end: UInt64)] = []
    static func + (a: WindowCost, b: WindowCost) -> WindowCost {
        WindowCost(cpuNs: a.cpuNs + b.cpuNs, wallNs: a.wallNs + b.wallNs, instructions: a.instructions + b.instructions,
                   spans: a.spans + b.spans)
    }

    /// How many of `timestamps` (ascending) fall inside the windows: samples whose handler ran in them.
    func samples(in timestamps: [UInt64]) -> Int {
        spans.reduce(0) { $0 + firstIndex(atLeast: $1.end, timestamps) - firstIndex(atLeast: $1.start, timestamps) }
    }
}

/// Index of the first element of `sorted` not below `value` (binary search).
func firstIndex(atLeast value: UInt64, _ sorted: [UInt64]) -> Int {
    var low = 0, high = sorted.count
    while low < high {
        let mid = (low + high) / 2
        if sorted[mid] < value { low = mid + 1 } else { high = mid }
    }
    return low
}

/// Runs `blocks` off/on/on/off blocks per rate (100 Hz and 1 kHz, alternating) of windows of `windowMs` of the main
/// thread's CPU each, and prints each rate's slowdown: its mean with a 95 % confidence interval, the median, and
/// whether the interval settles the 0.1 % goal. `control`: the sampler wakes at each rate but sends no request, so
/// the figures measure the design's own bias and the sampler thread's wake-ups (both should be near 0).
func benchSlowdown(blocks: Int, windowMs: Double, depth: Int, control: Bool) {
    precondition(stallcap_install(SIGPROF) == 0, "cannot install the handler")
    stallcap_warm_thread()
    let tid = stallcap_gettid()
    var counterFailure = ""
    let counter = InstructionCounter(failure: &counterFailure)
    let sampler = SwitchedSampler(tid: tid, requests: !control)
    var sink: UInt64 = 0

    // Warm-up, which also sizes a window: chunks per millisecond of this thread's CPU.
    let w0 = ownThreadCPUNs()
    sink &+= work(depth: depth, chunks: 100_000)
    let chunksPerMs = 100_000 / (Double(ownThreadCPUNs() &- w0) / 1e6)
    let chunks = max(1, Int(chunksPerMs * windowMs))

    func window() -> WindowCost {
        let i0 = counter?.read() ?? 0
        let c0 = ownThreadCPUNs(), t0 = stallcap_monotonic_ns()
        sink &+= work(depth: depth, chunks: chunks)
        let t1 = stallcap_monotonic_ns(), c1 = ownThreadCPUNs()
        let i1 = counter?.read() ?? 0
        return WindowCost(cpuNs: Double(c1 &- c0), wallNs: Double(t1 &- t0), instructions: Double(i1 &- i0),
                          spans: [(t0, t1)])
    }
    func switchTo(_ hz: Int) {  // works on, uncounted, until the sampler has acted on the change
        let generation = sampler.set(hz: hz)
        while !sampler.settled(generation) { sink &+= work(depth: 1, chunks: 20) }
    }

    let loadBefore = loadAverage()
    let rates = [100, 1000]
    var measured: [(hz: Int, off: WindowCost, on: WindowCost)] = []
    let start = stallcap_monotonic_ns()
    for block in -1..<blocks {  // block -1: discarded
        for hz in rates {
            let a1 = window()
            switchTo(hz)
            let b = window() + window()
            switchTo(0)
            let a = a1 + window()
            if block >= 0 { measured.append((hz, a, b)) }
        }
    }
    let elapsed = Double(stallcap_monotonic_ns() - start) / 1e9
    sampler.stop()

    print(String(format: "busy main thread (%d frames of work), %d blocks per rate of 4 windows of %.1f ms CPU (off, on, "
        + "on, off), %.0f s, load average %@ to %@%@:", depth, blocks, windowMs, elapsed, loadBefore, loadAverage(),
        control ? "; CONTROL: no requests sent" : ""))
    let stray = measured.reduce(0) { $0 + $1.off.samples(in: sampler.timestamps) }
    for hz in rates {
        var cpu = PairedContrasts(), wall = PairedContrasts(), instructions = PairedContrasts()
        var samples = 0, onCPUNs = 0.0
        for block in measured where block.hz == hz {
            let n = block.on.samples(in: sampler.timestamps)
            cpu.add(off: block.off.cpuNs, on: block.on.cpuNs, rate: Double(n) / (block.on.cpuNs / 1e9))
            wall.add(off: block.off.wallNs, on: block.on.wallNs)
            if counter != nil { instructions.add(off: block.off.instructions, on: block.on.instructions) }
            samples += n
            onCPUNs += block.on.cpuNs
        }
        // The signal waits for a scheduler tick that finds the thread running: asked for at 1 kHz, a thread gets
        // at most the kernel's HZ samples a second (250 here), fewer when it shares its CPU. That row is the
        // slowdown at the rate achieved; the 100 Hz one is scaled to exactly 100 samples a second of CPU.
        let rate = Double(samples) / (onCPUNs / 1e9)
        let figure = hz == 100 ? cpu.scaled(to: 100) : cpu.interval
        line(hz == 100 ? "slowdown at 100 samples/s, per CPU second" : "slowdown asked at 1 kHz, per CPU second",
             figure.summary)
        line("", figure.verdict(goal: 0.1))
        line("", String(format: "%d samples in the on windows, %.0f a second of CPU; blocks' sd %.2f %%, lag-1 "
            + "autocorrelation %+.2f", samples, rate, cpu.standardDeviation, cpu.lag1))
        if hz == 100 { line("  as measured (asked 100 Hz)", cpu.interval.summary) }
        // Per wall-clock second the thread also loses what other processes and the sampler take from its CPU: on a
        // shared machine mostly preemption by other builds, heavy-tailed, so this interval is wide and says little.
        line("  per wall-clock second", wall.interval.summary)
        if counter != nil { line("  user instructions per unit of work", instructions.interval.summary) }
    }
    if counter == nil { line("user instruction counter", "none (\(counterFailure)): CPU time only") }
    if sampler.missed > 0 { line("sample requests not answered in time", "\(sampler.missed)") }
    if stray > 0 { line("samples in off windows (should be none)", "\(stray)") }
    if sink == 42 { print("") }  // keeps the work from being optimised away
}
