import CStallCapture

/// Finds time the whole process spent stopped (SIGSTOP, a frozen cgroup, a debugger) while the watchdog watched
/// (an episode in progress, or a ping outstanding), so that it counts neither in an episode's duration nor against
/// its busy share (a busy stall paused for 3 s is still busy), and so that a ping left outstanding across a stop is
/// not taken for a stall.
///
/// Nothing in the process runs while it is stopped, the watchdog thread included, and no clock says so directly.
/// The watchdog thread's own round trip does: between two steps of the loop, the monotonic clock advances by the
/// sleep it asked for, plus its CPU time, plus its run-queue wait (a loaded machine), plus short waits (a sample
/// waits for the handler at most the sample timeout). What is left over beyond a tolerance is time the thread
/// could not run although it was not waiting for a CPU: the process was stopped. Time spent waiting for a CPU is
/// never a pause: on a loaded machine the watchdog can wait longer than a threshold between two steps.
///
/// Cheap: the run-queue wait comes from `/proc` (schedstat), read only when a step took more than 1 ms beyond its
/// sleep and CPU time (so it may have waited or been stopped), and at least once a second while watching; the
/// other steps read two clocks.
struct PauseDetector {
    /// The watchdog thread.
    let threadID: Int32
    /// Unexplained time below this is noise (timer slack, a sample's wait, a slow write), not a pause.
    let toleranceNs: UInt64
    /// A step that took at most this much beyond its sleep and CPU time has at most this much run-queue wait and
    /// is not examined: schedstat is not read.
    static let quietSlackNs: UInt64 = 1_000_000
    /// The wait baseline is read again at least this often while watching: the waits of unexamined steps since it
    /// (at most ``quietSlackNs`` each) are counted against the next examined one, an error kept small this way.
    static let baselineAgeNs: UInt64 = 1_000_000_000

    /// The monotonic time and the thread's CPU clock at the last step (or mark).
    private var mark: (timeNs: UInt64, cpuNs: UInt64)? = nil
    /// The thread's run-queue wait and when it was read: the baseline of the next examined step.
    private var baseline: (timeNs: UInt64, waitNs: UInt64)? = nil
    /// The sleep the loop asked for after the mark.
    private var sleepNs: UInt64 = 0

    /// A detector for the watchdog thread `threadID`, whose waits for handlers `timing` bounds.
    init(threadID: Int32, timing: WatchdogTiming) {
        self.threadID = threadID
        // One step can wait for two handlers: the stalled thread's and, once per stall, a running lock owner's; and
        // take a thread snapshot (its signalled samples wait within its budget).
        toleranceNs = 50_000_000 + UInt64(max(0, timing.sampleTimeoutNs))
            + UInt64(max(0, timing.ownerSampleTimeoutNs)) + BlockedOnProbe.budgetNs
    }

    /// The loop is about to sleep `ns`.
    mutating func willSleep(_ ns: UInt64) { sleepNs = ns }

    /// At the end of a step after which the watchdog watches (a ping is outstanding, an episode in progress):
    /// marks now when nothing is marked, so that the next step is judged from here.
    mutating func markIfUnmarked() {
        guard mark == nil else { return }
        let cpu = stallcap_thread_cpu_ns(threadID)
        guard cpu >= 0, let wait = readWait() else { return }
        let now = stallcap_monotonic_ns()
        mark = (now, UInt64(cpu))
        baseline = (now, wait)
    }

    /// Called at each step of the loop: the pause since the previous step (or mark), 0 when none was found or
    /// `watching` is false (the watchdog watched nothing since: its sleep may have been a deep one of unknown
    /// length, and nothing is read).
    mutating func step(watching: Bool) -> UInt64 {
        defer { sleepNs = 0 }
        guard watching else {
            mark = nil
            baseline = nil
            return 0
        }
        let cpuNow = stallcap_thread_cpu_ns(threadID)
        guard cpuNow >= 0 else {
            mark = nil
            return 0
        }
        let now = stallcap_monotonic_ns(), cpu = UInt64(cpuNow)
        defer { mark = (now, cpu) }
        guard let last = mark else {
            baseline = readWait().map { (now, $0) }
            return 0
        }
        let elapsed = now &- min(last.timeNs, now), ran = cpu &- min(last.cpuNs, cpu)
        let beyond = elapsed &- min(elapsed, sleepNs &+ ran)
        let stale = baseline.map { now &- $0.timeNs >= Self.baselineAgeNs } ?? true
        guard beyond > Self.quietSlackNs || stale else { return 0 }
        let wait = readWait()
        defer { baseline = wait.map { (now, $0) } }
        guard let wait, let base = baseline else { return 0 }
        return Self.unexplained(
            elapsedNs: elapsed, sleptNs: sleepNs, cpuNs: ran, waitNs: wait &- min(base.waitNs, wait),
            toleranceNs: toleranceNs)
    }

    /// The thread's total run-queue wait (schedstat), nil when unreadable.
    private func readWait() -> UInt64? {
        var run: UInt64 = 0, wait: UInt64 = 0
        return stallcap_thread_schedstat(threadID, &run, &wait) == 0 ? wait : nil
    }

    /// Elapsed time not explained by the requested sleep, CPU time and run-queue wait, when it exceeds the
    /// tolerance; else 0.
    static func unexplained(elapsedNs: UInt64, sleptNs: UInt64, cpuNs: UInt64, waitNs: UInt64, toleranceNs: UInt64)
        -> UInt64
    {
        let explained = sleptNs &+ cpuNs &+ waitNs
        guard elapsedNs > explained, elapsedNs - explained > toleranceNs else { return 0 }
        return elapsedNs - explained
    }
}
