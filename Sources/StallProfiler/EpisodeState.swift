import StallFormat

/// What the watchdog samples, one thing at a time: nothing, a ping late enough to presample, a stall, or a
/// saturated episode. Each case holds what it needs; the transitions are the watchdog loop's
/// (WatchdogLoop+Episodes.swift), on the watchdog thread.
///
/// The cases exclude each other: a stall keeps the presamples (and their sampler) of its ping, a saturated episode
/// drops them and takes no more (its samples already cover the time), and a stall ends the saturated episode in
/// progress.
enum EpisodeState {
    /// Nothing is sampled.
    case idle
    /// A ping has gone unanswered for a while: samples go to a bounded buffer, which a stall keeps and an answer
    /// drops.
    case presampling(Presamples)
    /// A stall is sampled.
    case stall(EpisodeSampler)
    /// A saturated episode is sampled.
    case saturated(EpisodeSampler)

    /// The sampler at work, nil when idle.
    var sampler: EpisodeSampler? {
        switch self {
        case .idle: nil
        case .presampling(let presamples): presamples.sampler
        case .stall(let sampler), .saturated(let sampler): sampler
        }
    }

    /// True when nothing is sampled.
    var isIdle: Bool {
        if case .idle = self { return true }
        return false
    }

    /// The stall's sampler, nil when no stall is in progress.
    var stall: EpisodeSampler? {
        if case .stall(let sampler) = self { return sampler }
        return nil
    }

    /// The presamples, nil when none are being taken.
    var presamples: Presamples? {
        if case .presampling(let presamples) = self { return presamples }
        return nil
    }

    /// The saturated episode's sampler, nil when none is in progress.
    var saturated: EpisodeSampler? {
        if case .saturated(let sampler) = self { return sampler }
        return nil
    }
}

/// The samples taken before a stall is declared, oldest first, and the sampler taking them. At most `capacity`
/// are kept: the oldest goes when it is full.
final class Presamples {
    /// The sampler of the thread servicing the main queue; it samples the stall when one is declared.
    let sampler: EpisodeSampler
    /// The samples kept, oldest first (their episode number is 0 until a stall claims them).
    private(set) var records: [SampleRecord] = []
    /// Most samples kept: a threshold's worth at the sample interval, and a few more.
    let capacity: Int

    /// An empty buffer of `capacity` samples taken by `sampler`.
    init(sampler: EpisodeSampler, capacity: Int) {
        self.sampler = sampler
        self.capacity = capacity
    }

    /// Keeps `record`, dropping the oldest when the buffer is full.
    func keep(_ record: SampleRecord) {
        records.append(record)
        if records.count > capacity {
            records.removeFirst()
            sampler.retractLastSample()  // uncounts the dropped one: the end record counts what was written
        }
    }
}
