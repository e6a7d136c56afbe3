import CStallCapture

/// How an episode's sampler reads the thread's clocks from outside, tells a thread that waited from one that ran,
/// what its CPU clock read at a sample whose clock was read later, and how much of an episode it ran or waited
/// for a CPU.
extension EpisodeSampler {
    /// True when a thread that made `progressNs` of CPU progress over the `sinceNs` since its last sample waited
    /// (asleep, or for a CPU): less progress than `floorNs`, and less than half the span. A thread that ran most of
    /// a short span is running, however little CPU that was: sampled again right after an answer collected late
    /// (the signal comes at a tick, and the next sample is already due), a busy thread has run only the
    /// microseconds since, and was recorded as waiting for a CPU with its last stack repeated.
    static func waited(progressNs: UInt64, sinceNs: UInt64, floorNs: UInt64) -> Bool {
        progressNs < floorNs && progressNs < sinceNs / 2
    }

    /// The thread's CPU clock when the handler ran at `handlerNs`, from `readNs` read at `readAtNs`: less the time
    /// since (the thread ran all of it, as a thread that just took a signal at a tick most often does), never
    /// below `previousNs` (the last sample's) or `requestNs` (the clock before the request was sent: the handler
    /// came after) nor above what was read. Both are lower bounds, and the tighter one is kept. Waiting for the
    /// answer, the watchdog reads the clock some microseconds after the handler (a tick when its look came before
    /// the handler finished); pipelined, about an interval after, in which a thread on a loaded machine may have
    /// run a fraction of the time: then the clock before the request bounds it within the tick the signal waited
    /// for.
    static func cpuAtHandler(
        readNs: UInt64, readAtNs: UInt64, handlerNs: UInt64, previousNs: UInt64?, requestNs: UInt64? = nil
    ) -> UInt64 {
        let since = readAtNs &- min(readAtNs, handlerNs)
        let floor = max(previousNs ?? 0, requestNs ?? 0)
        return max(readNs &- min(readNs, since), min(floor, readNs))
    }

    /// The run-queue wait a signalled sample records, from `readNs` read at collection (pipelined, up to an interval
    /// after the stack at `stackNs`, so it may hold a wait that ended after the stack): at most the `previous`
    /// sample's wait plus the time between the two that the thread did not run (`cpuAtStackNs` less the previous
    /// clock). What is cut is not lost: the next sample's reading holds it, and it counts there, where it fell.
    /// Unbounded, CPU plus wait between two samples came to 5.4 times the time between them at load 11.
    static func waitAtStack(readNs: UInt64, stackNs: UInt64, cpuAtStackNs: UInt64, previous: Reading?) -> UInt64 {
        guard let previous, stackNs >= previous.timeNs else { return readNs }
        let between = stackNs - previous.timeNs
        let ran = cpuAtStackNs &- min(previous.cpuNs, cpuAtStackNs)
        return min(readNs, previous.waitNs &+ (between - min(between, ran)))
    }

    /// CPU time and run-queue wait over a window of `measuredNs`, made consistent with it: neither exceeds the
    /// window, and together they do not either. schedstat credits a run-queue wait all at once when it ends, so a
    /// wait that began before the first reading lands inside the window (a short window would read far above
    /// 100 % active); the CPU clock is exact, so the wait is what gets cut to the time left.
    static func activity(cpuNs: UInt64, waitNs: UInt64, measuredNs: UInt64) -> (cpuNs: UInt64, waitNs: UInt64) {
        let cpu = min(cpuNs, measuredNs)
        return (cpu, min(waitNs, measuredNs - cpu))
    }

    /// Reads the thread's CPU time and run-queue wait, kept as the episode's last reading.
    @discardableResult
    func read() -> Reading? { clocks().map { noted(Reading(timeNs: $0, cpuNs: $1, waitNs: wait())) } }

    /// The time and the thread's CPU clock, without the run-queue wait (a /proc read). Nil when it is gone.
    func clocks() -> (timeNs: UInt64, cpuNs: UInt64)? {
        let cpu = stallcap_thread_cpu_ns(threadID)
        return cpu < 0 ? nil : (stallcap_monotonic_ns(), UInt64(cpu))
    }

    /// The thread's run-queue wait from schedstat. An unreadable schedstat keeps the last wait read: a 0 between
    /// real values would turn the thread's whole lifetime of run-queue wait into this stall's.
    func wait() -> UInt64 {
        var run: UInt64 = 0, wait: UInt64 = 0
        return stallcap_thread_schedstat(threadID, &run, &wait) == 0 ? wait : last?.waitNs ?? 0
    }

    /// Keeps `reading` as the last one (and the first, when there was none): the episode's window.
    func noted(_ reading: Reading) -> Reading {
        (first, last) = (first ?? reading, reading)
        return reading
    }
}
