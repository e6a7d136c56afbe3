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
/// Records are encoded into a memory buffer by ``append(_:)`` and reach the file with `write(2)` at each
/// ``flush()``: once written, they survive the process being killed. Not thread-safe: one thread owns a writer.
///
/// It never harms the process it runs in:
/// - The file is opened with `O_APPEND`. When someone truncates it (log rotation's copytruncate), the next flush
///   notices (the file is shorter than what was written) and starts the file again with the header, the process
///   and image records and the begin records of the episodes still open, so what follows is a valid capture.
/// - A file that stops accepting writes (disk full, `RLIMIT_FSIZE`) never raises `SIGXFSZ` (blocked on this
///   thread around each write and consumed) and never leaves half a record behind (it is truncated away). The
///   pending buffer is bounded: past ``pendingLimit`` bytes, samples are dropped and counted; past the limit plus
///   1 MiB, every record is. Once the file accepts writes again, a ``DroppedRecord`` says what was lost.
public final class CaptureWriter {
    /// The file being written.
    public let path: String
    /// Most bytes pending before samples are dropped. Default: 4 MiB.
    public var pendingLimit = 4 << 20
    private var fd: Int32
    private var buffer: [UInt8] = []
    /// End offsets, in `buffer`, of its records.
    private var recordEnds: [Int] = []
    /// What starts the file again after a truncation: the process and image records, in order.
    private var preamble: [UInt8] = []
    /// Begin records of the episodes whose end is not yet written, by id; `written` once the begin is in the file.
    private var openEpisodes: [(id: UInt32, bytes: [UInt8], written: Bool, ended: Bool)] = []
    /// Bytes this writer has written to the file since it was (re)started.
    private var fileBytes: Int = 0
    private var dropped = DroppedRecord(sampleCount: 0, otherCount: 0, firstNs: 0, lastNs: 0)
    /// Samples dropped so far, in all.
    public private(set) var droppedSampleCount: UInt64 = 0
    /// The write call (tests substitute one that fails like a full disk).
    var writeCall: (Int32, UnsafeRawPointer, Int) -> Int = CaptureWriter.writeWithoutSIGXFSZ
    /// How many times the file was found truncated and started again.
    public private(set) var restartCount = 0

