/// The answer of a search.
public struct BisectOutcome: Sendable {
    /// The overall verdict.
    public var verdict: BisectVerdict
    /// The flags searched, in order.
    public var flags: [String]
    /// Every cause found: minimal sets of flags that must all be enabled for the freeze.
    public var causes: [[String]]
    /// The flags whose disabling alone makes the command good.
    public var fixes: [String]
    /// A smallest set of flags whose disabling makes the command good (one flag from each cause).
    public var minimalFix: [String]
    /// What was verified, one entry per claim.
    public var claims: [BisectClaim]
    /// Every run, calibration and verification included.
    public var trials: [BisectTrial]
    /// The measured freeze rate of the all-enabled configuration (nil before any run).
    public var freezeRate: Double?
    /// Clean runs that made a configuration good at the end.
    public var repeats: Int
    /// One sentence explaining verdicts other than `found`.
    public var message: String?
}

/// The search tree: causes in the order found, and the good nodes (disabled sets) in breadth-first order.
struct CauseTree {
    var causes: [Set<Int>] = []
    var goodNodes: [Set<Int>] = []
}

extension BisectSearch {
    /// Calibration; returns a verdict when the search cannot go on. For a deterministic repro (without
    /// `--repeat`) the all-disabled check is deferred to ``requireAllDisabledGood()``.
    func calibrate() throws -> BisectVerdict? {
        let none = Set<Int>()
        try runUntil(none, total: options.deterministicCalibrationRuns)
        flaky = flaky || evidence[none].frozen < evidence[none].total
        // Not frozen yet: run until the first freeze, at most `flakyCalibrationRuns` times in all.
        try runUntil(none, total: options.flakyCalibrationRuns) { $0.frozen > 0 }
        if evidence[none].frozen == 0 { return .notReproducible }
        if let fixed = options.repeats {
            repeats = fixed
        } else if flaky {
            try runUntil(none, total: options.flakyMeasureRuns)
            // A rate that asks for too many clean runs measures longer first; too flaky only when even an
            // optimistic reading of it does. Otherwise go on with at most the maximum: the search's own runs
            // sharpen the estimate (each cause found, each restart).
            try runUntil(none, total: 2 * options.flakyCalibrationRuns) { _ in
                self.flakyRepeats() <= self.options.maxRepeats
            }
            if flakyRepeats(optimistic: true) > options.maxRepeats { return .tooFlaky }
            repeats = min(flakyRepeats(), options.maxRepeats)
        }
        if options.repeats == nil { return nil }
        return try decide(allFlags, phase: .calibrate) == .good ? nil : .notAttributable
    }

    /// The clean runs that make a configuration good for a flaky repro: what the freeze rate measured so far on
    /// configurations holding a cause asks for (`optimistic`: its upper bound), plus one for each freeze the
    /// search missed.
    func flakyRepeats(optimistic: Bool = false) -> Int {
        let needed = options.repeatsNeeded(freezeRate: evidence.causeFreezeRate(optimistic: optimistic))
        return needed > Int.max / 2 ? needed : needed + misses
    }

    /// The premise of every reduction from the root: with every flag disabled the command is good. For a
    /// deterministic repro any clean run proves it (freezing is monotone in the enabled flags); otherwise the
    /// all-disabled configuration runs, and a freeze or a crash there ends the search as `not-attributable`.
    func requireAllDisabledGood() throws {
        if evidence.status(allFlags, repeats: repeats) == .good || (!flaky && evidence.hasCleanRun) { return }
        if try decide(allFlags, phase: .calibrate) != .good { throw SearchInterrupt.stop(.notAttributable) }
    }

    /// Runs `disabled` until it has run `total` times, or `done` says its runs are enough.
    private func runUntil(
        _ disabled: Set<Int>, total: Int, done: (ConfigurationEvidence) -> Bool = { _ in false }
    ) throws {
        while evidence[disabled].total < total, !done(evidence[disabled]) {
            let count = min(options.parallelism, total - evidence[disabled].total)
            try execute(Array(repeating: disabled, count: count), phase: .calibrate)
        }
    }

