import StallFormat

/// Finds every minimal set of flags that must all be enabled for a freeze, as a pure function of a predicate.
///
/// The predicate is `run`: given configurations (each the names of the flags to disable), it runs the command
/// once per configuration and reports what each run showed. Tests pass simulated predicates; the CLI passes
/// ``BisectCommandRunner``.
///
/// The search, in order:
/// 1. Calibration: the all-enabled configuration must freeze (else `not-reproducible`); if its first run freezes
///    the repro is treated as deterministic, otherwise its freeze rate is measured and the number of clean runs
///    that make a configuration good is chosen from it; the all-disabled configuration must be good (else
///    `not-attributable`). For a deterministic repro any clean run proves that (freezing is monotone in the
///    enabled flags), so the all-disabled configuration runs only when the search needs it and no run did.
/// 2. Bisect-reduce: halve the enabled flags; a half that still freezes alone holds a cause; if neither does,
///    both halves hold part of it (an AND interaction): reduce one half with the other forced on, then the
///    other with the found part forced on. For a deterministic repro, inside a forced reduction a half that is
///    good makes the other half the one assumed to hold the rest, without a run; the cause found then runs once,
///    and if it does not freeze the search restarts without assuming.
/// 3. Independent causes: a hitting-set tree. Each cause found opens one branch per member with that member
///    also disabled; a branch that still freezes holds another cause, one that is good is a fix.
/// 4. Minimality: for a deterministic repro the reduction proves it (enabling the cause minus any one member is
///    a subset of a configuration that ran clean); causes of three or more flags, where a missed freeze shows,
///    are checked as soon as they are found: enabling the cause minus any one member must be good.
/// 5. Verification: each single fix and the minimal fix are re-run, the all-enabled run is re-checked.
///
/// Every configuration's runs are kept, so none runs more often than needed. A freeze observed once is trusted;
/// a clean result is not. Any sign of flakiness (a configuration that both froze and ran clean, a
/// configuration judged good while one enabling fewer flags froze, a cause that is not minimal) switches to
/// repeated runs, and the search restarts from the evidence gathered so far.
public final class BisectSearch {
    /// Runs the command once per configuration (the flags to disable, by name) and reports each run.
    public typealias Run = (_ configurations: [[String]], _ phase: BisectPhase) throws -> [BisectObservation]

    /// The flags, in order.
    public let flags: [String]
    /// The options in use.
    public let options: BisectSearchOptions
    /// Every run made (or replayed from a journal), in order.
    public private(set) var trials: [BisectTrial] = []
    /// Called after each run is recorded (journal, progress).
    public var onTrial: ((BisectTrial) -> Void)?

    private let run: Run
    var evidence = EvidenceStore()
    var flaky = false { didSet { evidence.pooling = flaky } }
    var repeats = 1
    /// Freezes missed in flaky mode: each adds one clean run to what the measured freeze rate asks for.
    var misses = 0
    /// Set once an assumption of a deterministic reduction proved wrong: reductions then run both halves.
    var strictReduce = false
    /// Set when the current reduction assumed a half holds the rest of a cause without running it.
    var assumed = false

    /// Creates a search over `flags` that runs configurations with `run`.
    public init(flags: [String], options: BisectSearchOptions = BisectSearchOptions(), run: @escaping Run) {
        self.flags = flags
        self.options = options
        self.run = run
    }

    /// Adds runs from an earlier, interrupted search (a journal) as if they had just been made.
    /// Throws ``StallError/usage(_:)`` when a trial names a flag not in ``flags``.
    public func replay(_ earlier: [BisectTrial]) throws {
        for trial in earlier {
            try record(disabled: indices(of: trial.disabled), trial: trial)
        }
        // What the earlier search had learnt about flakiness, so it does not decide with fewer repetitions.
        flaky = flaky || evidence.showsFlakiness || evidence.contradiction(repeats: repeats) != nil
        while flaky, options.repeats == nil, repeats < options.maxRepeats, evidence.contradiction(repeats: repeats) != nil {
            repeats += 1
        }
    }

    /// Runs the search to its end.
    public func search() throws -> BisectOutcome {
        while true {
            do {
                if let early = try calibrate() { return outcome(early) }
                let tree = try findCauses()
                return try verify(tree)
            } catch SearchInterrupt.stop(let verdict) {
                return outcome(verdict)
            } catch SearchInterrupt.restart {
                continue
            } catch SearchInterrupt.inconsistent(let message) {
                return outcome(.inconsistent, message: message)
            } catch SearchInterrupt.budget {
                return outcome(
                    flaky ? .tooFlaky : .inconsistent,
                    message: "the run budget (\(options.maxRuns)) was spent before the answer was verified")
            }
        }
    }