    /// Creates (or truncates) the regular file `path` and writes the file header. A FIFO, device or directory is
    /// refused: writing to a pipe nobody reads would block the writer.
    public init(path: String) throws {
        self.path = path
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NONBLOCK, 0o644)
        if fd < 0 { throw CaptureWriteError(path: path, reason: "cannot create: \(String(cString: strerror(errno)))") }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            Glibc.close(fd)
            fd = -1
            throw CaptureWriteError(path: path, reason: "not a regular file")
        }
        buffer = CaptureFormat.header
        recordEnds = [buffer.count]
        try flush()
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    /// Bytes appended but not yet written.
    public var pendingByteCount: Int { buffer.count }

    /// Encodes `record` into the buffer; ``flush()`` writes it. Dropped (and counted) when the buffer is full.
    public func append(_ record: CaptureRecord) {
        let isSample: Bool
        if case .sample = record { isSample = true } else { isSample = false }
        if buffer.count >= pendingLimit + (isSample ? 0 : 1 << 20) {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let ns = UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
            if dropped.sampleCount + dropped.otherCount == 0 { dropped.firstNs = ns }
            dropped.lastNs = ns
            if isSample {
                dropped.sampleCount += 1
                droppedSampleCount += 1
            } else {
                dropped.otherCount += 1
            }
            return
        }
        let start = buffer.count
        record.encode(into: &buffer)
        recordEnds.append(buffer.count)
        switch record {
        case .process, .image: preamble.append(contentsOf: buffer[start...])
        case .stallBegin(let begin): openEpisodes.append((begin.stallID, Array(buffer[start...]), false, false))
        case .stallEnd(let end):
            for k in openEpisodes.indices where openEpisodes[k].id == end.stallID { openEpisodes[k].ended = true }
        default: break
        }
    }

    /// Writes everything appended so far to the file, then, if records were dropped, a ``DroppedRecord``.
    /// On failure what was not written stays pending (whole records only) and the error is thrown.
    public func flush() throws {
        guard fd >= 0 else { throw CaptureWriteError(path: path, reason: "already closed") }
        try restartIfTruncated()
        try writePending()
        guard dropped.sampleCount + dropped.otherCount > 0 else { return }
        dropped.encode(into: &buffer)
        recordEnds.append(buffer.count)
        dropped = DroppedRecord(sampleCount: 0, otherCount: 0, firstNs: 0, lastNs: 0)
        try writePending()
    }

    /// Flushes and closes the file. Further appends are dropped.
    public func close() throws {
        guard fd >= 0 else { return }
        defer {
            Glibc.close(fd)
            fd = -1
        }
        try flush()
    }

    /// A file shorter than what was written to it was truncated by someone else: write the file's start again.
    private func restartIfTruncated() throws {
        var info = stat()
        guard fileBytes > 0, fstat(fd, &info) == 0, Int(info.st_size) < fileBytes else { return }
        restartCount += 1
        fileBytes = Int(info.st_size)
        var start = CaptureFormat.header + preamble
        var ends: [Int] = [CaptureFormat.header.count, start.count]
        for episode in openEpisodes where episode.written {
            start += episode.bytes
            ends.append(start.count)
        }
        recordEnds = ends + recordEnds.map { $0 + start.count }
        buffer = start + buffer
    }

    /// Writes the buffer; keeps what was not written (from a record boundary) on failure.
    private func writePending() throws {
        var offset = 0
        defer {
            buffer.removeSubrange(0..<offset)
            recordEnds = recordEnds.compactMap { $0 > offset ? $0 - offset : nil }
        }
        while offset < buffer.count {
            let written = buffer.withUnsafeBytes { raw in
                writeCall(fd, raw.baseAddress! + offset, raw.count - offset)
            }
            if written < 0 {
                let code = errno
                if code == EINTR { continue }
                // A short write before the failure may have left part of a record: take it back off the file.
                let boundary = recordEnds.last { $0 <= offset } ?? 0
                if offset > boundary {
                    var info = stat()
                    if fstat(fd, &info) == 0, Int(info.st_size) >= offset - boundary {
                        _ = ftruncate(fd, info.st_size - off_t(offset - boundary))
                        fileBytes -= offset - boundary
                    }
                    offset = boundary
                }
                throw CaptureWriteError(path: path, reason: "write failed: \(String(cString: strerror(code)))")
            }
            offset += written
            fileBytes += written
        }
        // Everything is in the file: ended episodes are closed there, the others' begins are written.
        openEpisodes.removeAll(where: \.ended)
        for k in openEpisodes.indices { openEpisodes[k].written = true }
    }

    /// `write(2)` with SIGXFSZ blocked on this thread: past RLIMIT_FSIZE the call fails with EFBIG, and the
    /// signal it raised (thread-directed, default action: kill the process) is consumed before unblocking.
    static func writeWithoutSIGXFSZ(_ fd: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
        var block = sigset_t(), previous = sigset_t()
        sigemptyset(&block)
        sigaddset(&block, SIGXFSZ)
        pthread_sigmask(SIG_BLOCK, &block, &previous)
        let written = write(fd, bytes, count)
        let code = errno
        if written < 0 && code == EFBIG && sigismember(&previous, SIGXFSZ) == 0 {
            var zero = timespec(tv_sec: 0, tv_nsec: 0)
            while sigtimedwait(&block, nil, &zero) == SIGXFSZ {}
        }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        errno = code
        return written
    }
}

extension DroppedRecord {
    /// Appends the framed record.
    func encode(into out: inout [UInt8]) { CaptureRecord.dropped(self).encode(into: &out) }
}
