/// Errors of bisect and check that are not verdicts: a bad request, a command that cannot run, an unreadable or
/// foreign journal, an output that cannot be written. The CLI maps each kind to an exit code in one place.
///
/// StallBisect does not use `StallAnalysis.AnalysisError`: it depends on StallFormat only, and these are the
/// failures of running processes, not of reading profiles.
public enum BisectError: Error, CustomStringConvertible, Equatable {
    /// The request makes no sense: a bad option value, no command, a journal of other flags (exit 64).
    case usage(String)
    /// A file or program could not be opened, read or run (exit 65 in the CLI, like an unreadable input).
    case input(path: String, reason: String)
    /// A journal is not one: `path`, a line and a reason (exit 65).
    case badData(path: String, line: Int, reason: String)
    /// A file or directory could not be written or made (exit 1).
    case output(path: String, reason: String)

    /// One line for standard error.
    public var description: String {
        switch self {
        case .usage(let message): return message
        case .input(let path, let reason), .output(let path, let reason): return "\(path): \(reason)"
        case .badData(let path, let line, let reason): return "\(path): line \(line): \(reason)"
        }
    }
}
