/// How an episode's sampler tells a thread that waited from one that ran, and what its CPU clock read at a sample
/// whose clock was read later.
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
}
