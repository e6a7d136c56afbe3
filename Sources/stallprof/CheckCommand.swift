#if canImport(Glibc)
import Glibc
#endif
import StallBisect
import StallFormat

/// `stallprof check`: one run, classified; exit codes for `git bisect run`.
enum CheckCommand {
    /// What `check` is given.
    struct Run {
        var classifier = RunClassifierOptions()
    }

    static var command: Command<Run> {
        Command(
            name: "check", abstract: "run a command once: exit 0 good, 1 frozen, 125 inconclusive (for git bisect run)",
            synopsis: "[options] -- COMMAND [ARGS...]",
            discussion: """
                Runs COMMAND once (directly, no shell, in its own process group, with the caller's environment) \
                and classifies the run by its main thread's CPU use. Exits 0 when good, 1 when frozen, 125 when \
                inconclusive (crash, failure, signal), so that it can drive \
                `git bisect run stallprof check -- ...`. See docs/BISECT.md.
                """,
            groups: [classifierGroup.lifted(\.classifier).titled("OPTIONS")],
            arguments: commandArguments, runsProgram: true, defaults: Run(), body: run)
    }

    /// The run classifier's options, shared with `stallprof bisect`.
    static var classifierGroup: OptionGroup<RunClassifierOptions> {
        let defaults = RunClassifierOptions()
        let show = UsageText.number
        return OptionGroup(title: "RUN CLASSIFIER", options: [
            .number("--window", value: "SECONDS", help: "longest observation of one run, not counting the main "
                + "thread's wait for a CPU (at most 10 windows of wall time)",
                    default: show(defaults.windowSeconds)) { $0.windowSeconds = $1 },
            .number("--busy", value: "FRACTION", help: "main-thread CPU (per second it did not wait for a CPU) "
                + "that counts as busy",
                    default: show(defaults.busyThreshold)) { $0.busyThreshold = $1 },
            .number("--idle", value: "FRACTION", help: "main-thread CPU below which it counts as idle",
                    default: show(defaults.idleThreshold)) { $0.idleThreshold = $1 },
            .number("--sustain", value: "SECONDS", help: "busy this long = frozen; the run is killed then",
                    default: show(defaults.sustainedSeconds)) { $0.sustainedSeconds = $1 },
            .choice("--measure", value: "MEASURE", help: "cpu: the first thread's CPU from /proc; watchdog: the "
                + "stall file of the app's own StallWatchdog (\(EnvironmentName.output) is set for each run)",
                    default: defaults.measure) { $0.measure = $1 },
            .value("--target", value: "NAME", help: "with --measure watchdog: count only the episodes of the "
                + "watched target NAME (main: the main queue); repeatable", default: "every target") {
                $0.targets.insert(try SharedOptions.targetName($1))
            },
        ])
    }

    /// The positional rows of commands that run a program.
    static let commandArguments = [("-- COMMAND [ARGS...]", "the program to run and its arguments")]

    /// The command after `--`.
    static func commandAfterDashDash<Root>(_ invocation: Invocation<Root>) throws -> [String] {
        guard invocation.positionals.isEmpty else {
            throw UsageError(message: "unexpected '\(invocation.positionals[0])'; put the command after --")
        }
        guard let command = invocation.command, !command.isEmpty else { throw UsageError(message: "no command after --") }
        return command
    }

    static func run(_ invocation: Invocation<Run>) throws {
        let classifier = try invocation.options.classifier.resolved()  // its errors first, then the command's
        Output.error(try CheckRun.run(commandAfterDashDash(invocation), classifier: classifier))
    }
}
