#if canImport(Glibc)
import Glibc
#endif
import StallAnalysis
import StallBisect
import StallFormat

/// stallprof: the analyzer. A tiny root command; each subcommand lives in its own file.
/// Exit codes: 0 ok, 1 failure, 64 usage, 65 bad data, 66 an input that cannot be opened or read (sysexits.h);
/// bisect's own: 3, 4, 5; check's 125.
enum ExitCode {
    static let success: Int32 = 0
    static let failure: Int32 = 1
    static let usage: Int32 = 64
    static let dataError: Int32 = 65
    /// An input that does not exist or cannot be read (EX_NOINPUT).
    static let noInput: Int32 = 66
    /// bisect: with nothing disabled the command does not freeze.
    static let notReproducible: Int32 = 3
    /// bisect: with everything disabled the command still freezes.
    static let notAttributable: Int32 = 4
    /// bisect: too flaky for a confident answer.
    static let tooFlaky: Int32 = 5
    /// check: inconclusive run (git bisect's "skip").
    static let skip: Int32 = 125
    /// Interrupted by SIGINT or SIGTERM (128 + 2).
    static let interrupted: Int32 = 130
}

/// Every subcommand, in the order the root usage lists them.
let subcommands: [Subcommand] = [
    FoldCommand.command, FlameGraphCommand.command, DiffCommand.command, ExportCommand.command,
    ReportCommand.command, SymbolicateCommand.command, BisectCommand.command, CheckCommand.command, ShellCommands.completions, ShellCommands.man,
]

let rootUsage = UsageText.root(subcommands)

/// What `--version` and `-V` print.
let version = "stallprof 0.1.0"

/// A usage error: one line saying what is wrong, then where the help is (never the whole usage).
func usageError(_ message: String, command: String?) -> Int32 {
    let help = command.map { "stallprof \($0) --help" } ?? "stallprof --help"
    Output.error("stallprof: error: \(message)\nsee `\(help)`")
    return ExitCode.usage
}

/// Options the environment gives, as arguments before the command line's: `STALLPROF_DEBUG_DIRS` (colon-separated)
/// as `--debug-dir`s, for the commands that take it.
func environmentArguments(for command: Subcommand) -> [String] {
    guard command.accepts("--debug-dir"), let raw = getenv(EnvironmentName.debugDirectories) else { return [] }
    return String(cString: raw).split(separator: ":").flatMap { ["--debug-dir", String($0)] }
}

/// `report --fail-on`: a condition held. The report was written; `text` lists each condition and its episodes.
struct GateFailed: Error {
    /// `failed: stall>500ms: stall 1 (busy, 0.987 s at 21:00:00.123 UTC)`, one line per condition that holds.
    let text: String
}

/// The one place that turns errors into exit codes.
@MainActor func runMain(_ arguments: [String]) -> Int32 {
    guard let name = arguments.first else {
        Output.error(rootUsage)
        return ExitCode.usage
    }
    if name == "--help" || name == "-h" || (name == "help" && arguments.count == 1) {
        print(rootUsage)
        return ExitCode.success
    }
    if name == "help" {
        guard arguments.count == 2, let command = subcommands.first(where: { $0.name == arguments[1] }) else {
            return usageError("help takes one subcommand name, not '\(arguments.dropFirst().joined(separator: " "))'",
                              command: nil)
        }
        print(command.usage)
        return ExitCode.success
    }
    if name == "--version" || name == "-V" {
        print(version)
        return ExitCode.success
    }
    guard let command = subcommands.first(where: { $0.name == name }) else {
        return usageError("unknown subcommand '\(name)'", command: nil)
    }
    do {
        try command.run(environmentArguments(for: command) + Array(arguments.dropFirst()))
        return ExitCode.success
    } catch is HelpRequested {
        print(command.usage)
        return ExitCode.success
    } catch is VersionRequested {
        print(version)
        return ExitCode.success
    } catch let error as UsageError {
        return usageError(error.message, command: command.name)
    } catch let error as AnalysisError {
        if case .usage = error { return usageError("\(error)", command: command.name) }
        Output.error("stallprof: error: \(error)")
        switch error {
        case .badData: return ExitCode.dataError
        case .input: return ExitCode.noInput
        case .usage: return ExitCode.usage
        case .output: return ExitCode.failure
        }
    } catch let error as BisectError {
        if case .usage = error { return usageError("\(error)", command: command.name) }
        Output.error("stallprof: error: \(error)")
        switch error {
        case .badData, .input: return ExitCode.dataError  // a command that cannot run is a bad input, as above
        case .usage: return ExitCode.usage
        case .output: return ExitCode.failure
        }
    } catch let error as BisectVerdictError {
        Output.error(error.description)
        switch error.verdict {
        case .found: return ExitCode.success
        case .none, .inconsistent: return ExitCode.failure
        case .notReproducible: return ExitCode.notReproducible
        case .notAttributable: return ExitCode.notAttributable
        case .tooFlaky: return ExitCode.tooFlaky
        }
    } catch let error as CheckVerdictError {
        Output.error(error.description)
        return error.verdict == .frozen ? ExitCode.failure : ExitCode.skip
    } catch let error as GateFailed {
        Output.error(error.text.split(separator: "\n").map { "stallprof: " + $0 }.joined(separator: "\n"))
        return ExitCode.failure
    } catch let error as RunInterrupted {
        Output.error("stallprof: error: \(error)")
        return ExitCode.interrupted
    } catch {
        Output.error("stallprof: error: \(error)")
        return ExitCode.failure
    }
}

exit(runMain(Array(CommandLine.arguments.dropFirst())))
