// How long one sample stops the sampled thread, against the floor of any signal: tgkill to the same thread with a
// handler that only stores one atomic, the sampler spinning on it.
import CStallCapture
import Foundation
import Synchronization

/// Set by the floor handler; reset by the sampler before each signal.
let floorFlag = Atomic<UInt32>(0)

/// The floor's signal: SIGUSR2, with a handler that stores one atomic (same flags and mask as stallprof's).
func installFloorHandler() {
    floorFlag.store(0, ordering: .relaxed)  // initialise the global before any handler can touch it
    var action = sigaction()
    action.__sigaction_handler.sa_sigaction = { _, _, _ in floorFlag.store(1, ordering: .releasing) }
    action.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK
    sigfillset(&action.sa_mask)
    precondition(sigaction(SIGUSR2, &action, nil) == 0, "cannot install the floor handler")
}

/// One method's figures: per-sample stop of the sampled thread, sampler CPU, round trip.
struct StopFigures {
    var stops: [Double] = []  // µs
    var samplerCPU: [Double] = []  // µs
    var roundTrips: [Double] = []  // µs
    var windows: [(UInt64, UInt64)] = []
    var missed = 0
    var depth = 0
    /// Per sample: true when the hand-off ended while the watchdog spun (no futex wait, no wake-up).
    var spun: [Bool] = []
    /// Per sample: the watchdog's pauses (wake-ups) while it waited for the answer.
    var pauses: [Int] = []
    /// Per sample: the handler's own unwinding time (µs), from stallcap_sample_info.
    var unwinds: [Double] = []
}

/// Samples `spinner` as the watchdog's sampler does: a thread whose CPU clock moves is on a CPU; one whose clock
/// stands still is looked up in /proc (in a system call, its stack would be read from memory); then stallcap_sample.
func realSample(_ spinner: GapSpinner, _ frames: inout [UInt], _ figures: inout StopFigures) {
    var info = stallcap_sample_info()
    var before = stallcap_handoff_stats(), after = stallcap_handoff_stats()
    stallcap_handoff_counts(&before)
    let c0 = ownThreadCPUNs()
    let t0 = stallcap_monotonic_ns()
    var state = stallcap_syscall_state()
    let cpu = stallcap_thread_cpu_ns(spinner.tid)
    let asleep = stallcap_thread_cpu_ns(spinner.tid) == cpu
        && stallcap_read_syscall(spinner.tid, &state) == STALLCAP_SYSCALL_IN_CALL
    let status = asleep ? STALLCAP_TIMEOUT
        : frames.withUnsafeMutableBufferPointer { stallcap_sample(spinner.tid, 100_000_000, $0.baseAddress, 256, &info) }
    let t1 = stallcap_monotonic_ns()
    let c1 = ownThreadCPUNs()
    guard status == STALLCAP_OK else {
        figures.missed += 1
        return
    }
    stallcap_handoff_counts(&after)
    figures.spun.append(after.spun > before.spun)
    figures.pauses.append(Int(after.pauses - before.pauses))
    figures.depth = Int(info.frame_count)
    figures.unwinds.append(Double(info.unwind_ns) / 1000)
    figures.windows.append((t0, t1))
    figures.roundTrips.append(Double(t1 - t0) / 1000)
    figures.samplerCPU.append(Double(c1 &- c0) / 1000)
}

