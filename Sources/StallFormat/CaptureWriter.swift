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
/// - One file, one process: an exclusive `flock` is taken before the file is truncated; a path another process
///   writes is refused, naming that process (``CaptureFileLock``).
/// - Its descriptor is checked before every write and close (`fstat`: the device and inode it was opened as). One
///   the app closed (and perhaps reused for a file of its own) is never touched again: the path is reopened
///   (``CaptureWriter+Reopen.swift``). A file deleted (link count 0), moved away or replaced at the path is
///   noticed at the next flush the same way and the path reopened; ``onReopen`` says why.
/// - A file that stops accepting writes (disk full, `RLIMIT_FSIZE`) never raises `SIGXFSZ` (blocked on this
///   thread around each write and consumed) and never leaves half a record behind (it is truncated away). The
///   pending buffer is bounded: past ``pendingLimit`` bytes, samples are dropped and counted; past the limit plus
///   1 MiB, every record is. Once the file accepts writes again, a ``DroppedRecord`` says what was lost.
public final class CaptureWriter {
    /// The file being written.
    public let path: String
    /// Most bytes pending before samples are dropped. Default: 4 MiB.
    public var pendingLimit = 4 << 20
    /// The descriptor, or -1 when there is none (closed, or given up as no longer the writer's).
    var fd: Int32
    /// The file `fd` was opened as.
    var identity: FileIdentity
    /// True once ``close()`` ran: nothing is reopened any more.
    var closed = false
    /// Why the path must be reopened, while reopening it has not succeeded (tried again at each flush).
    var pendingReopen: ReopenReason? = nil
    var buffer: [UInt8] = []
    /// End offsets, in `buffer`, of its records.
    var recordEnds: [Int] = []
    /// What starts the file again after a truncation or a reopen, in append order: the process and image records,
    /// and the begin records of the episodes whose end is not yet in the file.
    var kept: [KeptRecord] = []
    /// Bytes at the front of the buffer that start the file again (``startAgain(fileSize:)``), not yet written.
    var pendingStart = 0
    /// Bytes this writer has written to the file since it was (re)started.
    var fileBytes: Int = 0
    private var dropped = DroppedRecord(sampleCount: 0, otherCount: 0, firstNs: 0, lastNs: 0)
    /// Samples dropped so far, in all.
    public private(set) var droppedSampleCount: UInt64 = 0
    /// The write call (tests substitute one that fails like a full disk).
    var writeCall: (Int32, UnsafeRawPointer, Int) -> Int = CaptureWriter.writeWithoutSIGXFSZ
    /// How many times the file was found truncated and started again.
    public private(set) var restartCount = 0
    /// Called with a sentence each time the path is reopened (the descriptor was no longer the writer's, the file
    /// was deleted, moved away or replaced), on the flushing thread.
    public var onReopen: ((ReopenReason) -> Void)?

