/// Records the writer could not write and dropped: the file did not accept writes (disk full, file size limit)
/// and its pending buffer was full. Written once the file accepts writes again.
public struct DroppedRecord: Sendable, Equatable {
    /// Sample records dropped.
    public var sampleCount: UInt64
    /// Records of other types dropped (begin, end, image... records past the buffer's hard limit).
    public var otherCount: UInt64
    /// When the first of them was dropped, monotonic nanoseconds.
    public var firstNs: UInt64
    /// When the last of them was dropped, monotonic nanoseconds.
    public var lastNs: UInt64

    /// Creates a dropped record.
    public init(sampleCount: UInt64, otherCount: UInt64, firstNs: UInt64, lastNs: UInt64) {
        (self.sampleCount, self.otherCount, self.firstNs, self.lastNs) = (sampleCount, otherCount, firstNs, lastNs)
    }
}

extension DroppedRecord: RecordCoding {
    static let recordType = CaptureFormat.RecordType.dropped
    var captureRecord: CaptureRecord { .dropped(self) }

    /// `sampleCount:u64 otherCount:u64 firstNs:u64 lastNs:u64`.
    func encode(into out: inout [UInt8]) {
        out.appendLE(sampleCount, otherCount, firstNs, lastNs)
    }

    static func decode(_ c: inout ByteCursor) throws -> DroppedRecord {
        DroppedRecord(sampleCount: try c.u64(), otherCount: try c.u64(), firstNs: try c.u64(), lastNs: try c.u64())
    }
}