/// The floor: signal, spin until the handler stored its atomic.
func floorSample(_ spinner: GapSpinner, _ figures: inout StopFigures) {
    floorFlag.store(0, ordering: .relaxed)
    let c0 = ownThreadCPUNs()
    let t0 = stallcap_monotonic_ns()
    guard let thread = spinner.pthread, pthread_kill(thread, SIGUSR2) == 0 else {
        figures.missed += 1
        return
    }
    var answered = true
    while floorFlag.load(ordering: .acquiring) == 0 {
        let spent = stallcap_monotonic_ns() - t0
        // Spin 50 µs like stallprof, then poll sleeping: a sampler spinning on while the thread waits for a CPU
        // would keep it off this one (the handler runs only when the thread runs).
        if spent > 50_000 { usleep(20) }
        if spent > 100_000_000 {
            answered = false
            break
        }
    }
    let t1 = stallcap_monotonic_ns()
    let c1 = ownThreadCPUNs()
    guard answered else {
        figures.missed += 1
        return
    }
    figures.windows.append((t0, t1))
    figures.roundTrips.append(Double(t1 - t0) / 1000)
    figures.samplerCPU.append(Double(c1 &- c0) / 1000)
}

/// The floor of the delivery stallprof uses: a one-shot timer on the thread's CPU clock sending SIGUSR2 to it
/// (the same kernel path as stallcap_sample's: the signal comes at a tick, on the thread's way back to user code),
/// with the handler storing one atomic; the sampler polls, as stallprof does.
func timerFloorSample(_ spinner: GapSpinner, _ figures: inout StopFigures) {
    floorFlag.store(0, ordering: .relaxed)
    let c0 = ownThreadCPUNs()
    let t0 = stallcap_monotonic_ns()
    guard stallcap_cputimer_fire(spinner.tid, SIGUSR2) == 0 else {
        figures.missed += 1
        return
    }
    while floorFlag.load(ordering: .acquiring) == 0 {
        if stallcap_monotonic_ns() - t0 > 100_000_000 {
            figures.missed += 1
            return
        }
        usleep(1000)
    }
    let t1 = stallcap_monotonic_ns()
    figures.windows.append((t0, t1))
    figures.roundTrips.append(Double(t1 - t0) / 1000)
    figures.samplerCPU.append(Double(ownThreadCPUNs() &- c0) / 1000)
}

/// A window as long as `lengthNs` with no signal at all: its longest gap is what the thread loses anyway (the
/// scheduler tick, other interrupts), the part of a tick-delivered sample's gap that is not the sample's.
func quietWindow(lengthNs: UInt64, _ figures: inout StopFigures) {
    let t0 = stallcap_monotonic_ns()
    usleep(UInt32(lengthNs / 1000))
    figures.windows.append((t0, stallcap_monotonic_ns()))
}

