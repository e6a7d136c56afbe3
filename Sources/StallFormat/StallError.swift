/// The errors of stallprof's libraries that are not verdicts: an input that cannot be read or is not what it
/// should be, a program that cannot be run, a request that makes no sense, an output that cannot be written.
/// Each kind carries its exit code; the CLI turns it into the process's status in one place.
public enum StallError: Error, CustomStringConvertible, Equatable, ExitCodeCarrying {
    /// An input could not be opened or read (exit 66, sysexits' EX_NOINPUT).
    case input(path: String, reason: String)
    /// An input is not in the expected format or is corrupt: `path`, a position (`line 3`, `byte 12`, or empty)
    /// and a reason (exit 65).
    case badData(path: String, position: String, reason: String)
    /// A program could not be started: it is missing or not executable (exit 65, like an input that cannot be
    /// used).
    case cannotRun(program: String, reason: String)
    /// The request makes no sense (exit 64).
    case usage(String)
    /// An output could not be written, or a directory made (exit 1).
    case output(path: String, reason: String)

    /// One line for standard error.
    public var description: String {
        switch self {
        case .input(let path, let reason), .output(let path, let reason), .cannotRun(let path, let reason):
            return "\(path): \(reason)"
        case .badData(let path, let position, let reason):
            return position.isEmpty ? "\(path): \(reason)" : "\(path): \(position): \(reason)"
        case .usage(let message): return message
        }
    }

    /// The line standard error shows (the description).
    public var message: String { description }

    /// The exit status of each kind.
    public var exitCode: ExitCode {
        switch self {
        case .input: return .noInput
        case .badData, .cannotRun: return .dataError
        case .usage: return .usage
        case .output: return .failure
        }
    }
}
