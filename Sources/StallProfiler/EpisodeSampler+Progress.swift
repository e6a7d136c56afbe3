/// How an episode's sampler tells a thread that waited from one that ran, what its CPU clock read at a sample
/// whose clock was read later, and how much of an episode it ran or waited for a CPU.
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
    /// below `previousNs` (the last sample's) nor above what was read. Between the handler and the read the watchdog
    /// usually takes some microseconds, a tick when its look came before the handler finished.
    static func cpuAtHandler(readNs: UInt64, readAtNs: UInt64, handlerNs: UInt64, previousNs: UInt64?) -> UInt64 {
        let since = readAtNs &- min(readAtNs, handlerNs)
        return max(readNs &- min(readNs, since), min(previousNs ?? 0, readNs))
    }

    /// CPU time and run-queue wait over a window of `measuredNs`, made consistent with it: neither exceeds the
    /// window, and together they do not either. schedstat credits a run-queue wait all at once when it ends, so a
    /// wait that began before the first reading lands inside the window (a short window would read far above
    /// 100 % active); the CPU clock is exact, so the wait is what gets cut to the time left.
    static func activity(cpuNs: UInt64, waitNs: UInt64, measuredNs: UInt64) -> (cpuNs: UInt64, waitNs: UInt64) {
        let cpu = min(cpuNs, measuredNs)
        return (cpu, min(waitNs, measuredNs - cpu))
    }
}
