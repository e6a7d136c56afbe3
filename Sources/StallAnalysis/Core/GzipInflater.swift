#if canImport(Glibc)
import Glibc
#endif
import CZlib
import StallFormat

/// gzip input, decompressed as it streams (zlib): `perf script | gzip` files, `.stalls.gz` captures, `.folded.gz`.
/// Memory stays one chunk of each side; concatenated gzip members are read one after the other, as gunzip does.
final class GzipInflater {
    private var stream = z_stream()
    private let source: ByteStream
    /// The compressed chunk in hand, and how much of it zlib has consumed.
    private var input: [UInt8] = []
    private var inputOffset = 0
    /// zlib has seen bytes of a member it has not finished.
    private var inMember = false
    private var ended = false
    /// Compressed bytes consumed so far (the position of an error).
    private var compressedOffset = 0

    /// A decompressor reading the gzip bytes of `source`; nil when zlib cannot start.
    init?(_ source: ByteStream) {
        self.source = source
        // 15 + 16: a gzip header and trailer around the deflate data.
        guard inflateInit2_(&stream, 15 + 16, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            return nil
        }
    }

    deinit { inflateEnd(&stream) }

    /// The next decompressed bytes (at most `limit`); empty at the end of the last member. A corrupt or cut stream
    /// is bad data naming the compressed byte offset. Bytes after a member that do not start another one (padding)
    /// end the input, as gunzip ignores trailing garbage.
    func next(limit: Int) throws -> [UInt8] {
        var output = [UInt8](repeating: 0, count: limit)
        var produced = 0
        while produced == 0 && !ended {
            if inputOffset == input.count {
                input = Array(try source.take(1 << 16))
                inputOffset = 0
                if input.isEmpty {
                    if inMember { throw failure("the gzip stream is cut short") }
                    ended = true
                    break
                }
            }
            if !inMember, compressedOffset > 0, input[inputOffset] != 0x1F {
                ended = true  // after a member, bytes that do not start another (padding, a newline): ignored
                break
            }
            let offset = inputOffset, room = limit - produced
            let (status, used, made) = input.withUnsafeMutableBufferPointer { bytes in
                output.withUnsafeMutableBufferPointer { out -> (Int32, Int, Int) in
                    stream.next_in = bytes.baseAddress! + offset
                    stream.avail_in = UInt32(bytes.count - offset)
                    stream.next_out = out.baseAddress! + (limit - room)
                    stream.avail_out = UInt32(room)
                    let status = inflate(&stream, Z_NO_FLUSH)
                    return (status, bytes.count - offset - Int(stream.avail_in), room - Int(stream.avail_out))
                }
            }
            inputOffset += used
            compressedOffset += used
            produced += made
            if used > 0 { inMember = true }
            switch status {
            case Z_STREAM_END:
                inflateReset(&stream)
                inMember = false
            case Z_OK, Z_BUF_ERROR:
                if used == 0 && made == 0 && inputOffset < input.count {
                    throw failure("the gzip data is corrupt (no progress)")
                }
            default:
                let message = stream.msg.map { String(cString: $0) } ?? "zlib error \(status)"
                throw failure("the gzip data is corrupt (\(message))")
            }
        }
        return Array(output[0..<produced])
    }

    private func failure(_ reason: String) -> StallError {
        .badData(path: source.name, position: "byte \(compressedOffset) of the gzip stream", reason: reason)
    }
}
