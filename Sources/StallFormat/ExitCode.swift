/// A process exit status, with the values stallprof's commands end with: sysexits.h's for bad requests and bad
/// inputs, bisect's own verdicts, and `git bisect run`'s "skip". An error that knows how the process should end
/// conforms to ``ExitCodeCarrying``; the CLI prints its message and exits with its code in one place
/// (swift-argument-parser's `ExitCode`).
public struct ExitCode: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// The status passed to `exit`.
    public var rawValue: Int32

    /// A status of `rawValue`.
    public init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// 0: the command did what was asked.
    public static let success = ExitCode(0)
    /// 1: a failure that is none of the others (an output that cannot be written, a gate that holds, a freeze).
    public static let failure = ExitCode(1)
    /// 3: bisect found that with nothing disabled the command does not freeze.
    public static let notReproducible = ExitCode(3)
    /// 4: bisect found that with everything disabled the command still freezes.
    public static let notAttributable = ExitCode(4)
    /// 5: bisect's runs were too flaky for a confident answer.
    public static let tooFlaky = ExitCode(5)
    /// 64 (EX_USAGE): the request makes no sense.
    public static let usage = ExitCode(64)
    /// 65 (EX_DATAERR): an input is not in the expected format, is corrupt, or a program cannot be run.
    public static let dataError = ExitCode(65)
    /// 66 (EX_NOINPUT): an input does not exist or cannot be read.
    public static let noInput = ExitCode(66)
    /// 125: `check` ran inconclusively (`git bisect run`'s "skip").
    public static let skip = ExitCode(125)
    /// 130 (128 + SIGINT): interrupted by SIGINT or SIGTERM.
    public static let interrupted = ExitCode(130)

    /// The number.
    public var description: String { "\(rawValue)" }
}

/// An error that says how the process ends: its exit code and the lines standard error shows.
public protocol ExitCodeCarrying: Error {
    /// The process's exit status.
    var exitCode: ExitCode { get }
    /// What standard error shows: for an error, one line that the CLI prefixes with `stallprof: error: `; for a
    /// verdict, its lines as they are.
    var message: String { get }
    /// True for a verdict (a bisection's, a run's, a gate's): an answer to the question asked, not a failure to
    /// answer it; its message is shown without the error prefix. Default: false.
    var isVerdict: Bool { get }
}

extension ExitCodeCarrying {
    /// An error, not a verdict.
    public var isVerdict: Bool { false }
}

/// A command answered the question it was asked, and the answer ends the process with a code other than 0: a
/// bisection without a verified cause, a frozen or inconclusive `check` run, a `report --fail-on` condition that
/// holds. Whatever was to be written has been written; standard error shows ``message`` as it is.
public struct Verdict: ExitCodeCarrying, CustomStringConvertible {
    /// The lines standard error shows.
    public var message: String
    /// The process's exit status.
    public var exitCode: ExitCode

    /// A verdict that shows `message` and exits with `exitCode`.
    public init(_ message: String, exitCode: ExitCode) {
        self.message = message
        self.exitCode = exitCode
    }

    /// A verdict.
    public var isVerdict: Bool { true }
    /// The message.
    public var description: String { message }
}
