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
        self.sampleCount = sampleCount
        self.otherCount = otherCount
        self.firstNs = firstNs
        self.lastNs = lastNs
    }
}
