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

    /// Writes `text` to `path`, or to standard output when `path` is nil or `-`. A file is written to a
    /// temporary name first and renamed, so a failure never leaves half a result in place of an older one.
    static func write(_ text: String, to path: String?) throws {
        try write(Array(text.utf8), to: path)
    }

    /// Writes `bytes` to `path`, or to standard output when `path` is nil or `-`; see ``write(_:to:)-(String,_)``.
    static func write(_ bytes: [UInt8], to path: String?) throws {
        guard let path, path != "-" else {
            guard writeAll(1, bytes[...]) else {
                throw AnalysisError.output(path: "<stdout>", reason: String(cString: strerror(errno)))
            }
            return
        }
        let temporary = path + ".tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw AnalysisError.output(path: path, reason: String(cString: strerror(errno))) }
        guard writeAll(fd, bytes[...]) else {
            let reason = String(cString: strerror(errno))
            close(fd)
            unlink(temporary)
            throw AnalysisError.output(path: path, reason: reason)
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw AnalysisError.output(path: path, reason: reason)
        }
    }
}