    /// The hitting-set tree over causes, breadth first. Every minimal cause is found: a node's cause and any
    /// other cause differ in some member, and the branch that disables that member keeps the other cause.
    func findCauses() throws -> CauseTree {
        var tree = CauseTree()
        evidence.foundCauses = []
        var queue: [Set<Int>] = [[]]
        var visited: Set<Set<Int>> = []
        var next = 0
        while next < queue.count {
            let node = queue[next]
            next += 1
            guard visited.insert(node).inserted else { continue }
            if tree.goodNodes.contains(where: { $0.isSubset(of: node) }) { continue }
            let enabled = allFlags.subtracting(node)
            var cause = tree.causes.first { $0.isSubset(of: enabled) }
            if cause == nil {
                guard try reproduces(enabled: enabled) else {
                    tree.goodNodes.append(node)
                    continue
                }
                // The first reduction's premise is proven by its own clean runs (or by the branches of its
                // cause); later ones need it first, so that a repro that freezes with everything disabled does
                // not yield one cause per flag.
                if !tree.causes.isEmpty { try requireAllDisabledGood() }
                assumed = false
                let found = flaky ? try locate(in: enabled) : try reduce(forced: [], candidates: enabled.sorted())
                if assumed, !(try reproduces(enabled: found)) {
                    // A half assumed to hold the rest of the cause did not (a cause of three or more flags split
                    // across it, or a missed freeze): search again, running both halves.
                    strictReduce = true
                    throw SearchInterrupt.restart
                }
                // Two causes sharing a core: if the core alone freezes, neither is minimal, so a freeze was
                // missed on the way (the search then returns a core plus one untested flag, again and again).
                // Overlapping causes are rare: even for a deterministic repro the core runs once more for each
                // cause that shares it.
                for earlier in tree.causes {
                    let core = earlier.intersection(found)
                    let sharing = tree.causes.filter { core.isSubset(of: $0) }.count
                    if !core.isEmpty, core != earlier, try reproduces(enabled: core, atLeast: 1 + sharing) {
                        try missedFreeze("{\(names(core).joined(separator: ","))} alone froze")
                    }
                }
                try checkMinimal(found)
                tree.causes.append(found)
                evidence.foundCauses.append(found)
                if flaky, options.repeats == nil {
                    // The runs that located the cause measure the freeze rate too: decide the branches with it.
                    repeats = min(flakyRepeats(), options.maxRepeats)
                }
                cause = found
            }
            queue += cause!.sorted().map { node.union([$0]) }
        }
        return tree
    }

    /// A minimal subset S of `candidates` such that `forced` + S reproduces, given that `forced` + all the
    /// candidates reproduces and `forced` alone does not.
    ///
    /// With `forced` non-empty and a deterministic repro, the part of the cause left to find is most often one
    /// flag: when the left half is good, the right half is assumed to hold it without a run (``assumed``). Every
    /// configuration assumed to freeze enables all of the cause found, so one run of that cause confirms them all.
    func reduce(forced: Set<Int>, candidates: [Int]) throws -> Set<Int> {
        if candidates.count == 1 { return Set(candidates) }
        let left = Array(candidates[..<(candidates.count / 2)])
        let right = Array(candidates[(candidates.count / 2)...])
        if !flaky, !strictReduce, !forced.isEmpty {
            if try reproduces(enabled: forced.union(left)) { return try reduce(forced: forced, candidates: left) }
            if evidence.status(allFlags.subtracting(forced.union(right)), repeats: repeats) != .good {
                assumed = true
                return try reduce(forced: forced, candidates: right)
            }
        }
        switch try firstReproducing(forced.union(left), forced.union(right)) {
        case 0: return try reduce(forced: forced, candidates: left)
        case 1: return try reduce(forced: forced, candidates: right)
        default:
            let leftPart = try reduce(forced: forced.union(right), candidates: left)
            let rightPart = try reduce(forced: forced.union(leftPart), candidates: right)
            return leftPart.union(rightPart)
        }
    }

