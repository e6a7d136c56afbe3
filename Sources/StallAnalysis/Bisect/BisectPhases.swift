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
    /// Calibration; returns a verdict when the search cannot go on.
    func calibrate() throws -> BisectVerdict? {
        let none = Set<Int>()
        try runUntil(none, total: options.deterministicCalibrationRuns)
        let first = evidence[none]
        flaky = flaky || first.frozen < first.total
        if first.frozen == 0 || (flaky && options.repeats == nil) {
            try runUntil(none, total: options.flakyCalibrationRuns)
            if evidence[none].frozen == 0 { return .notReproducible }
        }
        if let fixed = options.repeats {
            repeats = fixed
        } else if flaky {
            // A low estimate from few runs is uncertain: measure longer before calling the repro too flaky.
            if options.repeatsNeeded(freezeRate: evidence.freezeRate(none)) > options.maxRepeats {
                try runUntil(none, total: 2 * options.flakyCalibrationRuns)
            }
            repeats = max(repeats, options.repeatsNeeded(freezeRate: evidence.freezeRate(none)))
            if repeats > options.maxRepeats { return .tooFlaky }
        }
        return try decide(allFlags, phase: .calibrate) == .good ? nil : .notAttributable
    }

    private func runUntil(_ disabled: Set<Int>, total: Int) throws {
        while evidence[disabled].total < total {
            let count = min(options.parallelism, total - evidence[disabled].total)
            try execute(Array(repeating: disabled, count: count), phase: .calibrate)
        }
    }

    /// The hitting-set tree over causes, breadth first. Every minimal cause is found: a node's cause and any
    /// other cause differ in some member, and the branch that disables that member keeps the other cause.
    func findCauses() throws -> CauseTree {
        var tree = CauseTree()
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
                let found = try reduce(forced: [], candidates: enabled.sorted())
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
                cause = found
            }
            queue += cause!.sorted().map { node.union([$0]) }
        }
        return tree
    }

    /// A minimal subset S of `candidates` such that `forced` + S reproduces, given that `forced` + all the
    /// candidates reproduces and `forced` alone does not.
    func reduce(forced: Set<Int>, candidates: [Int]) throws -> Set<Int> {
        if candidates.count == 1 { return Set(candidates) }
        let left = Array(candidates[..<(candidates.count / 2)])
        let right = Array(candidates[(candidates.count / 2)...])
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
    /// checked to be minimal as they were found.)
    func verify(_ tree: CauseTree) throws -> BisectOutcome {
        guard !tree.causes.isEmpty else { return outcome(.none, message: "no configuration reproduced the freeze") }
        let fixes = tree.causes.dropFirst().reduce(tree.causes[0]) { $0.intersection($1) }
        let minimalFix = tree.goodNodes.min { $0.count < $1.count } ?? []
        var claims: [BisectClaim] = []
        for fix in fixes.sorted().map({ Set([$0]) }) + (minimalFix.count > 1 ? [minimalFix] : []) {
            if evidence[fix].verifyRuns == 0 { try execute([fix], phase: .verify) }
            guard try decide(fix) == .good else { throw SearchInterrupt.restart }
            claims.append(claim("disabling \(names(fix).joined(separator: " + ")) fixes the freeze", [fix]))
        }
        for cause in tree.causes where minimalityIsChecked(cause) {
            let checks = cause.sorted().map { allFlags.subtracting(cause.subtracting([$0])) }
            claims.append(claim("{\(names(cause).joined(separator: ", "))} is a minimal cause", checks))
        }
        let none = Set<Int>()
        while evidence[none].verifyFrozen == 0 {
            // Clean re-checks lower the measured freeze rate: when that asks for more repetitions, the
            // decisions made so far were too hasty, so search again with more.
            if flaky && options.repeats == nil && options.repeatsNeeded(freezeRate: evidence.freezeRate(none)) > repeats {
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

    /// Whether a cause's minimality is checked: always for a deterministic repro (one run per check), and for
    /// causes of three or more flags with a flaky one. A freeze missed while searching shows as a flag too many
    /// in a cause; AND interactions of three or more flags are rare, so their checks need twice the usual clean
    /// runs.
    func minimalityIsChecked(_ cause: Set<Int>) -> Bool { !flaky || cause.count >= 3 }

    /// Checks, right after it is found (before its branches cost runs), that enabling a cause minus any one of
    /// its flags is good; a freeze there means a freeze was missed while searching.
    func checkMinimal(_ cause: Set<Int>) throws {
        guard minimalityIsChecked(cause) else { return }
        for member in cause.sorted() {
            let rest = cause.subtracting([member])
            if try reproduces(enabled: rest, phase: .verify, atLeast: cause.count >= 3 ? 2 * repeats : 1) {
                try missedFreeze("{\(names(rest).joined(separator: ","))} alone froze")
            }
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
