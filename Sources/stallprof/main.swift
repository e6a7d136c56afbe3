#if canImport(Glibc)
import Glibc
#endif
import StallAnalysis

/// stallprof: the analyzer. A tiny root command; each subcommand lives in its own file.
/// Exit codes: 0 ok, 1 failure, 64 usage, 65 bad data (sysexits.h).
enum ExitCode {
    static let success: Int32 = 0
    static let failure: Int32 = 1
    static let usage: Int32 = 64
    static let dataError: Int32 = 65
}

let rootUsage = """
    USAGE: stallprof <subcommand> [options]

    SUBCOMMANDS:
      fold        folded stacks from stallprof captures, perf script, macOS sample, folded files

    Run 'stallprof <subcommand> --help' for a subcommand's options.
    """

let subcommands: [String: (usage: String, run: ([String]) throws -> Void)] = [
    "fold": (FoldCommand.usage, FoldCommand.run),
]

/// The one place that turns errors into exit codes.
@MainActor func runMain(_ arguments: [String]) -> Int32 {
    guard let name = arguments.first else {
        Output.error(rootUsage)
        return ExitCode.usage
    }
    if name == "--help" || name == "-h" || name == "help" {
        print(rootUsage)
        return ExitCode.success
    }
    if name == "--version" {
        print("stallprof 0.1.0")
        return ExitCode.success
    }
    guard let command = subcommands[name] else {
        Output.error("error: unknown subcommand '\(name)'\n\n\(rootUsage)")
        return ExitCode.usage
    }
    do {
        try command.run(Array(arguments.dropFirst()))
        return ExitCode.success
    } catch is HelpRequested {
        print(command.usage)
        return ExitCode.success
    } catch let error as UsageError {
        Output.error("error: \(error.message)\n\n\(command.usage)")
        return ExitCode.usage
    } catch let error as AnalysisError {
        Output.error("error: \(error)")
        switch error {
        case .badData: return ExitCode.dataError
        case .usage: return ExitCode.usage
        case .input, .output: return ExitCode.failure
        }
    } catch {
        Output.error("error: \(error)")
        return ExitCode.failure
    }
}

exit(runMain(Array(CommandLine.arguments.dropFirst())))
