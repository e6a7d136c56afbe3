#if canImport(Glibc)
import Glibc
#endif
import StallAnalysis

/// `stallprof export`: captures (or anything fold reads) as speedscope JSON, a Chrome trace or a pprof profile.
enum ExportCommand {
    /// What `export` is given.
    struct Run {
        var export = ExportOptions()
        var formatGiven = false
        var output: String? = nil
    }

    static var command: Command<Run> {
        Command(
            name: "export", abstract: "speedscope, Perfetto, Chrome trace or pprof from captures or anything fold reads",
            synopsis: "--format speedscope|chrome-trace|pprof|perfetto [options] [-o OUT] [FILE ... | -]",
            discussion: """
                Writes the episodes and samples of captures for the viewers engineers already use: Perfetto, \
                speedscope, chrome://tracing, go tool pprof. perf script text keeps its times too (an episode per \
                thread) and its addresses. Other inputs (macOS sample, folded stacks, speedscope) are folded and \
                exported without timestamps, which Perfetto cannot take. Several captures are exported together, \
                each timed from its own start; captures and untimed inputs cannot be mixed. pprof and perfetto are \
                binary: on a terminal, give -o. See docs/EXPORT.md.
                """,
            groups: [
                OptionGroup(title: "OPTIONS", options: [
                    .choice("--format", value: "FORMAT", help: "output format (required)", default: nil as ExportFormat?) {
                        $0.export.format = $1
                        $0.formatGiven = true
                    },
                    SharedOptions.output.lifted(\.output),
                ]),
                OptionGroup(title: "SPEEDSCOPE", options: [
                    .choice("--weight", value: "WEIGHT", help: "sample weights: wall milliseconds or 1 per sample",
                            default: Weight.ms) { $0.export.speedscope.weight = $1 == .ms ? .milliseconds : .samples },
                ]),
                OptionGroup(title: "CHROME-TRACE", options: [
                    .flag("--no-samples", help: "episodes and markers only, no stack samples (perfetto too)") {
                        $0.export.chromeTrace.samples = false
                        $0.export.perfetto.samples = false
                    },
                    .number("--untimed-ms", value: "N", help: "untimed input: milliseconds one count lasts on the "
                        + "time axis", default: "1", most: 1e9) {
                        $0.export.chromeTrace.untimedCountNs = max(1, UInt64($1 * 1e6))
                    },
                ]),
                OptionGroup(title: "PPROF", options: [
                    .flag("--no-gzip", help: "write the protobuf uncompressed") { $0.export.pprof.gzip = false },
                ]),
            ] + SharedOptions.reading(\.export.input, formatName: "--input-format"),
            arguments: fileArguments, defaults: Run(), body: run)
    }

    /// `--weight`'s values.
    enum Weight: String, CaseIterable {
        case ms, samples
    }

    static func run(_ invocation: Invocation<Run>) throws {
        let options = invocation.options.export
        guard invocation.options.formatGiven else {
            let names = ExportFormat.allCases.map(\.name)
            throw UsageError(message: "--format is required: " + names.dropLast().joined(separator: ", ") + " or " + names.last!)
        }
        let output = invocation.options.output
        if options.format.exporter?.isBinary == true, output == nil || output == "-", isatty(1) != 0 {
            throw UsageError(message: "\(options.format.rawValue) output is binary; give -o FILE or redirect standard output")
        }
        let inputs = try inputsOrStandardInput(invocation.positionals)
        let target = try OutputTarget(output)  // before reading, as the shell's `>`
        let sources = inputs.map(InputSource.init(path:))
        let (timeline, loadDiagnostics) = try Exporter.load(sources, options: options.input)
        loadDiagnostics.warnings.forEach { Output.error("stallprof: warning: \($0)") }
        // Empty inputs only: warned about, an empty export, exit 0 (as fold). Inputs with data but nothing to
        // export are bad data.
        let found = timeline.isTimed || timeline.sampleCount > 0
        if let error = InputLoader.noStackCounts(found: found, inputs: sources, diagnostics: loadDiagnostics) { throw error }
        // Written into the target as it is made, in pieces: memory holds the timeline and the format's tables, not
        // the output.
        var diagnostics = Diagnostics()
        defer { diagnostics.warnings.forEach { Output.error("stallprof: warning: \($0)") } }
        try Exporter.write(timeline, options: options, to: ByteSink { try target.write($0[...]) }, diagnostics: &diagnostics)
        try target.commit()
    }
}
