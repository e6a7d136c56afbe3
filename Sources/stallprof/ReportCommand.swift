import StallAnalysis
import StallFormat

/// `stallprof report`: what captures say about their freezes, as text or JSON.
enum ReportCommand {
    static let usage = """
        USAGE: stallprof report [--json] [--top N] [capture options] [-o OUT] FILE...

        Summarizes stallprof captures: each capture's episodes (stalls and saturated periods: wall-clock start
        in UTC, kind, busy or blocked, duration, share of time running or ready to run, CPU share, samples),
        durations (p50, p90, max) and the hang rate (frozen seconds per recorded hour); then, for each group of
        episodes with alike stacks, the top self functions, the app frames on the stack (the loop's driver
        beside the leaf that burns the time), hints (recursion, a pass re-entered from the run loop, no app
        code) and what a blocked episode waited for (a mutex's owner and its stack, a system call).
        See docs/REPORT.md.

        OPTIONS:
          --json                JSON (schema stallprof.report/v1) instead of text
          --top N               functions listed per section in the text (default: 5)
        \(CaptureSelection.usage)
          -o, --output OUT      write to OUT instead of standard output
          FILE                  a capture file; - reads standard input
        """

    static func run(_ arguments: [String]) throws {
        let args = try Arguments(
            arguments, valued: CaptureSelection.valued.union(["--top", "--output"]),
            flags: CaptureSelection.flags.union(["--json"]), aliases: ["-o": "--output"])
        var options = StallReportOptions()
        options.capture = try CaptureSelection.foldOptions(args).capture
        if let raw = args.value("--top") {
            guard let top = Int(raw), top > 0 else { throw UsageError(message: "--top takes a positive number, not '\(raw)'") }
            options.topFunctions = top
        }
        guard !args.positionals.isEmpty else { throw UsageError(message: "no capture files") }
        var captures: [Capture] = []
        for path in args.positionals {
            var diagnostics = Diagnostics()  // an empty input: the same warning as every command, no data
            let opened = try Folder.openCapture(InputSource(path: path), diagnostics: &diagnostics)
            diagnostics.warnings.forEach { Output.error("warning: \($0)") }
            guard let stream = opened else { continue }
            let capture = try StallCaptureImporter.read(stream)
            capture.warnings.forEach { Output.error("warning: \($0)") }
            captures.append(capture)
        }
        let report = StallReport(captures: captures, options: options)
        report.warnings.forEach { Output.error("warning: \($0)") }
        try Output.write(args.flag("--json") ? report.json() : report.text(), to: args.value("--output"))
    }
}
