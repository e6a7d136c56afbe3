#if canImport(Glibc)
import Glibc
#endif
import StallFormat

/// Where input comes from: a file, or standard input when the path is `-`.
public struct InputSource: Sendable, Hashable, CustomStringConvertible {
    /// The path given by the user; `-` means standard input.
    public var path: String

    /// Creates a source for `path` (`-` for standard input).
    public init(path: String) { self.path = path }

    /// True for standard input.
    public var isStandardInput: Bool { path == "-" }

    /// How messages name this input: the path, or `<stdin>`.
    public var description: String { isStandardInput ? "<stdin>" : path }

    /// Opens the input for streaming.
    public func open() throws -> ByteStream {
        if isStandardInput { return ByteStream(fd: 0, name: description, ownsDescriptor: false) }
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 { throw StallError.input(path: description, reason: String(cString: strerror(errno))) }
        var info = stat()
        if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            Glibc.close(fd)
            throw StallError.input(path: description, reason: "is a directory")
        }
        return ByteStream(fd: fd, name: description, ownsDescriptor: true)
    }
}

/// A buffered reader over a file descriptor that can look ahead (for format detection) before streaming lines.
public final class ByteStream {
    /// The longest line accepted (64 MiB): a longer one is reported as bad data instead of filling memory.
    public static let maxLineLength = 64 << 20
    /// The longest line this stream accepts. Default: ``maxLineLength``.
    public var lineLimit = ByteStream.maxLineLength
    /// How many bytes one read asks for.
    static let chunkSize = 1 << 20

    /// How messages name this stream.
    public let name: String
    private let fd: Int32
    private let ownsDescriptor: Bool
    /// Where bytes come from instead of `fd`: a chunk of at most the given size per call, empty at the end.
    private var producer: ((Int) throws -> [UInt8])? = nil
    private var buffer: [UInt8] = []
    private var start = 0
    private var atEnd = false
    /// Bytes consumed so far (the offset of the next unread byte).
    public private(set) var consumed = 0
    /// Lines returned so far by ``nextLine()`` or ``forEachLine(_:)``.
    public private(set) var lineNumber = 0

    /// Wraps `fd`; closes it on deinit when `ownsDescriptor`.
    public init(fd: Int32, name: String, ownsDescriptor: Bool) {
        self.fd = fd
        self.name = name
        self.ownsDescriptor = ownsDescriptor
    }

    /// A stream over bytes already in memory (a transcoded input, a test).
    public init(bytes: [UInt8], name: String) {
        fd = -1
        self.name = name
        ownsDescriptor = false
        buffer = bytes
        atEnd = true
    }

    /// A stream of the bytes `producer` gives, a chunk per call (empty at the end): a decompressed input.
    init(name: String, producer: @escaping (Int) throws -> [UInt8]) {
        fd = -1
        self.name = name
        ownsDescriptor = false
        self.producer = producer
    }

    deinit { if ownsDescriptor { Glibc.close(fd) } }

    /// The stream itself, or, when it starts with gzip's magic, a stream of its decompressed bytes (zlib,
    /// streaming: memory stays a chunk; ``GzipInflater``). Every command reads `.gz` inputs so.
    public func decompressingGzip() throws -> ByteStream {
        let head = try peek(3)
        guard head.count == 3, head.elementsEqual([0x1F, 0x8B, 8]), let inflater = GzipInflater(self) else { return self }
        return ByteStream(name: name, producer: { try inflater.next(limit: $0) })
    }

    /// Up to `count` bytes from the current position, consumed; empty at the end.
    func take(_ count: Int) throws -> ArraySlice<UInt8> {
        if start == buffer.count, try !fill() { return [] }
        let end = min(buffer.count, start + count)
        defer {
            consumed += end - start
            start = end
        }
        return buffer[start..<end]
    }