    /// Verifies the answer: re-runs each fix and the minimal fix, re-checks the all-enabled run. (Causes were
    /// checked, or proven, to be minimal as they were found.)
    func verify(_ tree: CauseTree) throws -> BisectOutcome {
        guard !tree.causes.isEmpty else { return outcome(.none, message: "no configuration reproduced the freeze") }
        try requireAllDisabledGood()
        let fixes = tree.causes.dropFirst().reduce(tree.causes[0]) { $0.intersection($1) }
        let minimalFix = tree.goodNodes.min { $0.count < $1.count } ?? []
        var claims: [BisectClaim] = []
        for fix in fixes.sorted().map({ Set([$0]) }) + (minimalFix.count > 1 ? [minimalFix] : []) {
            if evidence[fix].verifyRuns == 0 { try execute([fix], phase: .verify) }
            guard try decide(fix) == .good else { throw SearchInterrupt.restart }
            claims.append(claim("disabling \(names(fix).joined(separator: " + ")) fixes the freeze", [fix]))
        }
        for cause in tree.causes where minimalityIsChecked(cause) || !flaky {
            // Checked configurations, or for a deterministic repro the clean runs of the reduction that prove them.
            let checks = cause.sorted().map { member in
                let check = allFlags.subtracting(cause.subtracting([member]))
                guard !minimalityIsChecked(cause) else { return check }
                return evidence.cleanWitness(disabled: check, member: member) ?? check
            }
            claims.append(claim("{\(names(cause).joined(separator: ", "))} is a minimal cause", checks))
        }
        let none = Set<Int>()
        while evidence[none].verifyFrozen == 0 {
            // Clean re-checks lower the measured freeze rate: when that asks for more repetitions, the
            // decisions made so far were too hasty, so search again with more.
            if flaky && options.repeats == nil && min(flakyRepeats(), options.maxRepeats) > repeats {
                throw SearchInterrupt.restart
            }
            guard evidence[none].verifyRuns < repeats else {
                throw SearchInterrupt.inconsistent("the all-enabled configuration no longer freezes")
            }
            try execute([none], phase: .verify)
        }
        claims.append(claim("with every flag enabled it still freezes", [none]))
        return outcome(.found, tree: tree, fixes: fixes, minimalFix: minimalFix, claims: claims)
    }

    /// Whether a cause's minimality is checked with runs: for causes of three or more flags. A freeze missed
    /// while searching shows as a flag too many in a cause, and AND interactions of three or more flags are rare.
    /// Smaller causes of a deterministic repro are minimal by the reduction's clean runs.
    func minimalityIsChecked(_ cause: Set<Int>) -> Bool { cause.count >= 3 }

    /// Checks, right after it is found (before its branches cost runs), that enabling a cause minus any one of
    /// its flags is good; a freeze there means a freeze was missed while searching. Each check needs twice the
    /// usual clean runs, and at least 4: for a repro that looked deterministic, these are where a missed freeze
    /// shows. The checks run in turn, one run each, so the one that freezes is reached early.
    func checkMinimal(_ cause: Set<Int>) throws {
        guard minimalityIsChecked(cause) else { return }
        let required = max(2 * repeats, 4)
        let checks = cause.sorted().map { allFlags.subtracting(cause.subtracting([$0])) }
        while true {
            let statuses = checks.map { evidence.status($0, repeats: required) }
            if let index = statuses.firstIndex(where: \.reproduces) {
                let rest = allFlags.subtracting(checks[index])
                try missedFreeze("{\(names(rest).joined(separator: ","))} alone froze")
            }
            let undecided = checks.indices.filter { statuses[$0] == .undecided }.map { checks[$0] }
            if undecided.isEmpty { return }
            let next = undecided.min { evidence[$0].total < evidence[$1].total }!
            let batch = options.parallelism >= 2 ? Array(undecided.prefix(options.parallelism)) : [next]
            try execute(batch, phase: .verify)
        }
    }

    /// A verified claim, with the runs of the configurations (disabled sets) behind it.
    private func claim(_ statement: String, _ configurations: [Set<Int>]) -> BisectClaim {
        let evidence = configurations.map { disabled in
            let runs = self.evidence[disabled]
            return "disabled {\(names(disabled).joined(separator: ","))}: \(runs.frozen) frozen, \(runs.clean) good, "
                + "\(runs.inconclusive) inconclusive"
        }
        return BisectClaim(statement: statement, passed: true, evidence: evidence.joined(separator: "; "))
    }

    func outcome(
        _ verdict: BisectVerdict, tree: CauseTree = CauseTree(), fixes: Set<Int> = [], minimalFix: Set<Int> = [],
        claims: [BisectClaim] = [], message: String? = nil
    ) -> BisectOutcome {
        let calibration = evidence[[]]
        let rate = calibration.frozen + calibration.clean == 0
            ? nil : Double(calibration.frozen) / Double(calibration.frozen + calibration.clean)
        let defaultMessages: [BisectVerdict: String] = [
            .notReproducible: "with nothing disabled the command did not freeze",
            .notAttributable: "with every flag disabled the command still froze or did not run cleanly",
            .tooFlaky: "the freeze is too unreliable for a confident answer within the run budget",
        ]
        return BisectOutcome(
            verdict: verdict, flags: flags, causes: tree.causes.map(names), fixes: names(fixes),
            minimalFix: names(minimalFix), claims: claims, trials: trials, freezeRate: rate, repeats: repeats,
            message: message ?? defaultMessages[verdict])
    }
}
