#if canImport(Glibc)
import Glibc
#endif
import StallAnalysis

/// Writing results and messages.
enum Output {
    /// Writes `text` to standard error.
    static func error(_ text: String) {
        var line = text
        if !line.hasSuffix("\n") { line += "\n" }
        _ = writeAll(2, Array(line.utf8)[...])
    }

    /// Writes all of `bytes` to `fd`; false on failure (errno says why).
    static func writeAll(_ fd: Int32, _ bytes: ArraySlice<UInt8>) -> Bool {
        var rest = bytes
        while !rest.isEmpty {
            let n = rest.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            rest = rest.dropFirst(n)
        }
        return true
    }

    /// Writes `text` to `path`, or to standard output when `path` is nil or `-`; see ``write(_:to:)-([UInt8],_)``.
    static func write(_ text: String, to path: String?) throws {
        try write(Array(text.utf8), to: path)
    }

    /// Writes `bytes` to `path`, or to standard output when `path` is nil or `-`; see ``write(to:_:)``.
    static func write(_ bytes: [UInt8], to path: String?) throws {
        try write(to: path) { try $0.write(contentsOf: bytes) }
    }

    /// Writes what `body` writes into its sink to `path`, or to standard output when `path` is nil or `-`, as
    /// it comes (an export's output is never held whole).
    ///
    /// - A regular file (or a new one) is replaced atomically: a temporary file in the same directory is written,
    ///   fsynced, given the old file's mode (and owner, when run as root) and renamed over it, so a failure (of
    ///   the write, or of `body`) never leaves half a result in place of an older one.
    /// - A symbolic link is written through: the link stays, its final target is treated as above.
    /// - A device, FIFO or socket is opened (a socket connected) and written; it is never replaced.
    static func write(to path: String?, _ body: (ByteSink) throws -> Void) throws {
        guard let path, path != "-" else { return try write(fd: 1, shownAs: "<stdout>", body) }
        let target = try resolvingLinks(path)
        var info = stat()
        guard lstat(target, &info) == 0 else {
            guard errno == ENOENT else { throw failure(path) }
            return try replace(target, with: body, like: nil, shownAs: path)
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: try replace(target, with: body, like: info, shownAs: path)
        case S_IFDIR: throw AnalysisError.output(path: path, reason: "is a directory")
        case S_IFSOCK:
            let fd = try OutputSocket.connect(target, shownAs: path)
            defer { close(fd) }
            try write(fd: fd, shownAs: path, body)
        default:  // character or block device, FIFO: open and write, never replace
            let fd = open(target, O_WRONLY | O_CLOEXEC | O_NOCTTY)
            guard fd >= 0 else { throw failure(path) }
            defer { close(fd) }
            try write(fd: fd, shownAs: path, body)
        }
    }

    /// Writes what `body` writes to `fd`; a failed write throws, naming `path`.
    private static func write(fd: Int32, shownAs path: String, _ body: (ByteSink) throws -> Void) throws {
        let sink = ByteSink { bytes in
            guard writeAll(fd, bytes[...]) else { throw failure(path) }
        }
        try body(sink)
        try sink.flush()
    }

    /// The error for `path` from errno.
    static func failure(_ path: String) -> AnalysisError {
        AnalysisError.output(path: path, reason: String(cString: strerror(errno)))
    }

    /// `path` with every symbolic link in its last component followed (a dangling link gives its target's path).
    static func resolvingLinks(_ path: String) throws -> String {
        var current = path
        for _ in 0..<40 {
            var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let length = readlink(current, &buffer, Int(PATH_MAX))
            guard length >= 0 else {
                if errno == EINVAL || errno == ENOENT { return current }
                throw failure(path)
            }
            let link = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            current = link.hasPrefix("/") ? link : directory(of: current) + "/" + link
        }
        throw AnalysisError.output(path: path, reason: "too many levels of symbolic links")
    }

    /// The directory part of `path` (`.` when it has none).
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// Replaces the regular file `target` (or creates it) atomically; keeps `old`'s mode, and owner when root.
    static func replace(_ target: String, with body: (ByteSink) throws -> Void, like old: stat?, shownAs path: String)
        throws
    {
        let base = target.split(separator: "/").last.map(String.init) ?? "out"
        var template = Array((directory(of: target) + "/.\(base).stallprof-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { throw failure(path) }
        let temporary = String(cString: template)
        var done = false
        defer {
            if !done { unlink(temporary) }
        }
        let mode: mode_t
        if let old {
            mode = old.st_mode & 0o7777
            if geteuid() == 0 { _ = fchown(fd, old.st_uid, old.st_gid) }
        } else {
            let mask = umask(0)
            umask(mask)
            mode = 0o666 & ~mask
        }
        do {
            guard fchmod(fd, mode) == 0 else { throw failure(path) }
            try write(fd: fd, shownAs: path, body)
            guard fsync(fd) == 0 else { throw failure(path) }
        } catch {
            close(fd)
            throw error
        }
        guard close(fd) == 0, rename(temporary, target) == 0 else { throw failure(path) }
        done = true
        let directoryFD = open(directory(of: target), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            _ = fsync(directoryFD)
            close(directoryFD)
        }
    }
}
