/// What the stalled thread was doing.
public enum StallState: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// It burned CPU (a loop, heavy work).
    case busy = 1
    /// It waited (a lock, I/O, sleep) with little CPU.
    case blocked = 2

    /// The share of the stall the thread spent running or ready to run (on a CPU or waiting in a run queue for
    /// one) at or above which it counts as busy. Counting run-queue time keeps a spinning thread busy on a loaded
    /// machine, where it gets only part of a core.
    public static let busyActiveRatio = 0.5

    /// Classifies a stall from its active ratio: (CPU time + run-queue wait) / wall time.
    public static func classify(activeRatio: Double) -> StallState {
        activeRatio >= busyActiveRatio ? .busy : .blocked
    }

    /// `busy` or `blocked`.
    public var description: String { self == .busy ? "busy" : "blocked" }
}

/// A stall ended: the main queue answered again.
public struct StallEndRecord: Sendable, Equatable {
    /// The stall that ended.
    public var stallID: UInt32
    /// When the main queue answered, monotonic nanoseconds.
    public var endNs: UInt64
    /// Thread CPU time consumed between the first and the last CPU reading of the stall, nanoseconds.
    public var cpuNs: UInt64
    /// Time the thread spent waiting in a run queue over the same span, nanoseconds (0 when unknown).
    public var runQueueNs: UInt64
    /// Wall time between those two readings, nanoseconds (the denominator of the CPU ratio).
    public var measuredNs: UInt64
    /// The classification.
    public var state: StallState
    /// Samples written for this stall (repeated ones included).
    public var sampleCount: UInt32
    /// Samples that could not be taken (the thread did not answer the signal in time).
    public var missedCount: UInt32
    /// Time the whole process was stopped (SIGSTOP, a frozen cgroup) during the episode, nanoseconds; not part
    /// of the episode's duration nor of `measuredNs`. Written after `missedCount`; 0 when absent (older writers).
    public var pausedNs: UInt64
    /// Run-queue wait of the thread over the stretches in which samples were missed (from the last sample taken
    /// before a miss to the next one taken, or to the episode's end): the wait for a CPU that cost those samples,
    /// nanoseconds. Written after `pausedNs`; nil when absent (older writers).
    public var missedRunQueueNs: UInt64?
    /// The rate the episode was sampled at and what held it below the asked one, as the watchdog measured it.
    /// Written after `missedRunQueueNs` (a record with a rate carries that field, 0 when it is nil); nil when absent
    /// (older writers).
    public var sampleRate: EpisodeSampleRate?

    /// Creates a stall-end record.
    public init(
        stallID: UInt32, endNs: UInt64, cpuNs: UInt64, runQueueNs: UInt64 = 0, measuredNs: UInt64, state: StallState,
        sampleCount: UInt32, missedCount: UInt32, pausedNs: UInt64 = 0, missedRunQueueNs: UInt64? = nil,
        sampleRate: EpisodeSampleRate? = nil
    ) {
        (self.pausedNs, self.missedRunQueueNs, self.stallID, self.endNs) = (pausedNs, missedRunQueueNs, stallID, endNs)
        self.sampleRate = sampleRate
        (self.cpuNs, self.runQueueNs, self.measuredNs, self.state) = (cpuNs, runQueueNs, measuredNs, state)
        (self.sampleCount, self.missedCount) = (sampleCount, missedCount)
    }
}

extension StallEndRecord: RecordCoding {
    static let recordType = CaptureFormat.RecordType.stallEnd
    var captureRecord: CaptureRecord { .stallEnd(self) }

    /// `stallID:u32 endNs:u64 cpuNs:u64 runQueueNs:u64 measuredNs:u64 state:u8 sampleCount:u32 missedCount:u32
    /// pausedNs:u64 missedRunQueueNs:u64 samplesPerKilosecond:u32 tickNs:u32 rateLimit:u8` (older files end after
    /// `missedCount`, after `pausedNs` or after `missedRunQueueNs`; a nil `missedRunQueueNs` is not written unless a
    /// rate follows, and then as 0; a nil rate is not written).
    func encode(into out: inout [UInt8]) {
        out.appendLE(stallID, endNs, cpuNs, runQueueNs, measuredNs, state.rawValue, sampleCount, missedCount, pausedNs)
        if missedRunQueueNs != nil || sampleRate != nil { out.appendLE(missedRunQueueNs ?? 0) }
        sampleRate?.encode(into: &out)
    }

    static func decode(_ c: inout ByteCursor) throws -> StallEndRecord {
        let id = try c.u32(), end = try c.u64(), cpu = try c.u64(), wait = try c.u64(), measured = try c.u64()
        let stateByte = try c.u8()
        guard let state = StallState(rawValue: stateByte) else { throw c.error("unknown stall state \(stateByte)") }
        let counts = (samples: try c.u32(), missed: try c.u32())
        let paused = c.remaining >= 8 ? try c.u64() : 0
        return StallEndRecord(
            stallID: id, endNs: end, cpuNs: cpu, runQueueNs: wait, measuredNs: measured, state: state,
            sampleCount: counts.samples, missedCount: counts.missed, pausedNs: paused,
            missedRunQueueNs: c.remaining >= 8 ? try c.u64() : nil, sampleRate: try EpisodeSampleRate.decodeIfPresent(&c))
    }
}
