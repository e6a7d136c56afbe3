/// A gzip (RFC 1952) writer with stored (uncompressed) deflate blocks (RFC 1951, BTYPE 00): every gzip reader
/// accepts it, it needs no library, and exported profiles are small. Compression is not the point; a valid
/// container is (pprof readers expect gzip). It streams: bytes go out in blocks as they come, the CRC-32 and
/// length follow at ``finish()``.
final class Gzip {
    /// The largest stored block.
    static let maxBlock = 65_535

    private let sink: ByteSink
    /// Bytes not in a block yet: at most one block's, and a block goes out only once more bytes follow it, so the
    /// last block (the one marked final) is whatever remains at the end.
    private var pending: [UInt8] = []
    private var crc: UInt32 = 0xFFFF_FFFF
    private var length: UInt32 = 0

    /// A gzip member written into `sink`, its header first.
    init(into sink: ByteSink) {
        self.sink = sink
        // ID1 ID2, CM = 8 (deflate), FLG = 0, MTIME = 0, XFL = 0, OS = 3 (Unix).
        sink.write([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 3])
        pending.reserveCapacity(2 * Self.maxBlock)
    }

    /// Adds `data` to the member.
    func write(_ data: [UInt8]) throws {
        crc = Self.crc32(data, from: crc)
        length = length &+ UInt32(truncatingIfNeeded: data.count)
        var offset = 0
        while offset < data.count {
            let taken = min(data.count - offset, Self.maxBlock + 1 - pending.count)
            pending.append(contentsOf: data[offset..<offset + taken])
            offset += taken
            if pending.count > Self.maxBlock {
                block(pending[..<Self.maxBlock], final: false)
                pending.removeFirst(Self.maxBlock)
                try sink.flushIfFull()
            }
        }
    }

    /// Writes the last block and the trailer (CRC-32 and length) into the sink.
    func finish() {
        block(pending[...], final: true)
        pending = []
        sink.write(Self.littleEndian(~crc) + Self.littleEndian(length))
    }

    /// One stored block holding `data`.
    private func block(_ data: ArraySlice<UInt8>, final: Bool) {
        let length = data.count
        sink.write(byte: final ? 1 : 0)  // BFINAL, BTYPE = 00; the rest of the byte is padding
        sink.write([UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8((~length >> 8) & 0xFF)])
        sink.write(data)
    }

    /// `data` wrapped in a gzip member: header, stored deflate blocks, CRC-32 and length trailer.
    static func wrap(_ data: [UInt8]) -> [UInt8] {
        let sink = ByteSink()
        let gzip = Gzip(into: sink)
        try? gzip.write(data)  // a sink without a consumer never fails
        gzip.finish()
        return sink.bytes
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
    static func crc32(_ data: [UInt8]) -> UInt32 { ~crc32(data, from: 0xFFFF_FFFF) }

    /// The running (not yet inverted) CRC-32 `crc` continued over `data`.
    private static func crc32(_ data: [UInt8], from crc: UInt32) -> UInt32 {
        table.withUnsafeBufferPointer { table in
            data.reduce(crc) { crc, byte in table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        }
    }
}
