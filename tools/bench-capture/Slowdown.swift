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
//   discarded;
// - now and then the host stops or slows the vCPU under the thread, and the guest charges it to the thread's
//   clock (a 5 ms window took 10 ms): blocks with such a window are set aside and counted (Block.hostStall).
// The sampler is not pinned: like the watchdog's thread it runs where the scheduler puts it, sometimes on the main
// thread's CPU, whose work its wake-ups (the pacing, and the hand-off's 1 ms polls while a request waits for its
// tick) then preempt: a real cost of sampling, and the largest part of it here. On this 2-core machine shared with
// builds the sampler stays on the thread's CPU, or off it, for seconds at a time, and the slowdown differs by a
// factor of 2-3 between the two (2026-12-06, thirteen runs at load average 1-5.5: at 100 Hz 0.20-0.37 % on the
// thread's CPU against 0.09-0.18 % apart, at 1 kHz 0.57-0.72 % against 0.09-0.36 %; a sampler that only wakes at
// 1 kHz cost 0.24 % unpinned at load 5, nothing pinned to the other CPU). So each block is also classed by where
// the sampler ran during its on windows, and the two kinds are printed apart: sampler on another CPU, the cost on
// a machine with an idle core; on the thread's CPU, the cost when every core is busy. Pinning would show only one
// of them. `control` runs the sampler's wake-ups without requests, to see that part alone.
import CStallCapture
import Foundation

/// A fixed amount of work at a fixed depth (the stack the handler walks): `chunks` runs of a multiply chain.
@inline(never) func work(depth: Int, chunks: Int) -> UInt64 {
    if depth > 1 { return work(depth: depth - 1, chunks: chunks) &+ UInt64(depth) }
    var x: UInt64 = 0x9E37_79B9_7F4A_7C15
    for _ in 0..<chunks {
        for _ in 0..<2_000 { x = x &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407 }
    }
    return x
}

/// One window's costs for the same work, when it ran and on which CPU (at its start and end); or the sum of
/// several windows.
struct WindowCost {
    var cpuNs = 0.0, wallNs = 0.0, instructions = 0.0
    var spans: [(start: UInt64, end: UInt64)] = []
    var mainCPUs: [Int32] = []
    /// Each window's own CPU time.
    var windowCPUNs: [Double] = []
    static func + (a: WindowCost, b: WindowCost) -> WindowCost {
        WindowCost(cpuNs: a.cpuNs + b.cpuNs, wallNs: a.wallNs + b.wallNs, instructions: a.instructions + b.instructions,
                   spans: a.spans + b.spans, mainCPUs: a.mainCPUs + b.mainCPUs,
                   windowCPUNs: a.windowCPUNs + b.windowCPUNs)
    }

    /// How many of `timestamps` (ascending) fall inside the windows: samples whose handler ran in them.
    func samples(in timestamps: [UInt64]) -> Int {
        spans.reduce(0) { $0 + firstIndex(atLeast: $1.end, timestamps) - firstIndex(atLeast: $1.start, timestamps) }
    }
}

/// Where the sampler ran during a block's on windows, against the main thread's CPU.
enum Placement { case shared, apart, mixed }

/// One measured block: its rate, its two off windows and its two on windows.
struct Block {
    var hz: Int, off: WindowCost, on: WindowCost

    /// Where a window took more than 10 % more CPU than the block's fastest for the same work: 500 µs in a 5 ms
    /// window, ten times what its one to three samples could cost, so not sampling but the host. Here such a
    /// window took up to twice as long with no context switch and as much wall-clock time as CPU time: the vCPU
    /// stopped or slowed under the thread, and the guest charged it to the thread's clock. A few blocks in 2000
    /// have one, as often in an off window as in an on one, and one of them, a contrast of ±10-30 %, widens the
    /// interval as much as a thousand ordinary blocks. Such blocks are set aside, and counted by where their
    /// slow window was (`slowWindowIsOn`), so that a lean to the on windows (a real cost) would show.
    var hostStall: Bool {
        let all = off.windowCPUNs + on.windowCPUNs
        guard let fastest = all.min(), fastest > 0 else { return false }
        return all.contains { $0 > fastest * 1.10 }
    }

    /// True when the block's slowest window is an on window.
    var slowWindowIsOn: Bool { (on.windowCPUNs.max() ?? 0) > (off.windowCPUNs.max() ?? 0) }

    /// Shared when every place the sampler was seen in the on windows (after a request, or woken to pace) is the
    /// main thread's one CPU, apart when none is; mixed when some are, when the main thread moved, or when the
    /// sampler was not seen.
    func placement(_ places: [(ns: UInt64, cpu: Int32)]) -> Placement {
        guard let cpu = on.mainCPUs.first, cpu >= 0, on.mainCPUs.allSatisfy({ $0 == cpu }) else { return .mixed }
        let times = places.map(\.ns)
        var seen = 0, there = 0
        for span in on.spans {
            for i in firstIndex(atLeast: span.start, times)..<firstIndex(atLeast: span.end, times) {
                seen += 1
                if places[i].cpu == cpu { there += 1 }
            }
        }
        return seen == 0 ? .mixed : there == seen ? .shared : there == 0 ? .apart : .mixed
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
/// thread's CPU each, and prints each rate's slowdown (SlowdownReport.swift). `control`: the sampler wakes at each
/// rate but sends no request, so the figures measure the design's own bias and the sampler thread's wake-ups.
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
        let cpu0 = currentCPU(), i0 = counter?.read() ?? 0
        let c0 = ownThreadCPUNs(), t0 = stallcap_monotonic_ns()
        sink &+= work(depth: depth, chunks: chunks)
        let t1 = stallcap_monotonic_ns(), c1 = ownThreadCPUNs()
        let i1 = counter?.read() ?? 0
        return WindowCost(cpuNs: Double(c1 &- c0), wallNs: Double(t1 &- t0), instructions: Double(i1 &- i0),
                          spans: [(t0, t1)], mainCPUs: [cpu0, currentCPU()], windowCPUNs: [Double(c1 &- c0)])
    }
    func switchTo(_ hz: Int) {  // works on, uncounted, until the sampler has acted on the change
        let generation = sampler.set(hz: hz)
        while !sampler.settled(generation) { sink &+= work(depth: 1, chunks: 20) }
    }

    let loadBefore = loadAverage()
    var measured: [Block] = []
    let start = stallcap_monotonic_ns()
    for block in -1..<blocks {  // block -1: discarded
        for hz in [100, 1000] {
            let a1 = window()
            switchTo(hz)
            let b = window() + window()
            switchTo(0)
            let a = a1 + window()
            if block >= 0 { measured.append(Block(hz: hz, off: a, on: b)) }
        }
    }
    let elapsed = Double(stallcap_monotonic_ns() - start) / 1e9
    sampler.stop()

    print(String(format: "busy main thread (%d frames of work), %d blocks per rate of 4 windows of %.1f ms CPU (off, on, "
        + "on, off), %.0f s, load average %@ to %@%@:", depth, blocks, windowMs, elapsed, loadBefore, loadAverage(),
        control ? "; CONTROL: no requests sent" : ""))
    reportSlowdown(measured, sampler: sampler, instructions: counter != nil)
    if counter == nil { line("user instruction counter", "none (\(counterFailure)): CPU time only") }
    if sink == 42 { print("") }  // keeps the work from being optimised away
}
