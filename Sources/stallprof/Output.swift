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

    /// Writes `bytes` to `path` (nil or `-`: standard output) as ``OutputTarget`` writes: opened and committed at
    /// once. Commands open their ``OutputTarget`` before reading their inputs instead.
    static func write(_ bytes: [UInt8], to path: String?) throws {
        try OutputTarget(path).finish(bytes)
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
}