    /// Creates (or truncates) the regular file `path`, locks it and writes the file header. A FIFO, device or
    /// directory is refused: writing to a pipe nobody reads would block the writer. A file another process holds
    /// the lock of is refused too, untouched, with an error naming that process.
    public init(path: String) throws {
        self.path = path
        let (fd, info) = try Self.openCapture(path)
        self.fd = fd
        identity = FileIdentity(info)
        do {
            try CaptureFileLock.acquire(fd, identity: identity, path: path)
        } catch {
            Glibc.close(fd)
            throw error
        }
        guard ftruncate(fd, 0) == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            throw CaptureWriteError(path: path, reason: "cannot truncate: \(reason)")
        }
        buffer = CaptureFormat.header
        recordEnds = [buffer.count]
        try flush()
    }

    deinit { closeDescriptor() }

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
        case .process, .image: kept.append(KeptRecord(stallID: nil, bytes: Array(buffer[start...]), pendingEnd: buffer.count))
        case .stallBegin(let begin):
            kept.append(KeptRecord(stallID: begin.stallID, bytes: Array(buffer[start...]), pendingEnd: buffer.count))
        case .stallEnd(let end):
            for k in kept.indices where kept[k].stallID == end.stallID { kept[k].markEnded(at: buffer.count) }
        default: break
        }
    }

    /// Writes everything appended so far to the file, then, if records were dropped, a ``DroppedRecord``.
    /// On failure what was not written stays pending (whole records only) and the error is thrown.
    public func flush() throws {
        guard !closed else { throw CaptureWriteError(path: path, reason: "already closed") }
        try checkFile()
        try writePending()
        guard dropped.sampleCount + dropped.otherCount > 0 else { return }
        CaptureRecord.dropped(dropped).encode(into: &buffer)
        recordEnds.append(buffer.count)
        dropped = DroppedRecord(sampleCount: 0, otherCount: 0, firstNs: 0, lastNs: 0)
        try writePending()
    }

    /// Flushes and closes the file. Further appends are dropped.
    public func close() throws {
        guard !closed else { return }
        defer {
            closeDescriptor()
            closed = true
        }
        try flush()
    }

    /// A file shorter than what was written to it was truncated by someone else: write the file's start again.
    func restartIfTruncated(size: Int) {
        guard fileBytes > 0, size < fileBytes else { return }
        restartCount += 1
        startAgain(fileSize: size)
    }

    /// Puts the header and the kept records already written before the pending records: what the file (now
    /// `fileSize` bytes) needs to be read alone. A start put there earlier that never reached the file is
    /// replaced, not repeated.
    func startAgain(fileSize: Int) {
        if pendingStart > 0 {
            let count = pendingStart
            buffer.removeSubrange(0..<count)
            recordEnds = recordEnds.compactMap { $0 > count ? $0 - count : nil }
            for k in kept.indices { kept[k].shift(by: count) }
        }
        fileBytes = fileSize
        var start = CaptureFormat.header
        var ends = [start.count]
        var again: [(index: Int, end: Int)] = []
        for k in kept.indices where kept[k].pendingEnd == nil {
            start += kept[k].bytes
            ends.append(start.count)
            again.append((k, start.count))
        }
        recordEnds = ends + recordEnds.map { $0 + start.count }
        for k in kept.indices { kept[k].shift(by: -start.count) }
        for (k, end) in again { kept[k].pendingEnd = end }
        buffer = start + buffer
        pendingStart = start.count
    }

    /// Writes the buffer; keeps what was not written (from a record boundary) on failure.
    private func writePending() throws {
        guard fd >= 0 else {
            if buffer.isEmpty { return }
            throw CaptureWriteError(path: path, reason: "no file to write to (it could not be reopened)")
        }
        var offset = 0
        defer {
            buffer.removeSubrange(0..<offset)
            recordEnds = recordEnds.compactMap { $0 > offset ? $0 - offset : nil }
            // What is in the file now; an episode whose end is in the file needs its begin no more.
            for k in kept.indices { kept[k].shift(by: offset) }
            pendingStart = max(0, pendingStart - offset)
            kept.removeAll { $0.stallID != nil && $0.ended && $0.endPendingEnd == nil }
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

/// A record the file must start with again after a truncation or a reopen: a process or image record, or an
/// episode's begin record until its end is in the file.
struct KeptRecord {
    /// The episode, for a begin record; nil for the process and image records.
    let stallID: UInt32?
    let bytes: [UInt8]
    /// Its end offset in the pending buffer, or nil once it is in the file.
    var pendingEnd: Int?
    /// For a begin record: the end offset of its episode's end record in the pending buffer; nil before the end
    /// was appended and once it is in the file (then `ended`).
    private(set) var endPendingEnd: Int? = nil
    /// The end record was appended.
    private(set) var ended = false

    init(stallID: UInt32?, bytes: [UInt8], pendingEnd: Int) {
        self.stallID = stallID
        self.bytes = bytes
        self.pendingEnd = pendingEnd
    }

    /// Its episode's end record was appended, ending at `end` in the pending buffer.
    mutating func markEnded(at end: Int) {
        ended = true
        endPendingEnd = end
    }

    /// `count` bytes left the front of the buffer (written; or, negative, were put in front of it).
    mutating func shift(by count: Int) {
        if let end = pendingEnd { pendingEnd = end <= count ? nil : end - count }
        if let end = endPendingEnd { endPendingEnd = end <= count ? nil : end - count }
    }
}
