/// What kind of episode a begin record opens.
public enum EpisodeKind: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    /// The main queue did not answer a ping within the threshold: one turn of the run loop never ended.
    case stall = 1
    /// The main queue kept answering, but the thread that services it stayed busy (it never slept voluntarily)
    /// for the sustained period: a loop that goes across run-loop turns.
    case saturated = 2

    /// `stall` or `saturated`.
    public var description: String { self == .stall ? "stall" : "saturated" }
}

/// An episode began: a stall (the main queue did not answer a ping within the threshold) or a saturated period
/// (it answered, but its thread stayed busy). Stalls and saturated episodes share one numbering.
public struct StallBeginRecord: Sendable, Equatable {
    /// Number of the episode within the capture, from 1.
    public var stallID: UInt32
    /// When the unanswered ping was sent (the stall's start), monotonic nanoseconds.
    public var startNs: UInt64
    /// When the watchdog noticed the stall (start plus the threshold, or a little later).
    public var detectedNs: UInt64
    /// Kernel thread id of the thread that services the watched target (the main queue, or another target's
    /// serial executor), the one being sampled.
    public var threadID: Int32
    /// A stall or a saturated episode (version 1 files hold stalls only).
    public var kind: EpisodeKind
    /// The watched target whose episode this is: ``mainTarget`` for the main queue (every episode of a version 1
    /// or 2 file), else the name the app gave a `StallTarget`.
    public var target: String
    /// The threshold its target was watched with, nanoseconds: a target's own (an event loop's is typically
    /// 10-50 ms), where the process record holds the main queue's. Nil in records written before it (a trailing
    /// field: no new version); readers then take the process record's.
    public var thresholdNs: UInt64?

    /// The name of the main queue's target.
    public static let mainTarget = "main"
    /// The name of Swift's cooperative pool's target (a starvation has one episode per pool thread, all begun at
    /// the same time).
    public static let poolTarget = "pool"

    /// Creates a begin record.
    public init(
        stallID: UInt32, startNs: UInt64, detectedNs: UInt64, threadID: Int32, kind: EpisodeKind = .stall,
        target: String = StallBeginRecord.mainTarget, thresholdNs: UInt64? = nil
    ) {
        (self.stallID, self.startNs, self.detectedNs, self.threadID) = (stallID, startNs, detectedNs, threadID)
        (self.kind, self.target, self.thresholdNs) = (kind, target, thresholdNs)
    }
}

extension StallBeginRecord: RecordCoding {
    static let recordType = CaptureFormat.RecordType.stallBegin
    var captureRecord: CaptureRecord { .stallBegin(self) }

    /// `stallID:u32 startNs:u64 detectedNs:u64 threadID:i32 kind:u8 target:string [thresholdNs:u64]` (version 1
    /// records end before `kind`, version 2 records before `target`; `thresholdNs` is a trailing field of version 3,
    /// absent from records written before it).
    func encode(into out: inout [UInt8]) {
        out.appendLE(stallID, startNs, detectedNs, threadID, kind.rawValue)
        out.appendString(target)
        if let thresholdNs { out.appendLE(thresholdNs) }
    }

    static func decode(_ c: inout ByteCursor) throws -> StallBeginRecord {
        let id = try c.u32(), start = try c.u64(), detected = try c.u64(), thread = try c.i32()
        var kind = EpisodeKind.stall  // version 1 records end here
        if c.remaining > 0 {
            let raw = try c.u8()
            guard let known = EpisodeKind(rawValue: raw) else { throw c.error("unknown episode kind \(raw)") }
            kind = known
        }
        var target = mainTarget  // version 2 records end here
        if c.remaining > 0 {
            target = try c.string()
            guard !target.isEmpty else { throw c.error("empty target name") }
        }
        let threshold = c.remaining >= 8 ? try c.u64() : nil
        return StallBeginRecord(
            stallID: id, startNs: start, detectedNs: detected, threadID: thread, kind: kind, target: target,
            thresholdNs: threshold)
    }
}
