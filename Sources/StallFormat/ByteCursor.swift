/// Reads little-endian fields from a byte array, throwing ``CaptureFormatError`` past its limit: the field readers
/// of ``RecordCoding`` payloads (the writers follow).
struct ByteCursor {
    let bytes: [UInt8]
    var offset: Int
    let source: String
    var limit: Int

    init(bytes: [UInt8], offset: Int, source: String, limit: Int? = nil) {
        self.bytes = bytes
        self.offset = offset
        self.source = source
        self.limit = limit ?? bytes.count
    }

    var remaining: Int { limit - offset }

    func error(_ reason: String) -> CaptureFormatError {
        CaptureFormatError(source: source, offset: offset, reason: reason)
    }

    mutating func integer<T: FixedWidthInteger>(_: T.Type) throws -> T {
        let size = MemoryLayout<T>.size
        guard remaining >= size else { throw error("record too short") }
        var value: T = 0
        for k in 0..<size { value |= T(truncatingIfNeeded: bytes[offset + k]) << (8 * k) }
        offset += size
        return value
    }

    mutating func u8() throws -> UInt8 { try integer(UInt8.self) }
    mutating func u16() throws -> UInt16 { try integer(UInt16.self) }
    mutating func u32() throws -> UInt32 { try integer(UInt32.self) }
    mutating func u64() throws -> UInt64 { try integer(UInt64.self) }
    mutating func i32() throws -> Int32 { try integer(Int32.self) }

    mutating func byteField() throws -> [UInt8] {
        let count = Int(try u32())
        guard count <= remaining else { throw error("field length \(count) exceeds the record") }
        defer { offset += count }
        return Array(bytes[offset..<(offset + count)])
    }

    /// A frame list: a count, then that many addresses.
    mutating func frames() throws -> [UInt64] {
        let count = Int(try u32())
        guard count <= remaining / 8 else { throw error("frame count \(count) exceeds the record") }
        var frames: [UInt64] = []
        frames.reserveCapacity(count)
        for _ in 0..<count { frames.append(try u64()) }
        return frames
    }

    mutating func string() throws -> String {
        String(decoding: try byteField(), as: UTF8.self)
    }
}

/// The field writers of ``RecordCoding`` payloads, matching ``ByteCursor``'s readers.
extension Array where Element == UInt8 {
    /// Appends `value` little-endian, in its own width.
    mutating func appendLE<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { append(contentsOf: $0) }
    }

    /// Appends each of `values` little-endian, in order, each in its own width.
    mutating func appendLE<each T: FixedWidthInteger>(_ values: repeat each T) {
        repeat appendLE(each values)
    }

    /// A `string` field: the UTF-8 byte count (u32), then the bytes.
    mutating func appendString(_ value: String) {
        appendBytes(Array(value.utf8))
    }

    /// A frame list: a count (u32), then the addresses (u64 each).
    mutating func appendFrames(_ frames: [UInt64]) {
        appendLE(UInt32(frames.count))
        for frame in frames { appendLE(frame) }
    }

    /// A `bytes` field: the count (u32), then the bytes.
    mutating func appendBytes(_ value: [UInt8]) {
        appendLE(UInt32(value.count))
        append(contentsOf: value)
    }
}
