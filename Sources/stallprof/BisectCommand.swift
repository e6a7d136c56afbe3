#if canImport(Glibc)
import Glibc
#endif
import StallBisect
import StallFormat

/// `stallprof bisect`: which flags, when disabled, end a main-thread freeze.
enum BisectCommand {
    /// What `bisect` is given.
    struct Run {
        var classifier = RunClassifierOptions()
        var search = BisectSearchOptions()
        var flags: [String] = []
        var json: String? = nil
        var junit: String? = nil
        var journal: String? = nil
        var resume = false
    }

    static var command: Command<Run> {
        let defaults = BisectSearchOptions()
        return Command(
            name: "bisect", abstract: "find which flags, when disabled, end a main-thread freeze",
            synopsis: "--flags A,B,C [options] -- COMMAND [ARGS...]",
            discussion: """
                Runs COMMAND (directly, no shell, each run in its own process group) with \
                \(EnvironmentName.disable) listing the flags disabled in that run, and finds every cause: a \
                minimal set of flags that must all be enabled for the main thread to freeze. Exit codes: 0 causes \
                found and verified, 1 none found or inconsistent, 3 not reproducible, 4 not attributable, 5 too \
                flaky, 64 usage. See docs/BISECT.md.
                """,
            groups: [
                OptionGroup(title: "OPTIONS", options: [
                    .value("--flags", value: "A,B,C", help: "the flags to search (names the app passes to "
                        + "StallFlags.isEnabled)") { run, raw in
                        run.flags = raw.split(separator: ",").map(String.init)
                        guard !run.flags.isEmpty else { throw UsageError(message: "--flags needs at least one flag name") }
                        guard Set(run.flags).count == run.flags.count else {
                            throw UsageError(message: "--flags names a flag twice")
                        }
                    },
                    .integer("--repeat", help: "clean runs that make a configuration good",
                             default: "from the calibration") { $0.search.repeats = $1 },
                    .integer("-j", "--jobs", help: "runs at once (parallel runs share the CPUs)",
                             default: "\(defaults.parallelism)") { $0.search.parallelism = $1 },
                    .integer("--max-runs", help: "most runs in total", default: "\(defaults.maxRuns)") {
                        $0.search.maxRuns = $1
                    },
                    .text("--json", value: "PATH", help: "write the result as JSON (schema stallprof.bisect/v1)") {
                        $0.json = $1
                    },
                    .text("--junit", value: "PATH", help: "write one JUnit test case per verified claim") { $0.junit = $1 },
                    .text("--journal", value: "PATH", help: "record every run as it happens (JSON Lines)") {
                        $0.journal = $1
                    },
                    .flag("--resume", help: "continue from --journal instead of starting anew") { $0.resume = true },
                ]),
                CheckCommand.classifierGroup.lifted(\.classifier),
            ],
            arguments: CheckCommand.commandArguments, runsProgram: true, defaults: Run(), body: run)
    }

    static func run(_ invocation: Invocation<Run>) throws {
        let given = invocation.options
        var request = Bisection.Request()
        (request.flags, request.classifier, request.search) = (given.flags, given.classifier, given.search)
        (request.journal, request.resume) = (given.journal, given.resume)
        request.classifier = try given.classifier.resolved()  // its errors first, then the command's
        request.command = try CheckCommand.commandAfterDashDash(invocation)
        let report = try Bisection.run(request)
        if let path = given.json { try Output.write(try report.json(), to: path) }
        if let path = given.junit { try Output.write(report.junit(), to: path) }
        try Output.appendStepSummary(report.markdownSummary())
        if let unconsulted = report.unconsultedFlags, !unconsulted.isEmpty {
            Output.error("stallprof: warning: the app never consulted: \(unconsulted.joined(separator: ", ")) (check the names)")
        }
        print(report.summary)
        guard report.verdict == .found else {
            throw Verdict("bisect: \(report.verdict.rawValue): \(report.message ?? "")", exitCode: report.verdict.exitCode)
        }
    }
}
