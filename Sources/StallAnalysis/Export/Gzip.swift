import CZlib

/// A gzip (RFC 1952) writer compressing with zlib (deflate, its default level, as `gzip` does): pprof readers
/// expect gzip, and the files come out as small as `gzip -9`'s within a few percent. It streams: compressed bytes
/// go to the sink as zlib emits them, the trailer at ``finish()``.
final class Gzip {
    /// How much input is compressed per zlib call (and the most one ``write(_:)`` holds at once).
    static let maxBlock = 65_536

    private let sink: ByteSink
    private var stream = z_stream()
    private var output = [UInt8](repeating: 0, count: 1 << 16)
    private var started = false

    /// A gzip member written into `sink`.
    init(into sink: ByteSink) {
        self.sink = sink
        // 15 + 16: a gzip header and trailer; memory level 8 is zlib's default.
        started = deflateInit2_(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY,
                                zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK
        precondition(started, "zlib's deflateInit2 failed")  // only without memory for its state
    }

    deinit { deflateEnd(&stream) }

    /// Adds `data` to the member.
    func write(_ data: [UInt8]) throws {
        var offset = 0
        while offset < data.count {
            let piece = min(Self.maxBlock, data.count - offset)
            data.withUnsafeBufferPointer { bytes in
                deflate(from: bytes.baseAddress! + offset, count: piece, flush: Z_NO_FLUSH)
            }
            offset += piece
            try sink.flushIfFull()
        }
    }

    /// Compresses what zlib still holds and writes the trailer (CRC-32 and length) into the sink.
    func finish() {
        deflate(from: nil, count: 0, flush: Z_FINISH)
    }

    /// Runs deflate over `count` bytes at `input` until zlib has taken them all (and, for `Z_FINISH`, ended the
    /// member), writing what it emits.
    private func deflate(from input: UnsafePointer<UInt8>?, count: Int, flush: Int32) {
        stream.next_in = UnsafeMutablePointer(mutating: input)
        stream.avail_in = UInt32(count)
        var status: Int32 = Z_OK
        repeat {
            let room = output.count
            status = output.withUnsafeMutableBufferPointer { out -> Int32 in
                stream.next_out = out.baseAddress
                stream.avail_out = UInt32(room)
                return CZlib.deflate(&stream, flush)
            }
            let made = room - Int(stream.avail_out)
            if made > 0 { sink.write(output[0..<made]) }
        } while stream.avail_in > 0 || (flush == Z_FINISH && status == Z_OK) || stream.avail_out == 0
    }

    /// `data` wrapped in a gzip member.
    static func wrap(_ data: [UInt8]) -> [UInt8] {
        let sink = ByteSink()
        let gzip = Gzip(into: sink)
        try? gzip.write(data)  // a sink without a consumer never fails
        gzip.finish()
        return sink.bytes
    }
}
