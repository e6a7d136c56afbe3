#if canImport(Glibc)
import Glibc
#endif

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
        if fd < 0 { throw AnalysisError.input(path: description, reason: String(cString: strerror(errno))) }
        var info = stat()
        if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            Glibc.close(fd)
            throw AnalysisError.input(path: description, reason: "is a directory")
        }
        return ByteStream(fd: fd, name: description, ownsDescriptor: true)
    }
}

/// A buffered reader over a file descriptor that can look ahead (for format detection) before streaming lines.
public final class ByteStream {
    /// How messages name this stream.
    public let name: String
    private let fd: Int32
    private let ownsDescriptor: Bool
    private var buffer: [UInt8] = []
    private var start = 0
    private var atEnd = false
    /// Bytes consumed so far (the offset of the next unread byte).
    public private(set) var consumed = 0
    /// Lines returned so far by ``nextLine()``.
    public private(set) var lineNumber = 0

    /// Wraps `fd`; closes it on deinit when `ownsDescriptor`.
    public init(fd: Int32, name: String, ownsDescriptor: Bool) {
        self.fd = fd
        self.name = name
        self.ownsDescriptor = ownsDescriptor
    }

    deinit { if ownsDescriptor { Glibc.close(fd) } }

    /// Reads more bytes into the buffer; false at end of input.
    private func fill() throws -> Bool {
        if atEnd { return false }
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeSubrange(0..<start)
            start = 0
        }
        let chunk = 1 << 16
        let old = buffer.count
        buffer.reserveCapacity(old + chunk)
        var n = 0
        buffer.append(contentsOf: repeatElement(0, count: chunk))
        repeat {
            n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + old, chunk) }
        } while n < 0 && errno == EINTR
        if n < 0 {
            buffer.removeSubrange(old...)
            throw AnalysisError.input(path: name, reason: "read failed: \(String(cString: strerror(errno)))")
        }
        buffer.removeSubrange((old + n)...)
        if n == 0 { atEnd = true }
        return n > 0
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
}
