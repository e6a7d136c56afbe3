/// A protocol buffers encoder: what pprof's and Perfetto's messages need (varints, doubles, length-delimited fields,
/// packed repeated integers), writing fields in the order they are added. Zero scalars are left out, as proto3
/// does, except by ``present(_:_:)`` and ``double(_:_:)``, which always write theirs.
struct ProtobufWriter {
    /// The encoded bytes so far.
    private(set) var bytes: [UInt8] = []

    /// Wire types used here.
    private enum WireType: UInt64 {
        case varint = 0
        case lengthDelimited = 2
    }

    /// Moves the bytes so far into `sink` once there are `atLeast` of them (default 64 KiB), so a long message is
    /// written as it is made; `atLeast: 0` moves whatever there is.
    mutating func drain(into sink: ByteSink, atLeast: Int = 1 << 16) throws {
        guard bytes.count >= atLeast, !bytes.isEmpty else { return }
        sink.write(bytes)
        bytes.removeAll(keepingCapacity: true)
        try sink.flushIfFull()
    }

    /// Appends `value` as a base-128 varint.
    mutating func varint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    private mutating func tag(_ field: Int, _ type: WireType) { varint(UInt64(field) << 3 | type.rawValue) }

    /// An unsigned integer field (omitted when 0).
    mutating func uint(_ field: Int, _ value: UInt64) {
        guard value != 0 else { return }
        tag(field, .varint)
        varint(value)
    }

    /// An integer field written even when 0 (a pid or tid of 0 is a value: the kernel's idle task).
    mutating func present(_ field: Int, _ value: Int64) {
        tag(field, .varint)
        varint(UInt64(bitPattern: value))
    }

    /// A signed integer field, two's complement as int64 is encoded (omitted when 0).
    mutating func int(_ field: Int, _ value: Int64) { uint(field, UInt64(bitPattern: value)) }

    /// A bool field (omitted when false).
    mutating func bool(_ field: Int, _ value: Bool) { uint(field, value ? 1 : 0) }

    /// A double field: wire type 1, eight little-endian bytes. Always written (a message's value field).
    mutating func double(_ field: Int, _ value: Double) {
        varint(UInt64(field) << 3 | 1)
        withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// A length-delimited field holding `payload` (a string's UTF-8 or an embedded message). Always written: an
    /// empty string in a repeated field (pprof's string table entry 0) must be there.
    mutating func bytes(_ field: Int, _ payload: [UInt8]) {
        tag(field, .lengthDelimited)
        varint(UInt64(payload.count))
        bytes.append(contentsOf: payload)
    }

    /// A string field.
    mutating func string(_ field: Int, _ value: String) { bytes(field, Array(value.utf8)) }

    /// An embedded message field built by `body`.
    mutating func message(_ field: Int, _ body: (inout ProtobufWriter) -> Void) {
        var inner = ProtobufWriter()
        body(&inner)
        bytes(field, inner.bytes)
    }

    /// A packed repeated integer field (omitted when empty).
    mutating func packed(_ field: Int, _ values: [UInt64]) {
        guard !values.isEmpty else { return }
        var inner = ProtobufWriter()
        for value in values { inner.varint(value) }
        bytes(field, inner.bytes)
    }
}
