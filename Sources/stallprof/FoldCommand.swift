#if canImport(Glibc)
import Glibc
#endif
import StallAnalysis

/// The inputs and output shared by the commands that read profiles.
struct ProfileRun {
    /// How inputs are read.
    var input = FoldOptions()
    /// `-o`: nil (or `-`) is standard output.
    var output: String? = nil
}

/// The positional rows of commands that read any profile.
let fileArguments = [("FILE", "a capture, perf script output, macOS sample, folded stacks or speedscope JSON; "
    + "- (or no FILE, when standard input is not a terminal) reads standard input")]

/// `FILE`s, or standard input when none is given and it is not a terminal (`perf script | stallprof fold`, as
/// stackcollapse-perf.pl); on a terminal that is almost certainly a mistake, so a usage error.
func inputsOrStandardInput(_ positionals: [String]) throws -> [String] {
    guard positionals.isEmpty else { return positionals }
    guard isatty(0) == 0 else { throw UsageError(message: "no input files (use - for standard input)") }
    return ["-"]
}

/// `stallprof fold`: folded stacks from captures and from other profilers' output.
enum FoldCommand {
    static var command: Command<ProfileRun> {
        Command(
            name: "fold", abstract: "folded stacks from stallprof captures, perf script, macOS sample, folded files",
            synopsis: "[options] [-o OUT] [FILE ... | -]",
            discussion: """
                Prints folded stacks (root;...;leaf COUNT, byte-sorted), one line per distinct stack. Several \
                inputs are folded together. See docs/FOLD.md.
                """,
            groups: [OptionGroup(title: "OPTIONS", options: [SharedOptions.output.lifted(\.output)])]
                + SharedOptions.reading(\.input),
            arguments: fileArguments, defaults: ProfileRun()
        ) { invocation in
            let inputs = try inputsOrStandardInput(invocation.positionals)
            let output = try OutputTarget(invocation.options.output)  // before reading, as the shell's `>`
            let (stacks, diagnostics) = try Folder.fold(inputs.map(InputSource.init(path:)), options: invocation.options.input)
            diagnostics.warnings.forEach { Output.error("stallprof: warning: \($0)") }
            try output.finish(stacks.renderedBytes())
        }
    }
}