/// Interleaves blocks of real and floor samples, one every millisecond (pipelined ones one every sample interval,
/// PipelinedSampler), on a thread spinning `depth` frames deep.
/// The spinner and the sampler are pinned to CPUs 0 and 1: the watchdog on the other core, as in an app where it
/// does not share the main thread's CPU (on a busy 2-core machine the scheduler otherwise often wakes the sampler
/// on the spinner's CPU, and the sampler's own run time lands in the measured stop).
func benchStop(samples: Int, depth: Int) {
    precondition(stallcap_install(SIGPROF) == 0, "cannot install the handler")
    // As the watchdog does: the handler then also recovers callee-saved registers for a sample's turn.
    _ = stallcap_set_queue_code()
    installFloorHandler()
    let spinner = GapSpinner(depth: depth)
    let pinned = pinToCPU(1)
    if pinned { spinner.cpu = 0 }
    spinner.start()
    var frames = [UInt](repeating: 0, count: 256)
    var real = StopFigures(), floor = StopFigures(), timerFloor = StopFigures(), quiet = StopFigures()
    var piped = StopFigures(), pipeline = PipelinedSampler()
    let block = 100
    var taken = 0
    while taken < samples {
        for _ in 0..<min(block, samples - taken) {
            realSample(spinner, &frames, &real)
            usleep(1000)
        }
        // Pipelined, a wake every sample interval; the request the block's last wake sent is cancelled.
        for _ in 0...min(block, samples - taken) {
            pipeline.wake(spinner, &frames, &piped)
            usleep(UInt32(PipelinedSampler.intervalNs / 1000))
        }
        pipeline.end()
        for _ in 0..<min(block, samples - taken) {
            floorSample(spinner, &floor)
            usleep(1000)
        }
        for _ in 0..<min(block, samples - taken) {
            timerFloorSample(spinner, &timerFloor)
            usleep(1000)
        }
        let length = UInt64(median(real.roundTrips) * 1000)
        for _ in 0..<min(block, samples - taken) {
            quietWindow(lengthNs: max(length, 1000), &quiet)
            usleep(1000)
        }
        taken += block
    }
    let parts = watchdogParts(spinner.tid, count: 500)
    spinner.stop()
    var counts = stallcap_handoff_stats()
    stallcap_handoff_counts(&counts)
    let realGaps = spinner.longestGaps(in: real.windows)
    real.stops = realGaps.compactMap { $0.map { Double($0) / 1000 } }
    let spunStops = zip(realGaps, real.spun).compactMap { $1 ? $0.map { Double($0) / 1000 } : nil }.sorted()
    let waitStops = zip(realGaps, real.spun).compactMap { !$1 ? $0.map { Double($0) / 1000 } : nil }.sorted()
    floor.stops = spinner.longestGaps(in: floor.windows).compactMap { $0.map { Double($0) / 1000 } }
    timerFloor.stops = spinner.longestGaps(in: timerFloor.windows).compactMap { $0.map { Double($0) / 1000 } }
    quiet.stops = spinner.longestGaps(in: quiet.windows).compactMap { $0.map { Double($0) / 1000 } }
    piped.stops = spinner.longestGaps(in: piped.windows).compactMap { $0.map { Double($0) / 1000 } }
    let r = real.stops.sorted(), f = floor.stops.sorted(), tf = timerFloor.stops.sorted()
    let q = quiet.stops.sorted()
    print(String(format: "sample hand-off: %d samples each, one every millisecond or more, thread %d frames deep%@; missed: %d real, %d floor",
                 samples, real.depth, pinned ? ", sampler and thread pinned to CPUs 1 and 0" : "", real.missed, floor.missed))
    print(String(format: "  (stops found: %d real, %d floor; hand-off found done at the first look %llu, after the watchdog paused %llu)",
                 r.count, f.count, counts.spun, counts.slept))
    let rm = percentile(r, 0.5), fm = percentile(f, 0.5), r9 = percentile(r, 0.9), f9 = percentile(f, 0.9)
    line("main-thread stop per sample, stallprof", String(format: "median %6.1f us   p90 %6.1f us", rm, r9))
    line("  of which found done at the first look", String(format: "median %6.1f us   p90 %6.1f us   (%d)", percentile(spunStops, 0.5), percentile(spunStops, 0.9), spunStops.count))
    line("  of which found after the watchdog paused", String(format: "median %6.1f us   p90 %6.1f us   (%d)", percentile(waitStops, 0.5), percentile(waitStops, 0.9), waitStops.count))
    let u = real.unwinds.sorted()
    line("  of which unwinding in the handler", String(format: "median %6.1f us   p90 %6.1f us", percentile(u, 0.5), percentile(u, 0.9)))
    line("tgkill floor (handler storing one atomic)", String(format: "median %6.1f us   p90 %6.1f us", fm, f9))
    line("ratio stallprof / tgkill floor", String(format: "median %6.2fx   p90 %6.2fx", rm / fm, r9 / f9))
    let ps = piped.stops.sorted()
    line("main-thread stop per sample, pipelined", String(format: "median %6.1f us   p90 %6.1f us   (%d)", percentile(ps, 0.5), percentile(ps, 0.9), ps.count))
    let tm = percentile(tf, 0.5), t9 = percentile(tf, 0.9)
    line("timer floor (CPU-clock timer, atomic store)", String(format: "median %6.1f us   p90 %6.1f us   (%d)", tm, t9, tf.count))
    line("ratio stallprof / timer floor", String(format: "median %6.2fx   p90 %6.2fx", rm / tm, r9 / t9))
    line("longest gap, as long a window, no signal", String(format: "median %6.1f us   p90 %6.1f us   (%d)", percentile(q, 0.5), percentile(q, 0.9), q.count))
    let rc = median(real.samplerCPU), fc = median(floor.samplerCPU)
    line("watchdog CPU per sample, stallprof", String(format: "median %6.1f us", rc))
    line("watchdog CPU per sample, floor", String(format: "median %6.1f us   (ratio %.2fx)", fc, rc / fc))
    let pc = median(piped.samplerCPU)
    line("watchdog CPU per sample, pipelined", String(format: "median %6.1f us   (ratio to the floor %.2fx; %d answered, %d missed)", pc, pc / fc, piped.samplerCPU.count, piped.missed))
    line("  pipelined wakes that found no answer yet", String(format: "%d (collected at a later wake)", pipeline.unanswered))
    let pauses = Double(real.pauses.reduce(0, +)) / Double(max(1, real.pauses.count))
    line("  watchdog wake-ups per sample, stallprof", String(format: "mean %6.2f (%llu deadlines)", pauses, counts.deadlines))
    line("  of which: handler still ours? (sigaction)", String(format: "median %6.1f us", parts.sigaction))
    line("  of which: /proc/<tid>/syscall read", String(format: "median %6.1f us", parts.syscall))
    line("  of which: thread CPU clock, from outside", String(format: "median %6.1f us", parts.cpuClock))
    let rt = real.roundTrips.sorted(), ft = floor.roundTrips.sorted(), pt = piped.roundTrips.sorted()
    let tick = Double(stallcap_tick_ns()) / 1000
    line("round trip (request to handler), pipelined", String(format: "median %6.1f us   p90 %6.1f us   max %6.1f us", percentile(pt, 0.5), percentile(pt, 0.9), pt.last ?? 0))
    // The timer fires at the first tick that finds the thread running: the handler is done a tick after the
    // request at most, plus the delivery and the unwinding (100 µs allowed), unless the thread waited for a CPU.
    line("  bound: a tick + 100 us, thread running", String(format: "%6.1f us; %d of %d over it; collected %.0f ms after the request", tick + 100, pt.filter { $0 > tick + 100 }.count, pt.count, Double(PipelinedSampler.intervalNs) / 1e6))
    line("round trip (signal to result), stallprof", String(format: "median %6.1f us   p90 %6.1f us   max %6.1f us", percentile(rt, 0.5), percentile(rt, 0.9), rt.last ?? 0))
    line("round trip, floor", String(format: "median %6.1f us   p90 %6.1f us   (ratio %.2fx)", percentile(ft, 0.5), percentile(ft, 0.9), percentile(rt, 0.5) / percentile(ft, 0.5)))
}

/// The watchdog-side steps of one sample on their own, each `count` times: its CPU per call (median, µs).
func watchdogParts(_ tid: pid_t, count: Int) -> (sigaction: Double, syscall: Double, cpuClock: Double) {
    func cost(_ body: () -> Void) -> Double {
        var values: [Double] = []
        for _ in 0..<count {
            let c0 = ownThreadCPUNs()
            body()
            values.append(Double(ownThreadCPUNs() &- c0) / 1000)
        }
        // Less the cost of reading the clock twice.
        var empty: [Double] = []
        for _ in 0..<count {
            let c0 = ownThreadCPUNs()
            empty.append(Double(ownThreadCPUNs() &- c0) / 1000)
        }
        return max(0, median(values) - median(empty))
    }
    var current = sigaction()
    var state = stallcap_syscall_state()
    return (cost { sigaction(SIGPROF, nil, &current) }, cost { _ = stallcap_read_syscall(tid, &state) },
            cost { _ = stallcap_thread_cpu_ns(tid) })
}
