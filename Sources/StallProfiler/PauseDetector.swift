import CStallCapture

/// Finds time the whole process spent stopped (SIGSTOP, a frozen cgroup, a debugger) during an episode, so that
/// it counts neither in the episode's duration nor against its busy share: a busy stall paused for 3 s is still
/// busy.
///
/// Nothing in the process runs while it is stopped, the watchdog thread included, and no clock says so directly.
/// The watchdog thread's own round trip does: between two steps of the loop, the monotonic clock advances by the
/// sleep it asked for, plus its CPU time, plus its run-queue wait (a loaded machine), plus short waits (a sample
/// waits for the handler at most the sample timeout). What is left over beyond a tolerance is time the thread
/// could not run although it was not waiting for a CPU: the process was stopped.
struct PauseDetector {
    /// The watchdog thread.
    let threadID: Int32
    /// Unexplained time below this is noise (timer slack, a sample's wait, a slow write), not a pause.
    let toleranceNs: UInt64
    private var mark: (timeNs: UInt64, cpuNs: UInt64, waitNs: UInt64)? = nil
    /// The sleep the loop asked for after the last mark.
    private var sleepNs: UInt64 = 0

    init(threadID: Int32, sampleTimeoutNs: Int64, ownerSampleTimeoutNs: Int64) {
        self.threadID = threadID
        // One step can wait for two handlers: the stalled thread's and, once per stall, a running lock owner's.
        toleranceNs = 50_000_000 + UInt64(max(0, sampleTimeoutNs)) + UInt64(max(0, ownerSampleTimeoutNs))
    }

    /// The loop is about to sleep `ns`.
    mutating func willSleep(_ ns: UInt64) { sleepNs = ns }

    /// Called at each step of the loop: the pause since the previous call, 0 when none was found or `watching`
    /// is false (no episode in progress: the reading is skipped).
    mutating func step(watching: Bool) -> UInt64 {
        guard watching else {
            mark = nil
            return 0
        }
        var run: UInt64 = 0, wait: UInt64 = 0
        let cpu = stallcap_thread_cpu_ns(threadID)
        guard cpu >= 0, stallcap_thread_schedstat(threadID, &run, &wait) == 0 else {
            mark = nil
            return 0
        }
        let now = (timeNs: stallcap_monotonic_ns(), cpuNs: UInt64(cpu), waitNs: wait)
        defer {
            mark = now
            sleepNs = 0
        }
        guard let last = mark else { return 0 }
        return Self.unexplained(
            elapsedNs: now.timeNs &- last.timeNs, sleptNs: sleepNs, cpuNs: now.cpuNs &- min(last.cpuNs, now.cpuNs),
            waitNs: now.waitNs &- min(last.waitNs, now.waitNs), toleranceNs: toleranceNs)
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
