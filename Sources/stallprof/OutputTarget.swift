#if canImport(Glibc)
import Glibc
#endif
import CStallOutput
import StallAnalysis
import StallFormat

/// Where `-o` writes, opened before the command reads its inputs, as the shell opens `>`'s file before the command
/// runs (so a file that cannot be written is refused before any work), and written when the result is ready:
///
/// - no path or `-`: standard output;
/// - a new file, or an existing regular file in the ordinary case: replaced atomically (a temporary file in the same
///   directory, fsynced, given the old file's mode and owner, renamed over it), so a failure never leaves half a
///   result. SIGINT, SIGTERM and SIGHUP remove the temporary file (CStallOutput's handler) and the target stays as
///   it was; the process then dies of the signal;
/// - an existing regular file that a replacement would not keep as it is (``placement(of:_:shownAs:)``: other hard
///   links, a directory the user may not write, an owner or group a new file could not have): written in place, as
///   `>` writes it, truncated only at the first write, once every input was read (`export` streams its result in
///   pieces); an interruption or a failure while writing leaves it partly written (no atomicity);
/// - a symbolic link: written through (its final target is treated as above);
/// - a device, FIFO or socket: opened (a socket connected) when the result is ready and written, never replaced.
///
/// A regular file the user may not write is refused (`Permission denied`, exit 1), as `>` refuses it, although its
/// directory would let it be replaced.
final class OutputTarget {
    private enum Kind {
        case standardOutput
        /// The guarded temporary file, renamed over `target` by ``commit()``.
        case replacing(fd: Int32, target: String)
        /// A regular file written in place; `truncated` once the first write emptied it.
        case inPlace(fd: Int32, truncated: Bool)
        /// A device, FIFO (`S_IFCHR`, `S_IFBLK`, `S_IFIFO`) or socket, opened at the first write.
        case special(target: String, type: mode_t, fd: Int32?)
        /// Committed: every descriptor closed.
        case done
    }

    private var kind: Kind
    /// The path as the user gave it, for messages.
    private let shownAs: String

    /// Opens `path` (nil or `-`: standard output) as described above.
    init(_ path: String?) throws {
        guard let path, path != "-" else {
            kind = .standardOutput
            shownAs = "<stdout>"
            return
        }
        shownAs = path
        let target = try Output.resolvingLinks(path)
        var info = stat()
        guard lstat(target, &info) == 0 else {
            guard errno == ENOENT else { throw Output.failure(path) }
            kind = try Self.temporary(for: target, like: nil, shownAs: path)
            return
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG:
            switch try Self.placement(of: target, info, shownAs: path) {
            case .replace: kind = try Self.temporary(for: target, like: info, shownAs: path)
            case .inPlace:
                let fd = open(target, O_WRONLY | O_CLOEXEC | O_NOCTTY)
                guard fd >= 0 else { throw Output.failure(path) }
                kind = .inPlace(fd: fd, truncated: false)
            }
        case S_IFDIR: throw StallError.output(path: path, reason: "is a directory")
        default: kind = .special(target: target, type: info.st_mode & S_IFMT, fd: nil)
        }
    }

    /// An output dropped before ``commit()`` (the command failed): its temporary file is removed, a file written
    /// in place stays as far as it was written.
    deinit {
        switch kind {
        case .standardOutput, .done: break
        case .replacing(let fd, _):
            close(fd)
            stalloutput_abandon()
        case .inPlace(let fd, _): close(fd)
        case .special(_, _, let fd): if let fd { close(fd) }
        }
    }

    /// How an existing regular file is written.
    enum Placement: Equatable {
        /// Replaced atomically.
        case replace
        /// Written in place, for the reason given (a replacement would not be the same file).
        case inPlace(String)
    }

    /// How the regular file `target` (its `lstat` in `info`) is written; throws `Permission denied` (or the reason
    /// the system gives) when the user may not write it. Access is checked with the effective ids
    /// (`faccessat(AT_EACCESS)`), so root may write any file, as with `>`.
    static func placement(of target: String, _ info: stat, shownAs path: String) throws -> Placement {
        guard faccessat(AT_FDCWD, target, W_OK, AT_EACCESS) == 0 else { throw Output.failure(path) }
        if info.st_nlink > 1 { return .inPlace("it has other hard links") }
        if faccessat(AT_FDCWD, Output.directory(of: target), W_OK | X_OK, AT_EACCESS) != 0 {
            return .inPlace("its directory is not writable")
        }
        let user = geteuid()
        guard user != 0 else { return .replace }  // root gives the new file the old owner and group
        if info.st_uid != user { return .inPlace("another user owns it") }
        if info.st_gid != getegid() {
            let count = getgroups(0, nil)
            var groups = [gid_t](repeating: 0, count: Int(max(count, 0)))
            if count < 0 || getgroups(count, &groups) < 0 || !groups.contains(info.st_gid) {
                return .inPlace("a new file could not have its group")
            }
        }
        return .replace
    }

