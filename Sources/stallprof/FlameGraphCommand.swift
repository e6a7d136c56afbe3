import StallAnalysis

/// `stallprof flamegraph`: an interactive SVG flame graph from folded stacks or anything fold reads.
enum FlameGraphCommand {
    /// What `flamegraph` is given.
    struct Run {
        var profile = ProfileRun()
        var graph = FlameGraphOptions()
        /// `--title`, when given (otherwise implied by --inverted and --flamechart).
        var title: String? = nil
        /// `--cp` / `--palette-file`: the palette file read before drawing and written after; nil: none.
        var paletteFile: String? = nil
    }

    static var command: Command<Run> {
        let graph = FlameGraphOptions()
        return Command(
            name: "flamegraph", abstract: "interactive SVG flame graph from folded stacks or captures",
            synopsis: "[options] [-o OUT.svg] [FILE ... | -]",
            discussion: """
                Draws an interactive SVG flame graph (standard output unless -o). FILE is folded stacks \
                (`stack count`, or `stack before after` for a differential graph) or anything 'stallprof fold' \
                reads, folded on the fly. See docs/FLAMEGRAPH.md.
                """,
            groups: [OptionGroup(title: "OPTIONS (flamegraph.pl's names and meanings)", options: [
                .text("--title", value: "TEXT", help: "title; Icicle Graph with --inverted, Flame Chart with "
                    + "--flamechart", default: graph.title) { $0.title = $1 },
                .text("--subtitle", value: "TEXT", help: "second title line") { $0.graph.subtitle = $1 },
                .integer("--width", value: "PX", help: "image width", default: "\(graph.width)", minimum: 40) {
                    $0.graph.width = $1
                },
                .integer("--height", value: "PX", help: "frame height", default: "\(graph.frameHeight)", minimum: 2) {
                    $0.graph.frameHeight = $1
                },
                .value("--minwidth", value: "PX|N%", help: "omit frames narrower than this",
                       default: "0.1 pixels") { run, raw in
                    guard let parsed = MinWidth(parsing: raw) else {
                        throw UsageError(message: "--minwidth takes pixels or N%, not '\(raw)'")
                    }
                    run.graph.minWidth = parsed
                },
                .text("--countname", value: "TEXT", help: "what a count is called", default: "the input's unit: "
                    + "samples; perf script weighted by period: the event, or time for cpu-clock; speedscope: its unit") {
                    $0.graph.countName = $1
                },
                .text("--nametype", value: "TEXT", help: "details prefix", default: graph.nameType) {
                    $0.graph.nameType = $1
                },
                .choice("--colors", value: "PALETTE", help: "frame colours", default: graph.palette) {
                    $0.graph.palette = $1
                },
                .value("--bgcolors", value: "BG", help: "background: yellow, blue, green, grey or #rrggbb",
                       default: "the palette's") { run, raw in
                    guard let parsed = FlameGraphBackground(parsing: raw) else {
                        throw UsageError(message: "--bgcolors must be yellow, blue, green, grey or #rrggbb, not '\(raw)'")
                    }
                    run.graph.background = parsed
                },
                .flag("--hash", help: "colour by a name hash weighted to its first characters") { $0.graph.hash = true },
                .flag("--reverse", help: "reverse stacks (leaf first)") { $0.graph.reverse = true },
                .flag("--inverted", help: "icicle graph (roots at the top)") { $0.graph.inverted = true },
                .flag("--flamechart", help: "time order, not sorted: folded stacks as given (newest first, as "
                    + "flamegraph.pl); captures in sample order, with the app's markers over the time axis") {
                    $0.graph.flameChart = true
                },
                .text("--notes", value: "TEXT", help: "notes stored in the SVG") { $0.graph.notes = $1 },
                .value("--fontsize", value: "PT", help: "font size", default: UsageText.number(graph.fontSize)) {
                    run, raw in
                    guard let size = Double(raw), size >= 1, size <= 200 else {
                        throw UsageError(message: "--fontsize takes a size in points from 1 to 200, not '\(raw)'")
                    }
                    run.graph.fontSize = size
                },
                .text("--fonttype", value: "FONT", help: "font family", default: graph.fontType) {
                    $0.graph.fontType = $1
                },
                .flag("--negate", help: "differential: colour before minus after") { $0.graph.negate = true },
                .value("--total", value: "N", help: "the count the whole width stands for when larger than the "
                       + "profile's (one scale for several graphs)", default: "the profile's total") { run, raw in
                    guard let total = Double(raw), total.isFinite, total > 0 else {
                        throw UsageError(message: "--total takes a positive count, not '\(raw)'")
                    }
                    run.graph.total = total
                },
                .value("--factor", value: "F", help: "scale the counts tooltips print by F (shares do not change)",
                       default: "1") { run, raw in
                    guard let factor = Double(raw), factor.isFinite, factor > 0 else {
                        throw UsageError(message: "--factor takes a positive number, not '\(raw)'")
                    }
                    run.graph.factor = factor
                },
                .flag("--cp", help: "consistent palette: colours by name from palette.map, saved back (or "
                    + "--palette-file)") { $0.paletteFile = $0.paletteFile ?? "palette.map" },
                .text("--palette-file", value: "FILE", help: "--cp with this palette file") { $0.paletteFile = $1 },
                SharedOptions.output.lifted(\.profile.output),
            ])] + SharedOptions.reading(\.profile.input),
            arguments: [("FILE", "input; - (or no FILE, when standard input is not a terminal) reads standard input")], defaults: Run(), body: run)
    }

    static func run(_ invocation: Invocation<Run>) throws {
        var options = invocation.options.graph
        let implied = options.flameChart ? "Flame Chart" : options.inverted ? "Icicle Graph" : options.title
        options.title = invocation.options.title ?? implied
        let inputs = try inputsOrStandardInput(invocation.positionals)
        let output = try OutputTarget(invocation.options.profile.output)  // before reading, as the shell's `>`
        let sources = inputs.map(InputSource.init(path:))
        let (profile, markers, diagnostics) = try ProfileLoader.loadChart(
            sources, options: invocation.options.profile.input, timeOrder: options.flameChart)
        diagnostics.warnings.forEach { Output.error("stallprof: warning: \($0)") }
        var renderDiagnostics = Diagnostics()
        if let path = invocation.options.paletteFile { options.paletteMap = try PaletteFile.read(path) }
        let svg = try SVGFlameGraph(options: options, markers: markers).renderBytes(
            profile, input: inputs.joined(separator: ", "), diagnostics: &renderDiagnostics)
        try output.finish(svg)
        if let path = invocation.options.paletteFile { try PaletteFile.write(options.paletteEntries(profile), to: path) }
        // The renderer's warnings (a total beyond 2^64-1); an empty graph's is handled below.
        if profile.total > 0 { renderDiagnostics.warnings.forEach { Output.error("stallprof: warning: \($0)") } }
        // Empty inputs and captures only (a run without a stall, or a selection that keeps none): warned about,
        // an empty graph, exit 0 (as fold, diff, report and export). Other inputs with data but no stack counts are
        // bad data, after the graph that says so.
        let found = profile.total > 0
        if let warning = InputLoader.emptySelection(found: found, inputs: sources, diagnostics: diagnostics) {
            Output.error("stallprof: warning: \(warning)")
        }
        if let error = InputLoader.noStackCounts(found: found, inputs: sources, diagnostics: diagnostics) { throw error }
    }
}
