#if canImport(Glibc)
import Glibc
#endif
import StallBisect
import StallFormat

/// `stallprof bisect`: which flags, when disabled, end a main-thread freeze.
enum BisectCommand {
    static let usage = """
        USAGE: stallprof bisect --flags A,B,C [--window SECONDS] [--repeat N] [-j N] [--max-runs N] \\
                                [--json PATH] [--junit PATH] [--journal PATH [--resume]] -- COMMAND [ARGS...]

        Runs COMMAND (directly, no shell, each run in its own process group) with \(EnvironmentName.disable) listing the
        flags disabled in that run, and finds every cause: a minimal set of flags that must all be enabled for
        the main thread to freeze. Exit codes: 0 causes found and verified, 1 none found or inconsistent,
        3 not reproducible, 4 not attributable, 5 too flaky, 64 usage. See docs/BISECT.md.

        OPTIONS:
          --flags A,B,C       the flags to search (names the app passes to StallFlags.isEnabled)
          --repeat N          clean runs that make a configuration good (default: from the calibration)
          -j, --jobs N        runs at once (default: 1; parallel runs share the CPUs)
          --max-runs N        most runs in total (default: 200)
          --json PATH         write the result as JSON (schema stallprof.bisect/v1)
          --junit PATH        write one JUnit test case per verified claim
          --journal PATH      record every run as it happens (JSON Lines)
          --resume            continue from --journal instead of starting anew
        \(CheckCommand.classifierOptionsHelp)
        """

    static func run(_ arguments: [String]) throws {
        let args = try Arguments(
            arguments,
            valued: CheckCommand.classifierOptionNames.union(
                ["--flags", "--repeat", "--jobs", "--max-runs", "--json", "--junit", "--journal"]),
            flags: ["--resume"], aliases: ["-j": "--jobs"])
        let classifier = try CheckCommand.classifierOptions(args)
        let command = try CheckCommand.commandAfterDashDash(args)
        let flags = (args.value("--flags") ?? "").split(separator: ",").map(String.init)
        guard !flags.isEmpty else { throw UsageError(message: "--flags needs at least one flag name") }
        guard Set(flags).count == flags.count else { throw UsageError(message: "--flags names a flag twice") }
        var options = BisectSearchOptions()
        options.repeats = try count(args, "--repeat")
        options.parallelism = try count(args, "--jobs") ?? 1
        options.maxRuns = try count(args, "--max-runs") ?? options.maxRuns
        if args.flag("--resume") && args.value("--journal") == nil { throw UsageError(message: "--resume needs --journal") }

        ProcessRunner.installInterruptHandlers()
        let runner = try BisectCommandRunner(command: command, classifier: classifier)
        let search = BisectSearch(flags: flags, options: options, run: runner.run)
        var journal: BisectJournal?
        if let path = args.value("--journal") {
            if args.flag("--resume") { try search.replay(BisectJournal.load(path: path, flags: flags, command: command)) }
            journal = try BisectJournal(path: path, flags: flags, command: command, resuming: args.flag("--resume"))
        }
        var progress = BisectProgress()
        defer { progress.finish() }  // also when interrupted
        var journalError: Error?
        search.onTrial = { trial in
            progress.report(trial)
            do { try journal?.append(trial) } catch { journalError = journalError ?? error }
        }
        let outcome = try search.search()
        progress.finish()
        if let journalError { throw journalError }

        let report = BisectReport(outcome, command: command, consulted: runner.consultedFlags)
        if let path = args.value("--json") { try Output.write(try report.json(), to: path) }
        if let path = args.value("--junit") { try Output.write(report.junit(), to: path) }
        if let path = getenv("GITHUB_STEP_SUMMARY").map({ String(cString: $0) }), !path.isEmpty {
            try appendSummary(report.markdownSummary(), to: path)
        }
        if let unconsulted = report.unconsultedFlags, !unconsulted.isEmpty {
            Output.error("warning: the app never consulted: \(unconsulted.joined(separator: ", ")) (check the names)")
        }
        print(summary(report))
        guard outcome.verdict == .found else {
            throw BisectVerdictError(verdict: outcome.verdict, message: outcome.message ?? "")
        }
    }

    private static func count(_ args: Arguments, _ name: String) throws -> Int? {
        guard let raw = args.value(name) else { return nil }
        guard let value = Int(raw), value > 0 else { throw UsageError(message: "\(name) takes a positive count, not '\(raw)'") }
        return value
    }

    private static func summary(_ report: BisectReport) -> String {
        func set(_ names: [String]) -> String { "{" + names.joined(separator: ", ") + "}" }
        var lines = ["verdict: \(report.verdict.rawValue) after \(report.runs) runs"]
        if report.verdict == .found {
            lines.append("causes: " + report.causes.map(set).joined(separator: " "))
            lines.append("fixes: " + (report.fixes.isEmpty ? "none alone" : report.fixes.joined(separator: ", ")))
            lines.append("minimal fix: " + set(report.minimalFix))
        }
        return lines.joined(separator: "\n")
    }

    private static func appendSummary(_ text: String, to path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0, Output.writeAll(fd, Array(text.utf8)[...]) else {
            throw BisectError.output(path: path, reason: String(cString: strerror(errno)))
        }
        close(fd)
    }
}