    /// The bytes left to read when the stream is a regular file (its size minus what was consumed), for callers
    /// that size their tables from it; nil for pipes, terminals and in-memory streams.
    public var remainingFileBytes: Int? {
        guard fd >= 0 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return nil }
        return max(0, Int(info.st_size) - consumed)
    }

    /// The stream itself, or, when it starts with a UTF-16 byte order mark, a stream of its text in UTF-8 (read
    /// whole: UTF-16 profiles are small text exports, e.g. from Windows tools).
    public func decodingUTF16() throws -> ByteStream {
        let head = try peek(2)
        guard head.count == 2 else { return self }
        let bigEndian: Bool
        switch (head[head.startIndex], head[head.startIndex + 1]) {
        case (0xFF, 0xFE): bigEndian = false
        case (0xFE, 0xFF): bigEndian = true
        default: return self
        }
        let bytes = try readAll()
        var units: [UInt16] = []
        units.reserveCapacity(bytes.count / 2)
        var index = 2
        while index + 1 < bytes.count {
            let (a, b) = (UInt16(bytes[index]), UInt16(bytes[index + 1]))
            units.append(bigEndian ? a << 8 | b : b << 8 | a)
            index += 2
        }
        return ByteStream(bytes: Array(String(decoding: units, as: UTF16.self).utf8), name: name)
    }

    /// Reads more bytes into the buffer (compacting consumed bytes first); false at end of input.
    private func fill() throws -> Bool {
        if atEnd { return false }
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeSubrange(0..<start)
            start = 0
        }
        if let producer {
            let chunk = try producer(Self.chunkSize)
            if chunk.isEmpty {
                atEnd = true
                return false
            }
            buffer.append(contentsOf: chunk)
            return true
        }
        var n = 0
        let chunk = [UInt8](unsafeUninitializedCapacity: Self.chunkSize) { raw, count in
            repeat {
                n = Glibc.read(fd, raw.baseAddress, Self.chunkSize)
            } while n < 0 && errno == EINTR
            count = max(n, 0)
        }
        if n < 0 {
            throw StallError.input(path: name, reason: "read failed: \(String(cString: strerror(errno)))")
        }
        if n == 0 {
            atEnd = true
            return false
        }
        if start == buffer.count {
            buffer = chunk
            start = 0
        } else {
            buffer.append(contentsOf: chunk)
        }
        return true
    }

    /// Up to `count` bytes from the current position, without consuming them.
    public func peek(_ count: Int) throws -> ArraySlice<UInt8> {
        while buffer.count - start < count, try fill() {}
        return buffer[start..<min(buffer.count, start + count)]
    }

    /// Everything that remains.
    public func readAll() throws -> [UInt8] {
        while try fill() {}
        defer {
            consumed += buffer.count - start
            buffer = []
            start = 0
        }
        return Array(buffer[start...])
    }

    /// The error for a line that never ends.
    private func overlongLine() -> StallError {
        .badData(path: name, position: "line \(lineNumber + 1)",
                 reason: "line longer than \(lineLimit >> 20) MiB; is this a text profile?")
    }

    /// The next line without its terminator (`\n`, and a `\r` before it), or nil at end of input. A final line
    /// without a newline is returned too. The slice is valid until the next call.
    public func nextLine() throws -> ArraySlice<UInt8>? {
        var searchFrom = start
        while true {
            if let newline = buffer[searchFrom...].firstIndex(of: UInt8(ascii: "\n")) {
                var end = newline
                if end > start && buffer[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                let line = buffer[start..<end]
                consumed += newline + 1 - start
                start = newline + 1
                lineNumber += 1
                return line
            }
            if buffer.count - start > lineLimit { throw overlongLine() }
            searchFrom = buffer.count
            let oldStart = start
            if try !fill() {
                guard start < buffer.count else { return nil }
                var end = buffer.count
                if buffer[end - 1] == UInt8(ascii: "\r") { end -= 1 }
                let line = buffer[start..<end]
                consumed += buffer.count - start
                start = buffer.count
                lineNumber += 1
                return line
            }
            searchFrom -= oldStart - start  // the buffer may have been compacted
        }
    }

    /// Calls `body` with every remaining line and its number (from 1), without its terminator (`\n`, and a `\r` before it); a final line
    /// without a newline is passed too. The pointer is valid only during the call. The fast path of the text
    /// importers: one `memchr` per line, no copies.
    public func forEachLine(_ body: (UnsafeBufferPointer<UInt8>, _ lineNumber: Int) throws -> Void) throws {
        var scanned = start  // no newline in start..<scanned
        while true {
            let count = buffer.count
            var lineStart = start
            var lines = lineNumber
            try buffer.withUnsafeBufferPointer { buffer in
                let base = buffer.baseAddress!
                var from = scanned
                while from < count, let found = memchr(base + from, 10, count - from) {
                    let newline = found.assumingMemoryBound(to: UInt8.self) - UnsafeMutablePointer(mutating: base)
                    var end = newline
                    if end > lineStart && base[end - 1] == 13 { end -= 1 }
                    lines += 1
                    try body(UnsafeBufferPointer(start: base + lineStart, count: end - lineStart), lines)
                    lineStart = newline + 1
                    from = lineStart
                }
            }
            lineNumber = lines
            consumed += lineStart - start
            start = lineStart
            if count - start > lineLimit { throw overlongLine() }
            let pending = count - start
            if try !fill() {
                guard start < buffer.count else { return }
                var end = buffer.count
                if buffer[end - 1] == 13 { end -= 1 }
                lineNumber += 1
                let number = lineNumber
                try buffer.withUnsafeBufferPointer { try body(UnsafeBufferPointer(rebasing: $0[start..<end]), number) }
                consumed += buffer.count - start
                start = buffer.count
                return
            }
            scanned = start + pending
        }
    }
}
