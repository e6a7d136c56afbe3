#if canImport(Glibc)
import Glibc
#endif

/// An error writing a capture file.
public struct CaptureWriteError: Error, CustomStringConvertible {
    /// The file concerned.
    public var path: String
    /// What failed, with the system's reason.
    public var reason: String
    /// `path: reason`.
    public var description: String { "\(path): \(reason)" }
}

/// Appends records to a capture file.
///
/// Records are encoded into a memory buffer by ``append(_:)`` and reach the file with one `write(2)` per
/// ``flush()``: once written, they survive the process being killed. Not thread-safe: one thread owns a writer.
public final class CaptureWriter {
    /// The file being written.
    public let path: String
    private var fd: Int32
    private var buffer: [UInt8] = []

    /// Creates (or truncates) the regular file `path` and writes the file header. A FIFO, device or directory is
    /// refused: writing to a pipe nobody reads would block the writer.
    public init(path: String) throws {
        self.path = path
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, 0o644)
        if fd < 0 { throw CaptureWriteError(path: path, reason: "cannot create: \(String(cString: strerror(errno)))") }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            Glibc.close(fd)
            fd = -1
            throw CaptureWriteError(path: path, reason: "not a regular file")
        }
        buffer = CaptureFormat.header
        try flush()
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    /// Bytes appended but not yet written.
    public var pendingByteCount: Int { buffer.count }

    /// Encodes `record` into the buffer; ``flush()`` writes it.
    public func append(_ record: CaptureRecord) {
        record.encode(into: &buffer)
    }

    /// Writes everything appended so far to the file.
    public func flush() throws {
        guard fd >= 0 else { throw CaptureWriteError(path: path, reason: "already closed") }
        var offset = 0
        defer { buffer.removeSubrange(0..<offset) }
        while offset < buffer.count {
            let written = buffer.withUnsafeBytes { raw in
                write(fd, raw.baseAddress! + offset, raw.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                throw CaptureWriteError(path: path, reason: "write failed: \(String(cString: strerror(errno)))")
            }
            offset += written
        }
    }

    /// Flushes and closes the file. Further appends are dropped.
    public func close() throws {
        guard fd >= 0 else { return }
        try flush()
        Glibc.close(fd)
        fd = -1
    }
}
