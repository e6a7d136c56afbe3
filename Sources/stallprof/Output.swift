#if canImport(Glibc)
import Glibc
#endif
import StallAnalysis
import StallFormat

/// Writing results and messages.
enum Output {
    /// Writes `text` to standard error.
    /// Appends `markdown` to GitHub Actions' step summary, the file `$GITHUB_STEP_SUMMARY` names; nothing when it
    /// is not set.
    static func appendStepSummary(_ markdown: String) throws {
        guard let raw = getenv("GITHUB_STEP_SUMMARY"), case let path = String(cString: raw), !path.isEmpty else { return }
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure(path) }
        defer { close(fd) }
        guard writeAll(fd, Array(markdown.utf8)[...]) else { throw failure(path) }
    }

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

    /// Writes `bytes` to `path` (nil or `-`: standard output) as ``OutputTarget`` writes: opened and committed at
    /// once. Commands open their ``OutputTarget`` before reading their inputs instead.
    static func write(_ bytes: [UInt8], to path: String?) throws {
        try OutputTarget(path).finish(bytes)
    }

    /// The error for `path` from errno.
    static func failure(_ path: String) -> StallError {
        StallError.output(path: path, reason: String(cString: strerror(errno)))
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
        throw StallError.output(path: path, reason: "too many levels of symbolic links")
    }

    /// The directory part of `path` (`.` when it has none).
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
