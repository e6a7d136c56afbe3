#if canImport(Glibc)
import Glibc
#endif
import StallAnalysis
import StallBisect

/// stallprof: the analyzer. A tiny root command; each subcommand lives in its own file.
/// Exit codes: 0 ok, 1 failure, 64 usage, 65 bad data (sysexits.h); bisect's own: 3, 4, 5; check's 125.
enum ExitCode {
    static let success: Int32 = 0
    static let failure: Int32 = 1
    static let usage: Int32 = 64
    static let dataError: Int32 = 65
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

let rootUsage = """
    USAGE: stallprof <subcommand> [options]

    SUBCOMMANDS:
      fold        folded stacks from stallprof captures, perf script, macOS sample, folded files
      flamegraph  interactive SVG flame graph from folded stacks or captures
      diff        two-count folded stacks (before, after) for a differential flame graph
      export      speedscope, Chrome trace (Perfetto) or pprof from captures or anything fold reads
      report      a summary of captures: stalls, busy or blocked, where the time went
      bisect      find which flags, when disabled, end a main-thread freeze
      check       run a command once: exit 0 good, 1 frozen, 125 inconclusive (for git bisect run)

    Run 'stallprof <subcommand> --help' for a subcommand's options.
    """

let subcommands: [String: (usage: String, run: ([String]) throws -> Void)] = [
    "fold": (FoldCommand.usage, FoldCommand.run),
    "flamegraph": (FlameGraphCommand.usage, FlameGraphCommand.run),
    "diff": (DiffCommand.usage, DiffCommand.run),
    "report": (ReportCommand.usage, ReportCommand.run),
    "export": (ExportCommand.usage, ExportCommand.run),
    "bisect": (BisectCommand.usage, BisectCommand.run),
    "check": (CheckCommand.usage, CheckCommand.run),
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
        case .badData, .input: return ExitCode.dataError  // an input that is missing or unreadable is bad data too
        case .usage: return ExitCode.usage
        case .output: return ExitCode.failure
        }
    } catch let error as BisectError {
        Output.error("error: \(error)")
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
    } catch let error as RunInterrupted {
        Output.error("error: \(error)")
        return ExitCode.interrupted
    } catch {
        Output.error("error: \(error)")
        return ExitCode.failure
    }
}

exit(runMain(Array(CommandLine.arguments.dropFirst())))
