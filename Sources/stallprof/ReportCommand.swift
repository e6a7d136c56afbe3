import StallAnalysis
import StallFormat

/// `stallprof report`: what captures say about their freezes, or a summary of another profile, as text or JSON.
enum ReportCommand {
    /// What `report` is given.
    struct Run {
        var report = StallReportOptions()
        /// How inputs are read (`--format`, `--strict`, the perf and other formats' options, the capture options).
        var input = FoldOptions()
        var json = false
        var output: String? = nil
        /// `--fail-on`: the gate's conditions, in order.
        var failOn: [GateCondition] = []
        /// `--junit`: where the gate's JUnit XML goes.
        var junit: String? = nil
    }

    static var command: Command<Run> {
        Command(
            name: "report", abstract: "a summary of captures (stalls, busy or blocked, where the time went) or profiles",
            synopsis: "[--json] [--top N] [options] [-o OUT] FILE...",
            discussion: """
                Summarizes stallprof captures: each capture's episodes (stalls and saturated periods: wall-clock \
                start in UTC, kind, busy or blocked, duration, share of time running or ready to run, CPU share, \
                samples), durations (p50, p90, max) and the hang rate (frozen seconds per recorded hour); then, \
                for each group of episodes with alike stacks, the top self functions, the app frames on the stack \
                (the loop's driver beside the leaf that burns the time), hints (recursion, a pass re-entered from \
                the run loop, no app code) and what a blocked episode waited for (a mutex's owner and its stack, \
                a system call). --stall, --target and --range choose the episodes and samples described; \
                episodes of watched targets other than the main queue (--target's names) are reported target by \
                target.
                Other profiles ('stallprof fold' reads them: perf script, macOS sample, folded stacks, speedscope) \
                get a summary like 'perf report --stdio': the total in the profile's unit, the top self and total \
                functions, the heaviest stack, recursion (JSON schema stallprof.profile-report/v1). Captures and \
                other profiles cannot be mixed in one report (exit 64). See docs/REPORT.md.
                """,
            groups: [
                OptionGroup(title: "OPTIONS", options: [
                    .flag("--json", help: "JSON (schema stallprof.report/v2; other profiles: "
                        + "stallprof.profile-report/v1) instead of text") { $0.json = true },
                    .integer("--top", help: "functions listed per section (other profiles: also in the JSON)",
                             default: "\(StallReportOptions().topFunctions)") { $0.report.topFunctions = $1 },
                    .text("--app-module", value: "NAME", help: "count the Swift module NAME as the app's code "
                        + "(captures; repeatable)", default: "the module of the executable's entry point, or "
                        + "named after it") { $0.report.appModules.append($1) },
                    SharedOptions.output.lifted(\.output),
                ]),
                OptionGroup(title: "CI GATE (captures)", options: [
                    .value("--fail-on", value: "EXPR", help: "exit 1 when EXPR holds, listing the episodes that make it "
                        + "hold: stall>500ms, saturated>1s, busy>..., blocked>200ms, episode>... (any), "
                        + "hang-rate>5s/h, episodes>0; repeatable (any one fails)", default: "no gate") {
                        $0.failOn.append(try GateCondition(parsing: $1))
                    },
                    .text("--junit", value: "FILE", help: "with --fail-on: JUnit XML, one test case per condition "
                        + "(also a table in $GITHUB_STEP_SUMMARY when set)") { $0.junit = $1 },
                ]),
            ] + SharedOptions.reading(\.input),
            arguments: fileArguments, defaults: Run(), body: run)
    }

    static func run(_ invocation: Invocation<Run>) throws {
        if invocation.options.junit != nil && invocation.options.failOn.isEmpty {
            throw UsageError(message: "--junit writes the result of --fail-on: give one")
        }
        let inputs = try inputsOrStandardInput(invocation.positionals)
        var reading = invocation.options.input
        if reading.names == nil && !invocation.options.json { reading.names = .short }  // a person reads the text
        var options = invocation.options.report
        options.capture = reading.capture
        let output = try OutputTarget(invocation.options.output)  // before reading, as the shell's `>`
        var diagnostics = Diagnostics()  // an empty input: the same warning as every command, no data
        let input: ReportInput
        do {
            input = try ReportInput.read(
                inputs.map(InputSource.init(path:)), options: reading, diagnostics: &diagnostics)
        } catch {
            // What was skipped on the way (lines whose count exceeds 2^64-1) says why no stack is left.
            diagnostics.warnings.forEach { Output.error("stallprof: warning: \($0)") }
            throw error
        }
        diagnostics.warnings.forEach { Output.error("stallprof: warning: \($0)") }
        let text: String
        var gate: ReportGate?
        switch input {
        case .captures(let captures):
            let report = StallReport(captures: captures, options: options)
            report.warnings.forEach { Output.error("stallprof: warning: \($0)") }
            text = invocation.options.json ? report.json() : report.text()
            if !invocation.options.failOn.isEmpty { gate = ReportGate(invocation.options.failOn, report: report) }
        case .profile(let stacks, let inputs):
            guard invocation.options.failOn.isEmpty else {
                throw UsageError(message: "--fail-on checks stallprof captures, not other profiles")
            }
            let report = ProfileReport(stacks, inputs: inputs, options: options)
            if report.totalOverflows {
                Output.error("stallprof: warning: the profile's total exceeds 2^64-1: the total and its shares are rounded")
            }
            text = invocation.options.json ? report.json() : report.text()
        }
        try output.finish(Array(text.utf8))
        guard let gate else { return }
        if let path = invocation.options.junit { try Output.write(gate.junit(), to: path) }
        try Output.appendStepSummary(gate.markdownSummary())
        if gate.failed {
            throw Verdict(gate.text.split(separator: "\n").map { "stallprof: " + $0 }.joined(separator: "\n"),
                          exitCode: .failure)
        }
    }
}
