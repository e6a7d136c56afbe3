#if canImport(Glibc)
import Glibc
#endif
import StallAnalysis
import StallBisect
import StallFormat

// stallprof: the analyzer. A tiny root command; each subcommand lives in its own file. Errors carry their exit
// codes (`ExitCode`: 0 ok, 1 failure, 64 usage, 65 bad data, 66 an input that cannot be opened or read; bisect's
// own 3, 4, 5; check's 125; 130 interrupted); `runMain(_:)` turns them into the process's status.

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
    return ExitCode.usage.rawValue
}

/// Options the environment gives, as arguments before the command line's: `STALLPROF_DEBUG_DIRS` (colon-separated)
/// as `--debug-dir`s, for the commands that take it.
func environmentArguments(for command: Subcommand) -> [String] {
    guard command.accepts("--debug-dir"), let raw = getenv(EnvironmentName.debugDirectories) else { return [] }
    return String(cString: raw).split(separator: ":").flatMap { ["--debug-dir", String($0)] }
}

extension UsageError: ExitCodeCarrying {
    /// 64.
    var exitCode: ExitCode { .usage }
}

/// The one place that turns errors into exit codes: every error that carries one (``ExitCodeCarrying``) prints
/// its message and ends with its code; a usage error also says where the help is; anything else is a failure.
@MainActor func runMain(_ arguments: [String]) -> Int32 {
    guard let name = arguments.first else {
        Output.error(rootUsage)
        return ExitCode.usage.rawValue
    }
    if name == "--help" || name == "-h" || (name == "help" && arguments.count == 1) {
        print(rootUsage)
        return ExitCode.success.rawValue
    }
    if name == "help" {
        guard arguments.count == 2, let command = subcommands.first(where: { $0.name == arguments[1] }) else {
            return usageError("help takes one subcommand name, not '\(arguments.dropFirst().joined(separator: " "))'",
                              command: nil)
        }
        print(command.usage)
        return ExitCode.success.rawValue
    }
    if name == "--version" || name == "-V" {
        print(version)
        return ExitCode.success.rawValue
    }
    guard let command = subcommands.first(where: { $0.name == name }) else {
        return usageError("unknown subcommand '\(name)'", command: nil)
    }
    do {
        try command.run(environmentArguments(for: command) + Array(arguments.dropFirst()))
        return ExitCode.success.rawValue
    } catch is HelpRequested {
        print(command.usage)
        return ExitCode.success.rawValue
    } catch is VersionRequested {
        print(version)
        return ExitCode.success.rawValue
    } catch let error as ExitCodeCarrying {
        if error.exitCode == .usage { return usageError(error.message, command: command.name) }
        Output.error(error.isVerdict ? error.message : "stallprof: error: " + error.message)
        return error.exitCode.rawValue
    } catch {
        Output.error("stallprof: error: \(error)")
        return ExitCode.failure.rawValue
    }
}

exit(runMain(Array(CommandLine.arguments.dropFirst())))
