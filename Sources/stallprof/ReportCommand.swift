import StallAnalysis
import StallFormat

/// `stallprof report`: what captures say about their freezes, as text or JSON.
enum ReportCommand {
    /// What `report` is given.
    struct Run {
        var report = StallReportOptions()
        var json = false
        var output: String? = nil
    }

    static var command: Command<Run> {
        Command(
            name: "report", abstract: "a summary of captures: stalls, busy or blocked, where the time went",
            synopsis: "[--json] [--top N] [options] [-o OUT] FILE...",
            discussion: """
                Summarizes stallprof captures: each capture's episodes (stalls and saturated periods: wall-clock \
                start in UTC, kind, busy or blocked, duration, share of time running or ready to run, CPU share, \
                samples), durations (p50, p90, max) and the hang rate (frozen seconds per recorded hour); then, \
                for each group of episodes with alike stacks, the top self functions, the app frames on the stack \
                (the loop's driver beside the leaf that burns the time), hints (recursion, a pass re-entered from \
                the run loop, no app code) and what a blocked episode waited for (a mutex's owner and its stack, \
                a system call). --stall and --range choose the episodes and samples described. See docs/REPORT.md.
                """,
            groups: [
                OptionGroup(title: "OPTIONS", options: [
                    .flag("--json", help: "JSON (schema stallprof.report/v1) instead of text") { $0.json = true },
                    .integer("--top", help: "functions listed per section in the text",
                             default: "\(StallReportOptions().topFunctions)") { $0.report.topFunctions = $1 },
                    SharedOptions.output.lifted(\.output),
                ]),
                SharedOptions.captureSelection.lifted(\.report.capture),
            ],
            arguments: [("FILE", "a capture file; - reads standard input")], defaults: Run(), body: run)
    }

    static func run(_ invocation: Invocation<Run>) throws {
        guard !invocation.positionals.isEmpty else { throw UsageError(message: "no capture files") }
        var captures: [Capture] = []
        for path in invocation.positionals {
            var diagnostics = Diagnostics()  // an empty input: the same warning as every command, no data
            let opened = try Folder.openForDetection(InputSource(path: path), diagnostics: &diagnostics)
            diagnostics.warnings.forEach { Output.error("warning: \($0)") }
            guard let (stream, head) = opened else { continue }
            guard StallCaptureImporter.recognizes(head) else {
                throw AnalysisError.badData(
                    path: stream.name, position: "byte 0", reason: "not a stallprof capture (no STALLPRF header); "
                        + "report summarizes captures, fold, flamegraph, diff and export read other profiles")
            }
            let capture = try StallCaptureImporter.read(stream)
            capture.warnings.forEach { Output.error("warning: \($0)") }
            captures.append(capture)
        }
        let report = StallReport(captures: captures, options: invocation.options.report)
        report.warnings.forEach { Output.error("warning: \($0)") }
        let text = invocation.options.json ? report.json() : report.text()
        try Output.write(text, to: invocation.options.output)
    }
}
