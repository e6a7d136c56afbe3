import StallFormat

/// One whole `stallprof bisect`: the runner, the search, the journal and the progress line, from a request to its
/// report. The CLI maps arguments onto a ``Bisection/Request``, runs it, and writes the report where asked.
public enum Bisection {
    /// What a bisection is asked to do.
    public struct Request: Sendable {
        /// The flags to search, as the app passes them to `StallFlags.isEnabled`. Default: none (an error).
        public var flags: [String] = []
        /// The command and its arguments. Default: none (an error).
        public var command: [String] = []
        /// How each run is classified. Default: ``RunClassifierOptions/init()``.
        public var classifier = RunClassifierOptions()
        /// How the search runs. Default: ``BisectSearchOptions/init()``.
        public var search = BisectSearchOptions()
        /// A JSON Lines journal of every run, written as the runs happen. Default: nil (none).
        public var journal: String? = nil
        /// True to continue from ``journal``'s runs instead of starting anew. Default: false.
        public var resume = false

        /// Creates the default request.
        public init() {}
    }

    /// Runs the bisection. Progress goes to standard error as the runs end; an interruption kills every run
    /// (``ProcessRunner/installInterruptHandlers()``). Throws ``StallError/usage(_:)`` for a request that makes
    /// no sense, and the journal's errors after the search if it could not be written.
    public static func run(_ request: Request) throws -> BisectReport {
        let classifier = try request.classifier.resolved()
        guard !request.command.isEmpty else { throw StallError.usage("no command after --") }
        guard !request.flags.isEmpty else { throw StallError.usage("--flags needs at least one flag name") }
        if request.resume && request.journal == nil { throw StallError.usage("--resume needs --journal") }
        ProcessRunner.installInterruptHandlers()
        let runner = try BisectCommandRunner(command: request.command, classifier: classifier)
        let search = BisectSearch(flags: request.flags, options: request.search, run: runner.run)
        var journal: BisectJournal?
        if let path = request.journal {
            if request.resume {
                try search.replay(BisectJournal.load(path: path, flags: request.flags, command: request.command))
            }
            journal = try BisectJournal(path: path, flags: request.flags, command: request.command,
                                        resuming: request.resume)
        }
        var progress = BisectProgress()
        defer { progress.finish() }  // also when interrupted
        var journalError: Error?
        search.onTrial = { trial in
            progress.report(trial)
            do { try journal?.append(trial) } catch { journalError = journalError ?? error }
        }
        let outcome = try search.search()
        progress.finish()
        if let journalError { throw journalError }
        return BisectReport(outcome, command: request.command, consulted: runner.consultedFlags)
    }
}

extension BisectVerdict {
    /// How `stallprof bisect` exits with this verdict: 0 found, 1 none or inconsistent, 3 not reproducible, 4 not
    /// attributable, 5 too flaky.
    public var exitCode: ExitCode {
        switch self {
        case .found: return .success
        case .none, .inconsistent: return .failure
        case .notReproducible: return .notReproducible
        case .notAttributable: return .notAttributable
        case .tooFlaky: return .tooFlaky
        }
    }
}

extension BisectReport {
    /// The few lines `stallprof bisect` prints on standard output: the verdict and, when found, the causes, the
    /// single-flag fixes and the minimal fix.
    public var summary: String {
        func set(_ names: [String]) -> String { "{" + names.joined(separator: ", ") + "}" }
        var lines = ["verdict: \(verdict.rawValue) after \(runs) runs"]
        if verdict == .found {
            lines.append("causes: " + causes.map(set).joined(separator: " "))
            lines.append("fixes: " + (fixes.isEmpty ? "none alone" : fixes.joined(separator: ", ")))
            lines.append("minimal fix: " + set(minimalFix))
        }
        return lines.joined(separator: "\n")
    }
}
