/// A gzip (RFC 1952) writer with stored (uncompressed) deflate blocks (RFC 1951, BTYPE 00): every gzip reader
/// accepts it, it needs no library, and exported profiles are small. Compression is not the point; a valid
/// container is (pprof readers expect gzip).
enum Gzip {
    /// The largest stored block.
    static let maxBlock = 65_535

    /// `data` wrapped in a gzip member: header, stored deflate blocks, CRC-32 and length trailer.
    static func wrap(_ data: [UInt8]) -> [UInt8] {
        // ID1 ID2, CM = 8 (deflate), FLG = 0, MTIME = 0, XFL = 0, OS = 3 (Unix).
        var out: [UInt8] = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 3]
        out.reserveCapacity(data.count + data.count / maxBlock * 5 + 30)
        var offset = 0
        repeat {
            let length = min(maxBlock, data.count - offset)
            let final: UInt8 = offset + length == data.count ? 1 : 0
            out.append(final)  // BFINAL, BTYPE = 00; the rest of the byte is padding
            out += [UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8((~length >> 8) & 0xFF)]
            out.append(contentsOf: data[offset..<offset + length])
            offset += length
        } while offset < data.count
        out += littleEndian(crc32(data)) + littleEndian(UInt32(truncatingIfNeeded: data.count))
        return out
    }

    private static func littleEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF), UInt8((value >> 16) & 0xFF), UInt8(value >> 24)]
    }

    /// The CRC-32 table (reflected polynomial 0xEDB88320).
    private static let table: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    /// CRC-32 as gzip and zlib compute it.
    static func crc32(_ data: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return ~crc
    }
}
