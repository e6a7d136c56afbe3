#if canImport(Glibc)
import Glibc
#endif
import StallAnalysis

/// `stallprof export`: captures (or anything fold reads) as speedscope JSON, a Chrome trace or a pprof profile.
enum ExportCommand {
    static let usage = """
        USAGE: stallprof export --format speedscope|chrome-trace|pprof [options] [-o OUT] [FILE ... | -]

        Writes the episodes and samples of captures for the viewers engineers already use: speedscope, Perfetto
        or chrome://tracing, go tool pprof. Other inputs (perf script, macOS sample, folded stacks, speedscope) are
        folded and exported without timestamps. Several captures are exported together, each timed from its own
        start; captures and untimed inputs cannot be mixed. See docs/EXPORT.md.

        OPTIONS:
          --format FORMAT       output: speedscope, chrome-trace or pprof (required)
          -o, --output OUT      write to OUT instead of standard output (pprof: required on a terminal)
          --input-format FMT    input format: auto|stallprof|perf|sample|folded|speedscope (default: auto)
        \(CaptureSelection.usage)

        speedscope:
          --weight ms|samples   sample weights: wall milliseconds (default) or 1 per sample

        chrome-trace:
          --no-samples          episodes and markers only, no stack samples
          --untimed-ms N        untimed input: milliseconds one count lasts on the time axis (default: 1)

        pprof:
          --no-gzip             write the protobuf uncompressed

        untimed inputs (as fold):
          --demangle            readable Swift names
          --merge-recursion     collapse directly repeated frames
          --strict              unrecognized lines are an error
          --profile-names       speedscope input: each profile's name as a root frame
        """

    static func run(_ arguments: [String]) throws {
        let args = try Arguments(
            arguments,
            valued: CaptureSelection.valued.union(["--format", "--output", "--input-format", "--weight", "--untimed-ms"]),
            flags: CaptureSelection.flags.union([
                "--no-samples", "--no-gzip", "--demangle", "--merge-recursion", "--strict", "--profile-names",
            ]),
            aliases: ["-o": "--output"])
        var options = ExportOptions()
        guard let format = try args.choice("--format", as: ExportFormat.self) else {
            throw UsageError(message: "--format is required: speedscope, chrome-trace or pprof")
        }
        options.format = format
        options.input = try CaptureSelection.foldOptions(args)
        options.input.format = try args.choice("--input-format", as: InputFormat.self) ?? .auto
        options.input.perf.strict = args.flag("--strict")
        options.input.folded.strict = args.flag("--strict")
        options.input.transforms.demangleSwift = args.flag("--demangle")
        options.input.transforms.mergeRecursion = args.flag("--merge-recursion")
        options.input.speedscope.profileRoot = args.flag("--profile-names")
        switch args.value("--weight") {
        case nil, "ms": options.speedscope.weight = .milliseconds
        case "samples": options.speedscope.weight = .samples
        case let other?: throw UsageError(message: "--weight must be ms or samples, not '\(other)'")
        }
        options.chromeTrace.samples = !args.flag("--no-samples")
        if let raw = args.value("--untimed-ms") {
            guard let ms = Double(raw), ms > 0, ms <= 1e9 else {
                throw UsageError(message: "--untimed-ms takes a number of milliseconds above 0, not '\(raw)'")
            }
            options.chromeTrace.untimedCountNs = max(1, UInt64(ms * 1e6))
        }
        options.pprof.gzip = !args.flag("--no-gzip")
        let output = args.value("--output")
        if format == .pprof, output == nil || output == "-", isatty(1) != 0 {
            throw UsageError(message: "pprof output is binary; give -o FILE or redirect standard output")
        }

        var inputs = args.positionals
        if inputs.isEmpty {
            guard isatty(0) == 0 else { throw UsageError(message: "no input files (use - for standard input)") }
            inputs = ["-"]
        }
        let sources = inputs.map(InputSource.init(path:))
        let (timeline, loadDiagnostics) = try Exporter.load(sources, options: options.input)
        loadDiagnostics.warnings.forEach { Output.error("warning: \($0)") }
        // Empty inputs only: warned about, an empty export, exit 0 (as fold). Inputs with data but nothing to
        // export are bad data.
        if !timeline.isTimed, timeline.sampleCount == 0, loadDiagnostics.emptyInputs.count < inputs.count {
            throw AnalysisError.badData(path: inputs.joined(separator: ", "), position: "", reason: "no stack counts found")
        }
        var diagnostics = Diagnostics()
        let bytes = try Exporter.write(timeline, options: options, diagnostics: &diagnostics)
        diagnostics.warnings.forEach { Output.error("warning: \($0)") }
        try Output.write(bytes, to: output)
    }
}
