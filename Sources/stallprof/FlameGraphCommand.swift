import StallAnalysis

/// `stallprof flamegraph`: an interactive SVG flame graph from folded stacks or anything fold reads.
enum FlameGraphCommand {
    static let usage = """
        USAGE: stallprof flamegraph [options] [FILE ... | -] [-o OUT.svg]

        Draws an interactive SVG flame graph (standard output unless -o). FILE is folded stacks (`stack count`,
        or `stack before after` for a differential graph) or anything 'stallprof fold' reads, folded on the fly.

        OPTIONS (flamegraph.pl's names and meanings):
          --title TEXT       title (default: Flame Graph; Icicle Graph with --inverted, Flame Chart with
                             --flamechart)
          --subtitle TEXT    second title line
          --width PX         image width (default: 1200)
          --height PX        frame height (default: 16)
          --minwidth PX|N%   omit frames narrower than this (default: 0.1 pixels)
          --countname TEXT   what a count is called (default: the input's unit: samples; perf script weighted
                             by period: the event, or time for cpu-clock; speedscope: its unit)
          --nametype TEXT    details prefix (default: Function:)
          --colors PALETTE   hot, mem, io, wakeup, java, js, perl, red, green, blue, aqua, yellow, purple, orange
          --bgcolors BG      yellow, blue, green, grey or #rrggbb (default: the palette's)
          --hash             colour by a name hash weighted to its first characters
          --reverse          reverse stacks (leaf first)
          --inverted         icicle graph (roots at the top)
          --flamechart       time order, not sorted: folded stacks as given (newest first, as flamegraph.pl);
                             captures in sample order, with the app's markers over the time axis
          --notes TEXT       notes stored in the SVG
          --fontsize PT      font size (default: 12)
          --fonttype FONT    font family (default: Verdana)
          --negate           differential: colour before minus after
        \(CaptureSelection.usage)
          -o, --output OUT   write to OUT instead of standard output
          FILE               input; - or nothing reads standard input
        """

    static func run(_ arguments: [String]) throws {
        let args = try Arguments(
            arguments,
            valued: CaptureSelection.valued.union([
                "--title", "--subtitle", "--width", "--height", "--minwidth", "--countname", "--nametype", "--colors",
                "--bgcolors", "--notes", "--fontsize", "--fonttype", "--output",
            ]),
            flags: CaptureSelection.flags.union(["--hash", "--reverse", "--inverted", "--flamechart", "--negate"]),
            aliases: ["-o": "--output"])
        var options = FlameGraphOptions()
        options.flameChart = args.flag("--flamechart")
        options.inverted = args.flag("--inverted")
        let implied = options.flameChart ? "Flame Chart" : options.inverted ? "Icicle Graph" : options.title
        options.title = args.value("--title") ?? implied
        options.subtitle = args.value("--subtitle")
        options.width = try number("--width", args, default: options.width, minimum: 40)
        options.frameHeight = try number("--height", args, default: options.frameHeight, minimum: 2)
        if let raw = args.value("--minwidth") {
            guard let parsed = MinWidth(parsing: raw) else {
                throw UsageError(message: "--minwidth takes pixels or N%, not '\(raw)'")
            }
            options.minWidth = parsed
        }
        options.countName = args.value("--countname") ?? options.countName
        options.nameType = args.value("--nametype") ?? options.nameType
        options.palette = try args.choice("--colors", as: FlameGraphPalette.self) ?? options.palette
        if let raw = args.value("--bgcolors") {
            guard let parsed = FlameGraphBackground(parsing: raw) else {
                throw UsageError(message: "--bgcolors must be yellow, blue, green, grey or #rrggbb, not '\(raw)'")
            }
            options.background = parsed
        }
        options.hash = args.flag("--hash")
        options.reverse = args.flag("--reverse")
        options.notes = args.value("--notes") ?? options.notes
        if let raw = args.value("--fontsize") {
            guard let size = Double(raw), size >= 1, size <= 200 else {
                throw UsageError(message: "--fontsize takes a size in points from 1 to 200, not '\(raw)'")
            }
            options.fontSize = size
        }
        options.fontType = args.value("--fonttype") ?? options.fontType
        options.negate = args.flag("--negate")
        let inputs = args.positionals.isEmpty ? ["-"] : args.positionals
        let (profile, markers, diagnostics) = try ProfileLoader.loadChart(
            inputs.map(InputSource.init(path:)), options: try CaptureSelection.foldOptions(args),
            timeOrder: options.flameChart)
        diagnostics.warnings.forEach { Output.error("warning: \($0)") }
        var renderDiagnostics = Diagnostics()
        let svg = try SVGFlameGraph(options: options, markers: markers).renderBytes(
            profile, input: inputs.joined(separator: ", "), diagnostics: &renderDiagnostics)
        try Output.write(svg, to: args.value("--output"))
        // Empty inputs only: warned about, an empty graph, exit 0 (as fold, diff and report). Inputs with data
        // but no stack counts are bad data.
        if profile.total <= 0, diagnostics.emptyInputs.count < inputs.count {
            throw AnalysisError.badData(path: inputs.joined(separator: ", "), position: "", reason: "no stack counts found")
        }
    }

    /// The integer value of `name`, at least `minimum`.
    static func number(_ name: String, _ args: Arguments, default value: Int, minimum: Int) throws -> Int {
        guard let raw = args.value(name) else { return value }
        guard let parsed = Int(raw), parsed >= minimum else {
            throw UsageError(message: "\(name) takes a whole number of at least \(minimum), not '\(raw)'")
        }
        return parsed
    }
}
