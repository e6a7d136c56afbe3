#if canImport(Glibc)
import Glibc
#endif

/// Which file an open descriptor or a path refers to: its device and inode. A descriptor whose identity is not
/// the one it was opened with is no longer the writer's (the app closed it and the number was reused).
public struct FileIdentity: Equatable, Sendable {
    /// `st_dev`.
    public var device: UInt64
    /// `st_ino`.
    public var inode: UInt64

    /// An identity.
    public init(device: UInt64, inode: UInt64) {
        self.device = device
        self.inode = inode
    }

    /// The identity in `info`.
    public init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
    }

    /// The status of open descriptor `fd` (`fstat`), or nil when it is not open.
    public static func status(ofDescriptor fd: Int32) -> stat? {
        var info = stat()
        return fd >= 0 && fstat(fd, &info) == 0 ? info : nil
    }

}

/// The capture file's advisory lock: one capture file, one process.
///
/// An exclusive `flock` on the writer's open file description, taken without waiting before the file is
/// truncated. `flock`, not a POSIX `fcntl` lock: a POSIX lock is dropped when the process closes *any* descriptor
/// of the file (a reader in the same process would release it). `flock`, not an OFD lock: both belong to the open
/// file description (a forked child shares its parent's lock, and a child opening the path anew is refused), but
/// `/proc/locks` names the pid that took a `flock` lock, while it shows -1 for OFD locks.
enum CaptureFileLock {
    /// Locks `fd` (the file `identity` at `path`); throws naming the other process when it holds the lock.
    static func acquire(_ fd: Int32, identity: FileIdentity, path: String) throws {
        guard !tryLock(fd) else { return }
        let holder = holder(of: identity, path: path).map { "pid \($0)" } ?? "pid unknown"
        throw CaptureWriteError(
            path: path,
            reason: "in use by another process (\(holder)): one capture file per process; give each its own path, "
                + "for example STALLPROF_OUTPUT=app-%p.stalls")
    }

    /// Takes the lock without waiting: false when another open file description holds it. A file system without
    /// `flock` support (some network mounts) counts as locked by us: the capture is written without a lock.
    static func tryLock(_ fd: Int32) -> Bool {
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            if code == EINTR { continue }
            return code != EWOULDBLOCK
        }
        return true
    }

    /// The pid of the process holding the lock on the file `identity`: from `/proc/locks`, else the pid in the
    /// process record of the capture already in the file.
    static func holder(of identity: FileIdentity, path: String) -> Int32? {
        if let text = try? FileReader.contents(of: "/proc/locks"),
            let pid = holder(inLocks: String(decoding: text, as: UTF8.self), identity: identity)
        {
            return pid
        }
        guard let reader = try? FileReader(path: path, regularOnly: true),
            let prefix = try? reader.bytes(at: 0, count: 64 * 1024),
            let records = try? CaptureReader.records(prefix, source: path).records
        else { return nil }
        for case .process(let process) in records { return process.pid }
        return nil
    }

    /// The pid of the `FLOCK` line of `/proc/locks` text for the file `identity` (`1: FLOCK  ADVISORY  WRITE 1234
    /// fe:00:5350259 0 EOF`: pid, then device major and minor in hex and the inode in decimal).
    static func holder(inLocks text: String, identity: FileIdentity) -> Int32? {
        let dev = identity.device
        let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & ~0xfff)
        let minor = (dev & 0xff) | ((dev >> 12) & ~0xff)
        for line in text.split(separator: "\n") where !line.contains("->") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[1] == "FLOCK", let pid = Int32(fields[4]), pid > 0 else { continue }
            let file = fields[5].split(separator: ":")
            guard file.count == 3, UInt64(file[0], radix: 16) == major, UInt64(file[1], radix: 16) == minor,
                UInt64(file[2]) == identity.inode
            else { continue }
            return pid
        }
        return nil
    }
}