    // MARK: Running configurations

    var allFlags: Set<Int> { Set(flags.indices) }

    func names(_ disabled: Set<Int>) -> [String] { disabled.sorted().map { flags[$0] } }

    private func indices(of names: [String]) throws -> Set<Int> {
        Set(try names.map { name in
            guard let index = flags.firstIndex(of: name) else {
                throw StallError.usage("the journal names flag '\(name)', which is not in --flags")
            }
            return index
        })
    }

    private func record(disabled: Set<Int>, trial: BisectTrial) throws {
        evidence.record(disabled, trial.verdict, phase: trial.phase)
        trials.append(trial)
    }

    /// Runs each configuration (disabled sets) once, records the runs and checks the evidence for contradictions.
    func execute(_ batch: [Set<Int>], phase: BisectPhase) throws {
        guard trials.count + batch.count <= options.maxRuns else { throw SearchInterrupt.budget }
        let observations = try run(batch.map(names), phase)
        precondition(observations.count == batch.count, "the runner must report one observation per configuration")
        for (disabled, observation) in zip(batch, observations) {
            let trial = BisectTrial(disabled: names(disabled), phase: phase, observation: observation)
            try record(disabled: disabled, trial: trial)
            onTrial?(trial)
        }
        try checkConsistency()
    }

    /// Switches to repeated runs (and restarts) on the first sign of flakiness; in flaky mode, a missed freeze
    /// asks for more repetitions.
    func checkConsistency() throws {
        if !flaky && evidence.showsFlakiness { try missedFreeze("a configuration both froze and ran clean") }
        if let contradiction = evidence.contradiction(repeats: repeats) {
            if flaky { evidence.acknowledge(contradiction) }
            try missedFreeze(
                "disabling {\(names(contradiction).joined(separator: ","))} looked good in \(repeats) runs, but a "
                    + "configuration with fewer flags enabled froze")
        }
    }

    /// A freeze was missed: the first time, the repro is flaky and the search restarts with repeated runs;
    /// after that, each miss asks for one more clean run per configuration (unless `--repeat` fixed it).
    func missedFreeze(_ why: String) throws -> Never {
        if !flaky {
            flaky = true
        } else if options.repeats == nil {
            misses += 1
        } else {
            throw SearchInterrupt.inconsistent("\(why) (with --repeat \(repeats)); raise --repeat")
        }
        throw SearchInterrupt.restart
    }

    /// The status of a configuration, running it until it is decided.
    /// `atLeast` raises the clean runs required for this one question.
    func decide(_ disabled: Set<Int>, phase: BisectPhase = .search, atLeast: Int = 1) throws -> ConfigurationStatus {
        let required = max(repeats, atLeast)
        while true {
            let status = evidence.status(disabled, repeats: required)
            if status != .undecided { return status }
            let missing = required - evidence[disabled].clean
            try execute(Array(repeating: disabled, count: max(1, min(options.parallelism, missing))), phase: phase)
        }
    }

    /// True when enabling exactly `enabled` still shows the problem (freezes, or never runs cleanly).
    func reproduces(enabled: Set<Int>, phase: BisectPhase = .search, atLeast: Int = 1) throws -> Bool {
        try decide(allFlags.subtracting(enabled), phase: phase, atLeast: atLeast).reproduces
    }

    /// Which of two enabled sets reproduces (0 or 1), or nil when neither does. Runs them in turn, so that a
    /// flaky freeze in either ends the question early.
    func firstReproducing(_ first: Set<Int>, _ second: Set<Int>) throws -> Int? {
        let configurations = [allFlags.subtracting(first), allFlags.subtracting(second)]
        while true {
            let statuses = configurations.map { evidence.status($0, repeats: repeats) }
            if let index = statuses.firstIndex(where: \.reproduces) { return index }
            let undecided = configurations.indices.filter { statuses[$0] == .undecided }
            if undecided.isEmpty { return nil }
            if options.parallelism >= 2 {
                try execute(undecided.map { configurations[$0] }, phase: .search)
            } else {
                let next = undecided.min { evidence[configurations[$0]].total < evidence[configurations[$1]].total }!
                try execute([configurations[next]], phase: .search)
            }
        }
    }
}

/// Control flow inside the search.
enum SearchInterrupt: Error {
    /// Evidence changed the mode or the repetitions: search again from the evidence gathered.
    case restart
    /// The runs contradict each other and no more repetitions are allowed.
    case inconsistent(String)
    /// The run budget is spent.
    case budget
    /// A check deferred from calibration failed: end with this verdict.
    case stop(BisectVerdict)
}
