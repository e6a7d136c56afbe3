/// `stallprof man`: the manual page, stallprof(1) in roff, generated from the commands' declared synopses,
/// descriptions and options, so it cannot drift from `--help` (`man -l <(stallprof man)`, or install it as
/// `share/man/man1/stallprof.1`).
enum ManPage {
    /// The page for `commands`.
    static func page(_ commands: [Subcommand]) -> String {
        var lines = [
            ".TH STALLPROF 1 \"\" \"\(escaped(version))\" \"User Commands\"",
            ".SH NAME", "stallprof \\- main-thread stall profiler and sample analyzer",
            ".SH SYNOPSIS", ".B stallprof", ".I subcommand", "[options]",
            ".br", ".B stallprof", "\\-\\-version | \\-V | \\-\\-help | help", ".I subcommand",
            ".SH DESCRIPTION",
            text("stallprof reads the captures its watchdog library (StallProfiler) writes when an app's main thread "
                + "freezes, and the output of other profilers (perf script, macOS sample, folded stacks, speedscope); "
                + "it folds, draws, compares, reports and exports them, and bisects feature flags to find what "
                + "causes a freeze."),
            ".SH COMMANDS",
        ]
        for command in commands {
            lines += [".SS \"stallprof \(escaped(command.name)) \(escaped(command.synopsis).replacing("\"", with: "\\(dq"))\"",
                      text(command.abstract)]
            for paragraph in command.discussion.split(separator: "\n\n") {
                lines += [".PP", text(paragraph.split(whereSeparator: \.isNewline).joined(separator: " "))]
            }
            for group in command.optionGroups {
                lines += [".PP", ".I \(escaped(group.title))"]
                for option in group.options {
                    let names = option.names.map { "\\fB\(escaped($0))\\fR" }.joined(separator: ", ")
                    lines += [".TP", names + (option.valueName.map { " \\fI\(escaped($0))\\fR" } ?? ""), text(option.help)]
                }
            }
        }
        lines += [
            ".SH EXIT STATUS",
            ".TP", "0", "success", ".TP", "1", "failure: an output that cannot be written, a --fail-on condition that "
                + "holds, bisect with no or inconsistent causes, check: the run froze",
            ".TP", "3, 4, 5", "bisect: not reproducible, not attributable, too flaky",
            ".TP", "64", "usage error", ".TP", "65", "bad input data (the file and position are named)",
            ".TP", "66", "an input that cannot be opened or read",
            ".TP", "125", "check: an inconclusive run (git bisect's skip)", ".TP", "130", "interrupted",
            ".SH ENVIRONMENT",
            ".TP", ".B STALLPROF_DEBUG_DIRS", "directories of debug files, colon-separated (as \\-\\-debug\\-dir)",
            ".TP", ".B GITHUB_STEP_SUMMARY", "bisect and report \\-\\-fail\\-on append a Markdown summary to this file",
            ".SH SEE ALSO", "perf(1), gdb(1), flamegraph.pl; the guides in the source tree's docs/ directory", "",
        ]
        return lines.joined(separator: "\n")
    }

    /// `text` escaped for roff: backslashes, hyphens of options, and a leading `.` or `'` made literal.
    static func escaped(_ text: some StringProtocol) -> String {
        String(text).replacing("\\", with: "\\e").replacing("-", with: "\\-")
    }

    /// A paragraph of running text; a list of choices (`a|b|c`) may break after each `|`.
    private static func text(_ paragraph: some StringProtocol) -> String {
        let line = escaped(paragraph).replacing("|", with: "|\\:")
        return line.hasPrefix(".") || line.hasPrefix("'") ? "\\&" + line : line
    }
}
