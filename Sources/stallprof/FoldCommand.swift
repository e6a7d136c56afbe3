import StallAnalysis

/// `stallprof fold`: folded stacks from captures.
enum FoldCommand {
    static let usage = """
        USAGE: stallprof fold [--format auto|stallprof] [--state all|busy|blocked] [--stall N]... \\
                              [--offsets] [--no-demangle] [-o OUT] FILE...

        Prints folded stacks (root;...;leaf COUNT, byte-sorted), one line per distinct stack.

        OPTIONS:
          --format FORMAT   input format (default: auto, detected from the content)
          --state STATE     keep only samples of busy or of blocked stalls (default: all)
          --stall N         keep only stall number N (repeatable; default: every stall)
          --offsets         append +0xOFFSET to resolved function names
          --no-demangle     keep Swift symbols mangled
          -o, --output OUT  write to OUT instead of standard output
          FILE              a capture file; - reads standard input
        """

    static func run(_ arguments: [String]) throws {
        let args = try Arguments(
            arguments, valued: ["--format", "--state", "--stall", "--output"],
            flags: ["--offsets", "--no-demangle"], aliases: ["-o": "--output"])
        var options = FoldOptions()
        options.format = try args.choice("--format", as: InputFormat.self) ?? .auto
        options.capture.state = try args.choice("--state", as: StallStateFilter.self) ?? .all
        for raw in args.all("--stall") {
            guard let id = UInt32(raw), id > 0 else { throw UsageError(message: "--stall takes a stall number, not '\(raw)'") }
            options.capture.stallIDs.insert(id)
        }
        options.capture.symbolizer.showOffsets = args.flag("--offsets")
        options.capture.symbolizer.demangle = !args.flag("--no-demangle")
        guard !args.positionals.isEmpty else { throw UsageError(message: "no input files (use - for standard input)") }
        let (stacks, diagnostics) = try Folder.fold(args.positionals.map(InputSource.init(path:)), options: options)
        diagnostics.warnings.forEach { Output.error("warning: \($0)") }
        try Output.write(stacks.rendered(), to: args.value("--output"))
    }
}
