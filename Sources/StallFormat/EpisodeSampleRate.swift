/// What held an episode's sampling rate below the asked one, as the watchdog judged it (docs/WATCHDOG.md, "The rate
/// a thread is sampled at").
public enum SampleRateLimit: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// Nothing the watchdog could name: the asked rate was kept, or it fell short for another reason (the thread
    /// waited for a CPU, slept through a saturated episode's checks, the watchdog itself waited for one).
    case none = 0
    /// The scheduler tick: the asked interval is shorter than the tick, and most samples came by the capture
    /// signal, which reaches a running thread only at a tick, so at most one sample per tick.
    case tick = 1

    /// `none` or `tick`.
    public var description: String { self == .tick ? "tick" : "none" }
}

/// How fast an episode was sampled, as the watchdog measured it: the trailing fields of the stallEnd record
/// (docs/FORMAT.md). Absent from captures written before it (``StallEndRecord/sampleRate`` nil); ``Stall``'s
/// `samplesPerSecond` then computes the rate from older fields.
public struct EpisodeSampleRate: Sendable, Equatable {
    /// Samples written per 1,000 seconds of the watched span (the end record's `sampleCount` over its
    /// `measuredNs`: from the first reading of the thread to the last, without time the process was stopped),
    /// rounded: the rate per second in thousandths.
    public var samplesPerKilosecond: UInt32
    /// The scheduler tick the watchdog measured from the capture signal's arrivals, nanoseconds; 0 when it could
    /// not tell (too few arrivals of back-to-back requests, or arrivals that fit no tick).
    public var tickNs: UInt32
    /// What held the rate below the asked one.
    public var limit: SampleRateLimit

    /// Creates a sample rate.
    public init(samplesPerKilosecond: UInt32, tickNs: UInt32, limit: SampleRateLimit) {
        (self.samplesPerKilosecond, self.tickNs, self.limit) = (samplesPerKilosecond, tickNs, limit)
    }

    /// Samples per second.
    public var samplesPerSecond: Double { Double(samplesPerKilosecond) / 1000 }

    /// `count` samples over `ns` nanoseconds, per 1,000 seconds, rounded and capped at `UInt32.max`; 0 when no
    /// time passed.
    public static func perKilosecond(count: UInt64, overNs ns: UInt64) -> UInt32 {
        guard ns > 0 else { return 0 }
        return UInt32(clamping: UInt64(min((Double(count) * 1e12 / Double(ns)).rounded(), 4e9)))
    }

    /// `samplesPerKilosecond:u32 tickNs:u32 limit:u8`, appended to a stallEnd payload.
    func encode(into out: inout [UInt8]) { out.appendLE(samplesPerKilosecond, tickNs, limit.rawValue) }

    /// The fields when `c` holds them (9 bytes or more left), else nil: an older writer ended the record before.
    /// A limit this reader does not know reads as ``SampleRateLimit/none``.
    static func decodeIfPresent(_ c: inout ByteCursor) throws -> EpisodeSampleRate? {
        guard c.remaining >= 9 else { return nil }
        let rate = try c.u32(), tick = try c.u32(), limit = try c.u8()
        return EpisodeSampleRate(samplesPerKilosecond: rate, tickNs: tick, limit: SampleRateLimit(rawValue: limit) ?? .none)
    }
}

extension Stall {
    /// Samples per second the episode got: the watchdog's figure (``StallEndRecord/sampleRate``); for a capture
    /// written before it, the same figure from the end record's `sampleCount` over its `measuredNs`; for an
    /// unfinished episode, from its samples (one less than their count over the time from the first to the
    /// last). Nil when there is no span to divide by (an unfinished episode with fewer than two samples).
    public var samplesPerSecond: Double? {
        if let rate = end?.sampleRate { return rate.samplesPerSecond }
        if let end, end.measuredNs > 0 { return Double(end.sampleCount) * 1e9 / Double(end.measuredNs) }
        guard end == nil, let first = samples.first, let last = samples.last, last.timestampNs > first.timestampNs
        else { return nil }
        return Double(samples.count - 1) * 1e9 / Double(last.timestampNs - first.timestampNs)
    }
}
