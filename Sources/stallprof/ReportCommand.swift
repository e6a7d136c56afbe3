import StallAnalysis
import StallFormat

/// `stallprof report`: a summary of captures: their stalls and where each one's samples were.
enum ReportCommand {
    static let usage = """
        USAGE: stallprof report [--state all|busy|blocked] [--top N] [--simplify-names] [--offsets] \\
                                [--no-demangle] [-o OUT] FILE...

        Summarizes stallprof captures: the process, a table of stalls (start, duration, busy or blocked, share
        of time running or ready to run, CPU share, samples, missed samples, thread) and, for each stall, the
        functions its samples were in (self = the leaf, total = anywhere on the stack) and, when the leaf is in a
        library, the innermost frames in the app's executable.

        OPTIONS:
          --state STATE     describe only busy or only blocked stalls (default: all)
          --top N           functions listed per stall (default: 5)
          --simplify-names  short Swift names (static BusyWork.descend(_:until:)) when the toolchain's
                            libswiftDemangle.so is found
          --offsets         append +0xOFFSET to resolved function names
          --no-demangle     keep Swift symbols mangled
          -o, --output OUT  write to OUT instead of standard output
          FILE              a capture file; - reads standard input
        """

    static func run(_ arguments: [String]) throws {
        let args = try Arguments(
            arguments, valued: ["--state", "--top", "--output"], flags: CaptureSelection.flags, aliases: ["-o": "--output"])
        var options = StallReportOptions()
        options.state = try args.choice("--state", as: StallStateFilter.self) ?? .all
        if let raw = args.value("--top") {
            guard let top = Int(raw), top > 0 else { throw UsageError(message: "--top takes a positive number, not '\(raw)'") }
            options.topFunctions = top
        }
        options.symbolizer = CaptureSelection.symbolizerOptions(args)
        guard !args.positionals.isEmpty else { throw UsageError(message: "no capture files") }
        var text = ""
        for path in args.positionals {
            let capture = try StallCaptureImporter.read(InputSource(path: path).open())
            capture.warnings.forEach { Output.error("warning: \($0)") }
            if !text.isEmpty { text += "\n" }
            text += StallReport(capture: capture, options: options).rendered()
        }
        try Output.write(text, to: args.value("--output"))
    }
}
