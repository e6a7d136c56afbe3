#if canImport(Glibc)
import Glibc
#endif

/// The capture path's placeholders, expanded when a watchdog starts: one file per process, so that a process tree
/// (every child that links the library inherits `STALLPROF_OUTPUT`) or tests run in parallel never share one.
///
/// - `%p`: the process id of the process starting the watchdog (a forked child's own).
/// - `%t`: the start time, UTC, ISO 8601 basic format with milliseconds: `20260114T093012.345Z`.
/// - `%%`: a `%`.
///
/// Any other `%` sequence is an error. (LLVM_PROFILE_FILE also has `%p`; its `%t` means `$TMPDIR`, ours the time.)
enum CapturePath {
    /// `template` with its placeholders replaced; throws ``StallWatchdogError/invalidConfiguration(_:)`` naming
    /// `origin` (the variable or field the path came from) for an unknown placeholder.
    static func expand(_ template: String, origin: String, pid: Int32 = getpid(),
                       wallNs: UInt64 = wallClockNs()) throws -> String
    {
        var result = ""
        var characters = template.makeIterator()
        while let character = characters.next() {
            guard character == "%" else {
                result.append(character)
                continue
            }
            switch characters.next() {
            case "p": result += String(pid)
            case "t": result += timestamp(wallNs)
            case "%": result += "%"
            case let other:
                let sequence = other.map { "%\($0)" } ?? "a lone % at the end"
                throw StallWatchdogError.invalidConfiguration(
                    "\(origin)=\(template): unknown placeholder \(sequence) (use %p for the pid, %t for the start time, %% for %)")
            }
        }
        return result
    }

    /// Checks `template`'s placeholders without expanding them.
    static func validate(_ template: String, origin: String) throws {
        _ = try expand(template, origin: origin, pid: 0, wallNs: 0)
    }

    /// `CLOCK_REALTIME` in nanoseconds since the Unix epoch.
    static func wallClockNs() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return UInt64(max(0, now.tv_sec)) * 1_000_000_000 + UInt64(max(0, now.tv_nsec))
    }

    /// `20260114T093012.345Z` for `wallNs` (UTC).
    static func timestamp(_ wallNs: UInt64) -> String {
        var seconds = time_t(wallNs / 1_000_000_000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let millis = Int(wallNs / 1_000_000 % 1000)
        let fraction = String(repeating: "0", count: 3 - String(millis).count) + String(millis)
        return "\(parts.tm_year + 1900)\(two(parts.tm_mon + 1))\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour))\(two(parts.tm_min))\(two(parts.tm_sec)).\(fraction)Z"
    }
}
