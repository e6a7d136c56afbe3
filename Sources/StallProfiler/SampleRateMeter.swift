import StallFormat

/// The rate each episode was sampled at, and whether the scheduler tick held it below the asked one
/// (docs/WATCHDOG.md, "The rate a thread is sampled at"). Used on the watchdog thread only: the loop tells it of
/// every sample that arrives and every sample it writes, and asks it for the rate when an episode ends.
final class SampleRateMeter {
    /// The tick, from the signal's arrivals of every episode so far (the kernel's tick does not change).
    private var ticks = TickMeter()
    /// Samples the signal took, by episode, among those written.
    private var signalled: [UInt32: Int] = [:]

    /// A sample of thread `threadID` was requested at `requestedNs` and came back at `endedNs` as `record` (nil:
    /// missed or skipped; written or not: a signal that arrived is an arrival).
    func requested(threadID: Int32, requestedNs: UInt64, endedNs: UInt64, record: SampleRecord?) {
        ticks.requested(
            threadID: threadID, requestedNs: requestedNs, endedNs: endedNs,
            arrivedNs: record.flatMap { $0.flags.isSignalled ? $0.timestampNs : nil })
    }

    /// `record` was written into the capture as a sample of its episode.
    func wrote(_ record: SampleRecord) {
        if record.flags.isSignalled { signalled[record.stallID, default: 0] += 1 }
    }

    /// The rate of the episode `end` closes, whose samples were asked `askedIntervalNs` apart; forgets the
    /// episode's count.
    func rate(of end: StallEndRecord, askedIntervalNs: UInt64) -> EpisodeSampleRate {
        let signalledCount = signalled.removeValue(forKey: end.stallID) ?? 0
        return Self.rate(
            sampleCount: UInt64(end.sampleCount), signalled: UInt64(signalledCount), measuredNs: end.measuredNs,
            askedIntervalNs: askedIntervalNs, tickNs: ticks.tickNs)
    }

    /// The rule: `sampleCount` samples over the watched `measuredNs` (the end record's figures), and the limit is
    /// the tick when
    /// - the tick is known and longer than the asked interval,
    /// - at least half the samples came by the signal (a running thread: it can be signalled only at a tick, so at
    ///   most once per tick; a thread asleep in a system call is read from memory, and one that made no progress
    ///   is sampled again from its last stack, both at the asked rate),
    /// - the rate fell short of the asked one,
    /// - and it is no more than one per tick of the span allows (two more for its ends): with samples of a thread
    ///   that waited for a CPU between them, a rate above the tick's is not the tick's.
    static func rate(
        sampleCount: UInt64, signalled: UInt64, measuredNs: UInt64, askedIntervalNs: UInt64, tickNs: UInt64?
    ) -> EpisodeSampleRate {
        let perKilosecond = EpisodeSampleRate.perKilosecond(count: sampleCount, overNs: measuredNs)
        let askedPerKilosecond = EpisodeSampleRate.perKilosecond(count: 1, overNs: askedIntervalNs)
        let limited = tickNs.map { askedIntervalNs < $0 && sampleCount <= measuredNs / $0 + 2 } == true
            && sampleCount > 0 && signalled * 2 >= sampleCount && perKilosecond < askedPerKilosecond
        return EpisodeSampleRate(
            samplesPerKilosecond: perKilosecond, tickNs: UInt32(clamping: tickNs ?? 0), limit: limited ? .tick : .none)
    }
}