    /// A guarded temporary file beside `target`, with `old`'s mode, owner and group (a new file: 0666 less the
    /// umask).
    private static func temporary(for target: String, like old: stat?, shownAs path: String) throws -> Kind {
        let base = target.split(separator: "/").last.map(String.init) ?? "out"
        var template = Array((Output.directory(of: target) + "/.\(base).stallprof-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { stalloutput_create($0.baseAddress!) }
        guard fd >= 0 else { throw Output.failure(path) }
        let mode: mode_t
        var kept = true
        if let old {
            mode = old.st_mode & 0o7777
            var mine = stat()
            if fstat(fd, &mine) == 0, mine.st_uid != old.st_uid || mine.st_gid != old.st_gid {
                kept = fchown(fd, old.st_uid, old.st_gid) == 0
            }
        } else {
            let mask = umask(0)
            umask(mask)
            mode = 0o666 & ~mask
        }
        guard kept, fchmod(fd, mode) == 0 else {
            let error = Output.failure(path)
            close(fd)
            stalloutput_abandon()
            throw error
        }
        return .replacing(fd: fd, target: target)
    }

    /// Writes `bytes` (in order, after any written before).
    func write(_ bytes: ArraySlice<UInt8>) throws {
        switch kind {
        case .standardOutput:
            guard Output.writeAll(1, bytes) else { throw Output.failure("<stdout>") }
        case .done: preconditionFailure("-o written after it was committed")
        case .replacing(let fd, _):
            guard Output.writeAll(fd, bytes) else { throw Output.failure(shownAs) }
        case .inPlace(let fd, let truncated):
            if !truncated {
                guard ftruncate(fd, 0) == 0 else { throw Output.failure(shownAs) }
                kind = .inPlace(fd: fd, truncated: true)
            }
            guard Output.writeAll(fd, bytes) else { throw Output.failure(shownAs) }
        case .special(let target, let type, let open):
            let fd = try open ?? opened(target, type)
            kind = .special(target: target, type: type, fd: fd)
            guard Output.writeAll(fd, bytes) else { throw Output.failure(shownAs) }
        }
    }

    /// Finishes the output: an empty result still empties (or creates) the file; a temporary file is fsynced and
    /// renamed over the target, and the directory fsynced.
    func commit() throws {
        switch kind {
        case .standardOutput, .done: return
        case .replacing(let fd, let target):
            kind = .done
            let synced = fsync(fd) == 0
            guard close(fd) == 0, synced else {
                let error = Output.failure(shownAs)
                stalloutput_abandon()
                throw error
            }
            guard stalloutput_commit(target) == 0 else {
                let error = Output.failure(shownAs)
                stalloutput_abandon()
                throw error
            }
            let directory = Glibc.open(Output.directory(of: target), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if directory >= 0 {
                _ = fsync(directory)
                close(directory)
            }
        case .inPlace(let fd, _):
            try write([][...])
            kind = .done
            let synced = fsync(fd) == 0
            guard close(fd) == 0, synced else { throw Output.failure(shownAs) }
        case .special:
            try write([][...])
            guard case .special(_, _, let fd?) = kind else { return }
            kind = .done
            close(fd)
        }
    }

    /// Writes `bytes` and commits.
    func finish(_ bytes: [UInt8]) throws {
        try write(bytes[...])
        try commit()
    }

    /// The device, FIFO or socket `target`, opened (connected) for writing.
    private func opened(_ target: String, _ type: mode_t) throws -> Int32 {
        if type == S_IFSOCK { return try OutputSocket.connect(target, shownAs: shownAs) }
        let fd = Glibc.open(target, O_WRONLY | O_CLOEXEC | O_NOCTTY)
        guard fd >= 0 else { throw Output.failure(shownAs) }
        return fd
    }
}
