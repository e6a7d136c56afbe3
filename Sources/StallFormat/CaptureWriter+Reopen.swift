#if canImport(Glibc)
import Glibc
#endif

extension CaptureWriter {
    /// Why the writer reopened its path.
    public enum ReopenReason: Equatable, Sendable, CustomStringConvertible {
        /// The descriptor (its number given) no longer referred to the capture file: the app closed it, and the
        /// number may now be one of the app's own files. It is never written, read or closed again.
        case descriptorTaken(Int32)
        /// The file was deleted (its link count is 0).
        case deleted
        /// The path names another file now, or none (moved away or replaced, as log rotation does).
        case replaced

        /// A sentence for standard error.
        public var description: String {
            switch self {
            case .descriptorTaken(let fd):
                return "descriptor \(fd) of the capture file was closed by someone else (and perhaps reused); it is left alone and the path reopened"
            case .deleted: return "the capture file was deleted; the path is created again"
            case .replaced: return "the capture file was moved away or replaced; the path is opened again"
            }
        }
    }

    /// The descriptor and the file it was opened as, while the writer has one.
    public var openFile: (descriptor: Int32, identity: FileIdentity)? { fd >= 0 ? (fd, identity) : nil }

    /// Opens `path` for appending (created when missing, never truncated here); refuses anything but a regular
    /// file.
    static func openCapture(_ path: String) throws -> (Int32, stat) {
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NONBLOCK, 0o644)
        if fd < 0 { throw CaptureWriteError(path: path, reason: "cannot create: \(String(cString: strerror(errno)))") }
        guard let info = FileIdentity.status(ofDescriptor: fd), (info.st_mode & S_IFMT) == S_IFREG else {
            Glibc.close(fd)
            throw CaptureWriteError(path: path, reason: "not a regular file")
        }
        return (fd, info)
    }

    /// Before a write: the descriptor still refers to the file it was opened as, and that file is still at the
    /// path; otherwise the path is reopened. A file shorter than what was written is started again.
    func checkFile() throws {
        guard fd >= 0 else {
            if let reason = pendingReopen { try reopen(reason, noticed: false) }
            return
        }
        guard let info = FileIdentity.status(ofDescriptor: fd), FileIdentity(info) == identity else {
            let lost = fd
            fd = -1  // no longer ours: never touched again, not even closed
            try reopen(.descriptorTaken(lost), noticed: true)
            return
        }
        if info.st_nlink == 0 {
            closeDescriptor()
            try reopen(.deleted, noticed: true)
            return
        }
        var atPath = stat()
        let found = stat(path, &atPath) == 0
        if found ? FileIdentity(atPath) != identity : errno == ENOENT {
            closeDescriptor()
            try reopen(.replaced, noticed: true)
            return
        }
        restartIfTruncated(size: Int(info.st_size))
    }

    /// Opens the path again after `reason`. The same file (its descriptor was taken) is appended to as it is; an
    /// empty or new file starts again with the header, the preamble and the open episodes' begin records; a file
    /// with other content, or one another process holds the lock of, is left alone (an error; tried again at the
    /// next flush).
    private func reopen(_ reason: ReopenReason, noticed: Bool) throws {
        pendingReopen = reason
        if noticed { onReopen?(reason) }
        let (newFD, info) = try Self.openCapture(path)
        let newIdentity = FileIdentity(info)
        let size = Int(info.st_size)
        if newIdentity != identity && size > 0 {
            Glibc.close(newFD)
            throw CaptureWriteError(
                path: path, reason: "now names another file of \(size) bytes, which is left alone; the capture is not written")
        }
        if !CaptureFileLock.tryLock(newFD) {
            // Our own earlier descriptor of the same file may still hold the lock (the app duplicated it).
            let holder = CaptureFileLock.holder(of: newIdentity, path: path)
            if holder != getpid() {
                Glibc.close(newFD)
                throw CaptureWriteError(
                    path: path, reason: "now in use by another process (pid \(holder.map(String.init) ?? "unknown")); the capture is not written")
            }
        }
        fd = newFD
        pendingReopen = nil
        if newIdentity == identity {
            restartIfTruncated(size: size)
        } else {
            identity = newIdentity
            startAgain(fileSize: 0)
        }
    }

    /// Closes the descriptor if it is still the file's (never a number the app reuses), and forgets it.
    func closeDescriptor() {
        guard fd >= 0 else { return }
        if let info = FileIdentity.status(ofDescriptor: fd), FileIdentity(info) == identity { Glibc.close(fd) }
        fd = -1
    }
}
