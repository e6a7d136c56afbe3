import StallAnalysis

/// `stallprof diff`: the two-count folded format (`stack before after`) of two profiles.
enum DiffCommand {
    static let usage = """
        USAGE: stallprof diff [--normalize] [--strip-hex] [--kind KIND] [--state STATE] [--stall N]... \\
                              [--range MS..MS] [-o OUT] BEFORE AFTER

        Prints `stack before after` lines (byte-sorted) for 'stallprof flamegraph' to draw as a differential flame
        graph: width from AFTER, red where a stack grew, blue where it shrank (--negate swaps). BEFORE and AFTER
        are folded stacks or anything 'stallprof fold' reads, e.g. the stall before and after a fix.

        OPTIONS:
          -n, --normalize   scale BEFORE's counts to AFTER's total
          -s, --strip-hex   replace hexadecimal numbers in frames by 0x...
        \(CaptureSelection.usage)
          -o, --output OUT  write to OUT instead of standard output
        """

    static func run(_ arguments: [String]) throws {
        let args = try Arguments(
            arguments, valued: CaptureSelection.valued.union(["--output"]),
            flags: CaptureSelection.flags.union(["--normalize", "--strip-hex"]),
            aliases: ["-o": "--output", "-n": "--normalize", "-s": "--strip-hex"])
        guard args.positionals.count == 2 else { throw UsageError(message: "diff takes exactly two inputs: BEFORE AFTER") }
        let foldOptions = try CaptureSelection.foldOptions(args)
        var options = DiffOptions()
        options.normalize = args.flag("--normalize")
        options.stripHex = args.flag("--strip-hex")
        let (before, beforeWarnings) = try ProfileLoader.load([InputSource(path: args.positionals[0])], options: foldOptions)
        let (after, afterWarnings) = try ProfileLoader.load([InputSource(path: args.positionals[1])], options: foldOptions)
        var diagnostics = Diagnostics()
        let text = StackDiff.diff(before: before.folded, after: after.folded, options: options, diagnostics: &diagnostics)
        (beforeWarnings.warnings + afterWarnings.warnings + diagnostics.warnings).forEach { Output.error("warning: \($0)") }
        try Output.write(text, to: args.value("--output"))
    }
}
