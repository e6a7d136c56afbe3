#if canImport(Glibc)
import Glibc
#endif

/// A file that could not be opened or read: the path, what failed and the `errno` (0 when not a system error).
/// Not a capture format error: reading `/proc`, a journal or an ELF image fails this way.
public struct FileReadError: Error, CustomStringConvertible, Equatable {
    /// The file concerned.
    public var path: String
    /// Byte offset where reading failed (0 when it could not be opened).
    public var offset: Int
    /// The system error number, or 0.
    public var code: Int32
    /// What is wrong (`strerror`, or a sentence).
    public var reason: String
    /// `path: reason`.
    public var description: String { "\(path): \(reason)" }

    /// Creates an error.
    public init(path: String, offset: Int = 0, code: Int32 = 0, reason: String) {
        self.path = path
        self.offset = offset
        self.code = code
        self.reason = reason
    }
}

/// Reads files whole or in part with plain `open`/`read`/`pread` (retrying `EINTR`, reading until end of file,
/// so a `/proc` file longer than one page comes whole). The neutral reader shared by the capture reader, the
/// watchdog (`/proc/self/maps`), the analysis (ELF headers) and bisect (`/proc/<pid>/...`, journals).
public final class FileReader {
    /// The path opened.
    public let path: String
    private let fd: Int32

    /// Opens `path` read-only. `regularOnly`: refuse anything but a regular file (a path taken from untrusted
    /// input: never block on a FIFO or read a device); it also opens with `O_NONBLOCK`. Default: false.
    public init(path: String, regularOnly: Bool = false) throws {
        self.path = path
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | (regularOnly ? O_NONBLOCK : 0))
        if descriptor < 0 { throw Self.failure(path, offset: 0) }
        if regularOnly {
            var info = stat()
            guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
                close(descriptor)  // before `fd` is set: deinit does not run for a throw here
                throw FileReadError(path: path, reason: "not a regular file")
            }
        }
        fd = descriptor
    }

    deinit { close(fd) }

    /// Up to `count` bytes at `offset` (fewer only at end of file).
    public func bytes(at offset: Int, count: Int) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: max(count, 0))
        var got = 0
        while got < count {
            let n = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + got, count - got, off_t(offset + got)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Self.failure(path, offset: offset + got)
            }
            if n == 0 { break }
            got += n
        }
        return Array(buffer[0..<got])
    }

    /// Everything from the current position to the end of the file.
    public func readToEnd() throws -> [UInt8] {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Self.failure(path, offset: bytes.count)
            }
            if n == 0 { return bytes }
            bytes.append(contentsOf: chunk[0..<n])
        }
    }

    /// The whole file at `path`.
    public static func contents(of path: String) throws -> [UInt8] {
        try FileReader(path: path).readToEnd()
    }

    /// The whole file at `path` as UTF-8 text (invalid bytes replaced), or nil when it cannot be read.
    public static func text(of path: String) -> String? {
        (try? contents(of: path)).map { String(decoding: $0, as: UTF8.self) }
    }

    private static func failure(_ path: String, offset: Int) -> FileReadError {
        let code = errno
        return FileReadError(path: path, offset: offset, code: code, reason: String(cString: strerror(code)))
    }
}
