import StallAnalysis

/// `stallprof diff`: the two-count folded format (`stack before after`) of two profiles.
enum DiffCommand {
    /// What `diff` is given.
    struct Run {
        var profile = ProfileRun()
        var diff = DiffOptions()
    }

    static var command: Command<Run> {
        Command(
            name: "diff", abstract: "two-count folded stacks (before, after) for a differential flame graph",
            synopsis: "[options] [-o OUT] BEFORE AFTER",
            discussion: """
                Prints `stack before after` lines (byte-sorted) for 'stallprof flamegraph' to draw as a \
                differential flame graph: width from AFTER, red where a stack grew, blue where it shrank \
                (--negate swaps). BEFORE and AFTER are folded stacks or anything 'stallprof fold' reads, e.g. \
                the stall before and after a fix; both are read with the same options.
                """,
            groups: [OptionGroup(title: "OPTIONS", options: [
                .flag("-n", "--normalize", help: "scale BEFORE's counts to AFTER's total") { $0.diff.normalize = true },
                .flag("-s", "--strip-hex", help: "replace hexadecimal numbers in frames by 0x...") {
                    $0.diff.stripHex = true
                },
                SharedOptions.output.lifted(\.profile.output),
            ])] + SharedOptions.reading(\.profile.input),
            arguments: [("BEFORE AFTER", "two profiles; - reads standard input")], defaults: Run()
        ) { invocation in
            guard invocation.positionals.count == 2 else {
                throw UsageError(message: "diff takes exactly two inputs: BEFORE AFTER")
            }
            guard invocation.positionals != ["-", "-"] else {
                throw UsageError(message: "BEFORE and AFTER cannot both be standard input (-)")
            }
            let output = try OutputTarget(invocation.options.profile.output)  // before reading, as the shell's `>`
            // Both inputs folded straight into exact tables and sorted, the two at once, as `fold` reads them.
            let input = invocation.options.profile.input
            let options = invocation.options.diff
            let sides = Parallel.map(Array(invocation.positionals.prefix(2))) { path in
                var (stacks, diagnostics) = try Folder.fold([InputSource(path: path)], options: input)
                return (StackDiff.Side(stacks, options: options, diagnostics: &diagnostics), diagnostics)
            }
            let (before, beforeWarnings) = try sides[0].get()
            let (after, afterWarnings) = try sides[1].get()
            var diagnostics = Diagnostics()
            let bytes = StackDiff.diff(before, after, options: options, diagnostics: &diagnostics)
            (beforeWarnings.warnings + afterWarnings.warnings + diagnostics.warnings).forEach { Output.error("stallprof: warning: \($0)") }
            try output.finish(bytes)
        }
    }
}
