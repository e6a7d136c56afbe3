/// App markers (type 9): events the app itself put on the stall timeline with `StallMarker` (an instant, or the
/// begin and end of an interval), so that the order of the app's events and of the stalls can be read together.
/// Version 2 files may hold them; readers that do not know type 9 skip it.
public struct MarkerRecord: Sendable, Equatable {
    /// What the record marks.
    public enum Kind: UInt8, Sendable, CaseIterable, CustomStringConvertible {
        /// A moment (`StallMarker.mark`). ``MarkerRecord/spanID`` is 0.
        case instant = 0
        /// An interval began (`StallMarker.begin`); its end record carries the same ``MarkerRecord/spanID``.
        case begin = 1
        /// An interval ended (`Span.end()`).
        case end = 2
        /// Markers were lost: the app marked faster than the watchdog drained its rings. ``MarkerRecord/spanID``
        /// holds how many since the previous such record of the same thread; ``MarkerRecord/threadID`` is the
        /// thread that made them (0: threads without a ring of their own, or a writer that did not count per
        /// thread). The name is empty.
        case dropped = 3

        /// `instant`, `begin`, `end` or `dropped`.
        public var description: String { ["instant", "begin", "end", "dropped"][Int(rawValue)] }
    }

    /// The most bytes of UTF-8 a marker's name keeps; a longer name is cut at a Unicode scalar boundary.
    public static let maxNameBytes = 63

    /// What the record marks.
    public var kind: Kind
    /// Pairs a begin with its end (unique within a process run); 0 for instants; the count for `dropped`.
    public var spanID: UInt64
    /// Kernel thread id of the thread that marked (the same numbering as an episode's `threadID`).
    public var threadID: Int32
    /// When, CLOCK_MONOTONIC nanoseconds (the clock of the samples' timestamps).
    public var timestampNs: UInt64
    /// The marker's name, UTF-8, at most ``maxNameBytes`` bytes as written by the watchdog (empty for an end).
    public var name: String

    /// Creates a marker record.
    public init(kind: Kind, spanID: UInt64 = 0, threadID: Int32, timestampNs: UInt64, name: String) {
        (self.kind, self.spanID, self.threadID, self.timestampNs) = (kind, spanID, threadID, timestampNs)
        self.name = name
    }
}

/// One app marker read from a capture: an instant, or an interval whose begin and end were paired.
public struct Marker: Sendable, Equatable {
    /// An instant or an interval.
    public enum Kind: String, Sendable, CaseIterable {
        /// A moment.
        case instant
        /// A span of time, from a begin to an end.
        case interval
    }

    /// The name the app gave.
    public var name: String
    /// An instant or an interval.
    public var kind: Kind
    /// When it happened or began, CLOCK_MONOTONIC nanoseconds (the samples' clock).
    public var startNs: UInt64
    /// How long an interval lasted; nil for an instant, or for an interval whose end is not in the file (never
    /// ended, or the process died first).
    public var durationNs: UInt64?
    /// Kernel thread id of the thread that marked it (for an interval: the one that began it).
    public var tid: Int32

    /// Creates a marker.
    public init(name: String, kind: Kind, startNs: UInt64, durationNs: UInt64? = nil, tid: Int32) {
        (self.name, self.kind, self.startNs, self.durationNs, self.tid) = (name, kind, startNs, durationNs, tid)
    }

    /// Where it ends: the start plus the duration, or the start when it has none.
    public var endNs: UInt64 { startNs &+ (durationNs ?? 0) }
}

/// Builds ``Capture/markers`` from marker records in file order: instants as they are, begins paired with the
/// ends that carry their span id (an end without its begin, e.g. begun before the watchdog started, is left out).
struct MarkerCollector {
    private(set) var markers: [Marker] = []
    private(set) var dropped: UInt64 = 0
    private(set) var droppedByThread: [Int32: UInt64] = [:]
    private var openSpans: [UInt64: Int] = [:]

    mutating func add(_ record: MarkerRecord) {
        switch record.kind {
        case .instant:
            markers.append(Marker(name: record.name, kind: .instant, startNs: record.timestampNs, tid: record.threadID))
        case .begin:
            openSpans[record.spanID] = markers.count
            markers.append(Marker(name: record.name, kind: .interval, startNs: record.timestampNs, tid: record.threadID))
        case .end:
            guard let index = openSpans.removeValue(forKey: record.spanID) else { return }
            let start = markers[index].startNs
            markers[index].durationNs = record.timestampNs &- min(start, record.timestampNs)
        case .dropped:
            dropped &+= record.spanID
            droppedByThread[record.threadID, default: 0] &+= record.spanID
        }
    }

    /// The markers by start time (file order among equal times).
    var sorted: [Marker] {
        markers.enumerated().sorted { ($0.element.startNs, $0.offset) < ($1.element.startNs, $1.offset) }.map(\.element)
    }
}

extension MarkerRecord: RecordCoding {
    static let recordType = CaptureFormat.RecordType.marker
    var captureRecord: CaptureRecord { .marker(self) }

    /// `kind:u8 spanID:u64 threadID:i32 timestampNs:u64 name:string`.
    func encode(into out: inout [UInt8]) {
        out.appendLE(kind.rawValue, spanID, threadID, timestampNs)
        out.appendString(name)
    }

    static func decode(_ c: inout ByteCursor) throws -> MarkerRecord {
        let rawKind = try c.u8()
        guard let kind = Kind(rawValue: rawKind) else { throw c.error("unknown marker kind \(rawKind)") }
        return MarkerRecord(
            kind: kind, spanID: try c.u64(), threadID: try c.i32(), timestampNs: try c.u64(), name: try c.string())
    }
}
