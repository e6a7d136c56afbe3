#if canImport(Glibc)
import Glibc
#endif
import StallBisect
import StallFormat

/// `stallprof check`: one run, classified; exit codes for `git bisect run`.
enum CheckCommand {
    static let usage = """
        USAGE: stallprof check [--window SECONDS] [--busy FRACTION] [--idle FRACTION] [--sustain SECONDS] \\
                               [--measure cpu|watchdog] -- COMMAND [ARGS...]

        Runs COMMAND once (directly, no shell, in its own process group, with the caller's environment) and
        classifies the run by its main thread's CPU use. Exits 0 when good, 1 when frozen, 125 when
        inconclusive (crash, failure, signal), so that it can drive `git bisect run stallprof check -- ...`.

        OPTIONS:
        \(classifierOptionsHelp)
        """

    /// The help of the options shared with `stallprof bisect`.
    static let classifierOptionsHelp = """
          --window SECONDS    longest observation of one run (default: 10)
          --busy FRACTION     main-thread CPU (of one core) that counts as busy (default: 0.9)
          --idle FRACTION     main-thread CPU below which it counts as idle (default: 0.1)
          --sustain SECONDS   busy this long = frozen; the run is killed then (default: 1)
          --measure MEASURE   cpu: the first thread's CPU from /proc (default); watchdog: the stall file of
                              the app's own StallWatchdog (\(EnvironmentName.output) is set for each run)
        """

    /// The names of the options shared with `stallprof bisect`.
    static let classifierOptionNames: Set<String> = ["--window", "--busy", "--idle", "--sustain", "--measure"]

    static func run(_ arguments: [String]) throws {
        let args = try Arguments(arguments, valued: classifierOptionNames, flags: [])
        let options = try classifierOptions(args)
        let command = try commandAfterDashDash(args)
        ProcessRunner.installInterruptHandlers()
        var launch = ProcessRunner.Launch(arguments: command, inheritOutput: true)
        let scratch = options.measure == .watchdog ? try ScratchDirectory(prefix: "stallprof-check") : nil
        if let scratch { launch.environment[EnvironmentName.output] = scratch.path + "/run.stalls" }
        defer { launch.environment[EnvironmentName.output].map { _ = unlink($0) } }
        let observation: BisectObservation
        do {
            observation = try ProcessRunner.run([launch], options: options)[0]
        } catch BisectError.input(let program, let reason) {
            // A commit whose program is missing or cannot run says nothing about the freeze: git bisect's "skip".
            throw CheckVerdictError(verdict: .inconclusive, description: "check: \(program): \(reason)")
        }
        let trial = BisectTrial(disabled: [], phase: .verify, observation: observation)
        let line = "check: " + BisectProgress.line(trial, number: 1).drop { $0 != ":" }.dropFirst(2)
        guard observation.verdict == .good else { throw CheckVerdictError(verdict: observation.verdict, description: line) }
        Output.error(line)
    }

    /// The classifier options given by `--window`, `--busy`, `--idle` and `--sustain`.
    static func classifierOptions(_ args: Arguments) throws -> RunClassifierOptions {
        var options = RunClassifierOptions()
        func number(_ name: String) throws -> Double? {
            guard let raw = args.value(name) else { return nil }
            guard let value = Double(raw), value.isFinite, value > 0 else {
                throw UsageError(message: "\(name) takes a positive number, not '\(raw)'")
            }
            return value
        }
        options.windowSeconds = try number("--window") ?? options.windowSeconds
        options.busyThreshold = try number("--busy") ?? options.busyThreshold
        options.idleThreshold = try number("--idle") ?? options.idleThreshold
        options.sustainedSeconds = try number("--sustain") ?? options.sustainedSeconds
        options.intervalSeconds = min(options.intervalSeconds, options.sustainedSeconds / 5)
        options.measure = try args.choice("--measure", as: RunClassifierOptions.Measure.self) ?? .cpu
        do { try options.validate() } catch let error as BisectError { throw UsageError(message: error.description) }
        return options
    }

    /// The command after `--`.
    static func commandAfterDashDash(_ args: Arguments) throws -> [String] {
        guard args.positionals.isEmpty else {
            throw UsageError(message: "unexpected '\(args.positionals[0])'; put the command after --")
        }
        guard let command = args.afterDashDash, !command.isEmpty else { throw UsageError(message: "no command after --") }
        return command
    }
}
