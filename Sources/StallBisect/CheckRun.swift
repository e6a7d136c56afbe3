#if canImport(Glibc)
import Glibc
#endif
import StallFormat

/// One `stallprof check`: the command run once and classified, with the exit codes `git bisect run` expects.
public enum CheckRun {
    /// Runs `command` once (directly, in its own process group, with the caller's environment and output) and
    /// classifies the run. Returns the line to show when the run is good; throws a ``Verdict`` when it is frozen
    /// (exit 1) or inconclusive (exit 125, `git bisect run`'s "skip") (a program that cannot run is inconclusive: that commit says nothing about the
    /// freeze), and ``StallError/usage(_:)`` for options that make no sense.
    public static func run(_ command: [String], classifier: RunClassifierOptions) throws -> String {
        guard !command.isEmpty else { throw StallError.usage("no command after --") }
        let options = try classifier.resolved()
        ProcessRunner.installInterruptHandlers()
        var launch = ProcessRunner.Launch(arguments: command, inheritOutput: true)
        let scratch = options.measure == .watchdog ? try ScratchDirectory(prefix: "stallprof-check") : nil
        if let scratch { launch.environment[EnvironmentName.output] = scratch.path + "/run.stalls" }
        defer { launch.environment[EnvironmentName.output].map { _ = unlink($0) } }
        let observation: BisectObservation
        do {
            observation = try ProcessRunner.run([launch], options: options)[0]
        } catch StallError.cannotRun(let program, let reason) {
            throw Verdict("check: \(program): \(reason)", exitCode: RunVerdict.inconclusive.exitCode)
        }
        let trial = BisectTrial(disabled: [], phase: .verify, observation: observation)
        let line = "check: " + BisectProgress.line(trial, number: 1).drop { $0 != ":" }.dropFirst(2)
        guard observation.verdict == .good else { throw Verdict(line, exitCode: observation.verdict.exitCode) }
        return line
    }
}

extension RunVerdict {
    /// How `stallprof check` exits with this verdict: 0 good, 1 frozen, 125 inconclusive.
    public var exitCode: ExitCode {
        switch self {
        case .good: return .success
        case .frozen: return .failure
        case .inconclusive: return .skip
        }
    }
}

extension RunClassifierOptions {
    /// These options checked as a whole, the sampling interval following the sustained period (at most a fifth
    /// of it). Throws ``StallError/usage(_:)`` naming the first bad value.
    public func resolved() throws -> RunClassifierOptions {
        var options = self
        options.intervalSeconds = min(options.intervalSeconds, options.sustainedSeconds / 5)
        try options.validate()
        return options
    }
}

extension RunInterrupted: ExitCodeCarrying {
    /// 130, as a shell reports a process ended by SIGINT.
    public var exitCode: ExitCode { .interrupted }
    /// The sentence for standard error.
    public var message: String { description }
}
