/// Constants of the capture file format.
public enum CaptureFormat {
    /// The eight bytes every capture starts with.
    public static let magic: [UInt8] = Array("STALLPRF".utf8)
    /// The format version this library writes.
    public static let version: UInt16 = 3
    /// The versions the reader accepts: 1 (stalls only), 2 (episode kinds, blocked-on records) and 3 (the watched
    /// target of each episode).
    public static let readableVersions: ClosedRange<UInt16> = 1...3
    /// Header size in bytes: magic, version, reserved.
    public static let headerSize = 16
    /// Bytes before a record's payload: type (1) and payload length (4).
    public static let recordPrefixSize = 5
    /// Bytes after a record's payload: CRC-32 of type, length and payload.
    public static let recordSuffixSize = 4
    /// Largest payload a reader accepts (a sample of 256 frames needs about 2 KiB).
    public static let maxPayloadSize = 16 << 20

    /// Record type codes.
    enum RecordType: UInt8 {
        case process = 1, image = 2, stallBegin = 3, sample = 4, stallEnd = 5, close = 6, blockedOn = 7, dropped = 8, marker = 9
        case signalMask = 10, threads = 11, imageContents = 12, symbolication = 13, symbols = 14
    }

    /// The file header: magic, version, two reserved bytes, four reserved bytes.
    static var header: [UInt8] {
        var bytes = magic
        bytes.appendLE(version)
        bytes.appendLE(UInt16(0))
        bytes.appendLE(UInt32(0))
        return bytes
    }
}

extension CaptureFormat {
    /// A capture file made of `records`, in order: the header, then each record framed (type, length, payload,
    /// CRC).
    public static func file(of records: [CaptureRecord]) -> [UInt8] {
        var bytes = header
        for record in records { record.encode(into: &bytes) }
        return bytes
    }

    /// What `stallprof symbolicate` writes: the capture `bytes` (already read without error by
    /// ``CaptureReader/records(_:source:)``) as they are, its header and every complete record byte for byte (also
    /// records of types this reader does not know), except its symbolication and symbols records, then
    /// `appending`. A record cut short at the end is left out.
    public static func file(copying bytes: [UInt8], appending records: [CaptureRecord]) -> [UInt8] {
        var out = Array(bytes.prefix(headerSize))
        var offset = headerSize
        let dropped: Set<UInt8> = [RecordType.symbolication.rawValue, RecordType.symbols.rawValue]
        while offset + recordPrefixSize <= bytes.count {
            let length = Int(bytes[offset + 1]) | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3]) << 16
                | Int(bytes[offset + 4]) << 24
            let end = offset + recordPrefixSize + length + recordSuffixSize
            guard length <= maxPayloadSize, end <= bytes.count else { break }
            if !dropped.contains(bytes[offset]) { out += bytes[offset..<end] }
            offset = end
        }
        for record in records { record.encode(into: &out) }
        return out
    }
}

/// CRC-32 (IEEE 802.3, the polynomial of zlib and PNG): the checksum that ends every capture record.
enum CRC32 {
    static let table: [UInt32] = (0..<256).map { index in
        var c = UInt32(index)
        for _ in 0..<8 { c = (c & 1) != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    /// The checksum of `bytes`.
    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}
