/// One record of a capture file.
///
/// A capture is a header followed by framed records (see docs/FORMAT.md for the byte grammar). Every record is
/// self-contained, so a file cut short by a crash still reads up to its last complete record. Each record type's
/// payload is written and read by its own type (``RecordCoding``, in the type's file); this file frames them.
public enum CaptureRecord: Sendable, Equatable {
    /// The process record, written first.
    case process(ProcessRecord)
    /// A loaded image.
    case image(ImageRecord)
    /// A stall began.
    case stallBegin(StallBeginRecord)
    /// A stack sample.
    case sample(SampleRecord)
    /// A stall ended.
    case stallEnd(StallEndRecord)
    /// What a blocked episode waited for (version 2).
    case blockedOn(BlockedOnRecord)
    /// The watchdog stopped and closed the file cleanly, at this monotonic time.
    case close(timestampNs: UInt64)
    /// Records dropped while the file did not accept writes (type 8; older readers skip it).
    case dropped(DroppedRecord)
    /// An app marker: an instant, or an interval's begin or end (type 9; older readers skip it).
    case marker(MarkerRecord)
    /// The sampled thread's blocked-signal mask, read when its samples went unanswered (type 10; older readers
    /// skip it).
    case signalMask(SignalMaskRecord)
    /// Every thread of the process during a blocked episode (type 11; older readers skip it).
    case threads(ThreadsRecord)
    /// The bytes of an image without a file, the vDSO (type 12; older readers skip it).
    case imageContents(ImageContentsRecord)
    /// When and from which files `stallprof symbolicate` resolved the capture's addresses (type 13; older readers
    /// skip it).
    case symbolication(SymbolicationRecord)
    /// Resolved addresses: symbols, lines, inlined frames (type 14; older readers skip it).
    case symbols(SymbolsRecord)
}

extension CaptureRecord {
    /// Appends the framed record (type, length, payload, CRC) to `out`.
    func encode(into out: inout [UInt8]) {
        switch self {
        case .process(let record): Self.frame(record, into: &out)
        case .image(let record): Self.frame(record, into: &out)
        case .stallBegin(let record): Self.frame(record, into: &out)
        case .sample(let record): Self.frame(record, into: &out)
        case .stallEnd(let record): Self.frame(record, into: &out)
        case .blockedOn(let record): Self.frame(record, into: &out)
        case .close(let timestampNs): Self.frame(CloseRecord(timestampNs: timestampNs), into: &out)
        case .dropped(let record): Self.frame(record, into: &out)
        case .marker(let record): Self.frame(record, into: &out)
        case .signalMask(let record): Self.frame(record, into: &out)
        case .threads(let record): Self.frame(record, into: &out)
        case .imageContents(let record): Self.frame(record, into: &out)
        case .symbolication(let record): Self.frame(record, into: &out)
        case .symbols(let record): Self.frame(record, into: &out)
        }
    }

    /// The record of type code `type` whose payload `payload` spans (its limit is the payload's end); nil for a
    /// type this reader does not know (a newer writer's), which the reader skips.
    static func decode(type: UInt8, payload: ByteCursor) throws -> CaptureRecord? {
        var c = payload
        return try payloadTypes[type]?.decode(&c).captureRecord
    }

    /// The payload type of each record type code.
    private static let payloadTypes: [UInt8: any RecordCoding.Type] = Dictionary(uniqueKeysWithValues: [
        ProcessRecord.self, ImageRecord.self, StallBeginRecord.self, SampleRecord.self, StallEndRecord.self,
        CloseRecord.self, BlockedOnRecord.self, DroppedRecord.self, MarkerRecord.self, SignalMaskRecord.self,
        ThreadsRecord.self, ImageContentsRecord.self, SymbolicationRecord.self, SymbolsRecord.self,
    ].map { (type: any RecordCoding.Type) in (type.recordType.rawValue, type) })

    /// Appends `record` framed: its type, its payload's length, the payload, and the CRC-32 of all three.
    private static func frame<Record: RecordCoding>(_ record: Record, into out: inout [UInt8]) {
        let recordStart = out.count
        out.append(Record.recordType.rawValue)
        out.appendLE(UInt32(0))  // the length, known once the payload is written
        record.encode(into: &out)
        let length = UInt32(out.count - recordStart - CaptureFormat.recordPrefixSize)
        withUnsafeBytes(of: length.littleEndian) { bytes in
            for k in 0..<4 { out[recordStart + 1 + k] = bytes[k] }
        }
        let crc = out.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[recordStart...])) }
        out.appendLE(crc)
    }
}

/// The payload of one capture record type: its bytes written and read in one place, next to the record's struct
/// (each record's file holds its struct and this conformance; docs/FORMAT.md lists the layouts). ``CaptureRecord``
/// frames a payload (type, length, CRC) and picks the decoder by the type code. All integers are little-endian.
protocol RecordCoding {
    /// The record's type code.
    static var recordType: CaptureFormat.RecordType { get }
    /// Appends the payload, unframed, to `out`.
    func encode(into out: inout [UInt8])
    /// Reads the payload ``encode(into:)`` writes from `c`, whose limit is the payload's end. A trailing field
    /// older writers did not write is read only when bytes remain.
    static func decode(_ c: inout ByteCursor) throws -> Self
    /// The record holding this payload.
    var captureRecord: CaptureRecord { get }
}

/// The close record's payload (type 6): when the watchdog stopped and closed the file, monotonic nanoseconds.
struct CloseRecord: RecordCoding {
    static let recordType = CaptureFormat.RecordType.close
    var timestampNs: UInt64

    /// `timestampNs:u64`.
    func encode(into out: inout [UInt8]) { out.appendLE(timestampNs) }

    static func decode(_ c: inout ByteCursor) throws -> CloseRecord { CloseRecord(timestampNs: try c.u64()) }

    var captureRecord: CaptureRecord { .close(timestampNs: timestampNs) }
}
