#if canImport(Glibc)
import Glibc
#endif

/// Finding one cause of a flaky freeze by Bayesian adaptive testing.
///
/// Halving, as the deterministic search does, asks yes-or-no questions; with a flaky repro each "no" costs the
/// clean runs that make a configuration good (7 at a 50 % freeze rate), and an AND pair split across the halves
/// asks that of both halves. Here every run counts as evidence instead:
/// - The hypotheses are the subsets of the universe (the smallest configuration seen to freeze, or to crash,
///   inside the enabled flags: it holds a cause, or is treated as holding one) of one, two or three flags, as many sizes as stay within
///   ``CauseHypotheses/limit``, and the universe itself for any larger cause; a prior prefers small causes
///   (1: 50 %, 2: 35 %, 3: 15 %, more: 5 %).
/// - The freeze rate p is unknown, with a uniform prior. A run of a configuration that enables a hypothesis
///   freezes with probability p, so its clean runs weigh it by (1 - p) each; configurations enabling the whole
///   universe measure p for all of them. Integrating p out, a hypothesis's weight is
///   prior × B(F + 1, C + C_S + 1), where F and C are the freezes and clean runs of those configurations and C_S
///   the clean runs of configurations (that never froze or crashed) enabling the hypothesis.
/// - A freeze inside the universe shrinks it to that configuration (only its subsets remain possible).
/// - The next run is the configuration, among a nested sequence (flags removed from the universe least likely
///   first), whose outcome carries the most information about the cause.
/// - The search stops when one hypothesis holds 1 - ``BisectSearchOptions/missProbability`` of the weight.
///
/// A cause of more flags than the hypotheses cover, once the universe holds little else, wins as the universe
/// itself: with more than one flag beyond the hypotheses' largest size left, halving (``reduce(forced:candidates:)``) finds it inside. Halving is
/// also what runs when every informative test left is a configuration that crashed, and when the posterior
/// has not settled within 2 × ``BisectSearchOptions/maxRepeats`` × log2(flags) runs.
extension BisectSearch {
    /// A minimal cause inside `enabled`, which reproduces, for a flaky repro.
    func locate(in enabled: Set<Int>) throws -> Set<Int> {
        // Runs this search may spend before it hands over to halving: a posterior that cannot settle (two
        // hypotheses that only a configuration that crashes could tell apart) must not spend the whole budget.
        let bits = enabled.count.bitWidth - enabled.count.leadingZeroBitCount
        let budget = trials.count + 2 * options.maxRepeats * max(2, bits)
        while true {
            guard trials.count < budget, let universe = smallestReproducing(within: enabled),
                let hypotheses = CauseHypotheses(universe: universe.sorted())
            else { return try reduce(forced: [], candidates: enabled.sorted()) }
            let (weights, rates) = hypotheses.posterior(evidence: evidence)
            let total = weights.reduce(0, +)
            let best = weights.indices.max { weights[$0] < weights[$1] }!
            if universe.count == 1 { return universe }
            if weights[best] / total >= 1 - options.missProbability {
                // A cause larger than the hypotheses: halving finds it inside the universe.
                if best == hypotheses.universeIndex && universe.count > hypotheses.coveredSize + 1 {
                    return try reduce(forced: [], candidates: universe.sorted())
                }
                return hypotheses.members(best)
            }
            // A configuration that crashed is not run again: it would not move the posterior. Without another
            // test, halving decides (it counts a crash as "not fixed").
            let tests = informativeTests(hypotheses, weights: weights.map { $0 / total }, rates: rates)
                .map { allFlags.subtracting($0) }.filter { evidence[$0].inconclusive == 0 }
            if tests.isEmpty { return try reduce(forced: [], candidates: universe.sorted()) }
            // With -j, the most informative tests; repeated when there are fewer than the runs at once.
            try execute((0..<max(1, options.parallelism)).map { tests[$0 % tests.count] }, phase: .search)
        }
    }

    /// The smallest configuration (by enabled flags) inside `enabled` that froze or crashed (a crash is "not
    /// fixed", as everywhere in the search); ties broken by sorted indices.
    func smallestReproducing(within enabled: Set<Int>) -> Set<Int>? {
        evidence.byConfiguration.filter { $0.value.frozen > 0 || $0.value.inconclusive > 0 }.keys
            .map { allFlags.subtracting($0) }
            .filter { $0.isSubset(of: enabled) }
            .map { $0.sorted() }
            .min { $0.count != $1.count ? $0.count < $1.count : $0.lexicographicallyPrecedes($1) }
            .map(Set.init)
    }

    /// Enabled sets to run next, most informative first: the universe with its flags removed one at a time,
    /// the least likely member of the cause first, each scored by the expected information of one run.
    private func informativeTests(_ hypotheses: CauseHypotheses, weights: [Double], rates: [Double]) -> [Set<Int>] {
        let universe = hypotheses.universe
        var enabled = Array(repeating: true, count: universe.count)
        var scored: [(Set<Int>, Double)] = []
        for _ in 1..<universe.count {
            // Weight, per position, of the hypotheses still enabled that contain it.
            var byPosition = Array(repeating: 0.0, count: universe.count)
            for index in weights.indices where hypotheses.isEnabled(index, enabled) {
                for position in hypotheses.memberPositions(index) { byPosition[position] += weights[index] }
            }
            let next = enabled.indices.filter { enabled[$0] }.min { byPosition[$0] < byPosition[$1] }!
            enabled[next] = false
            var freeze = 0.0
            var conditional = 0.0
            for index in weights.indices where hypotheses.isEnabled(index, enabled) {
                freeze += weights[index] * rates[index]
                conditional += weights[index] * binaryEntropy(rates[index])
            }
            let set = Set(universe.indices.filter { enabled[$0] }.map { universe[$0] })
            scored.append((set, binaryEntropy(freeze) - conditional))
        }
        return scored.sorted { $0.1 > $1.1 }.map(\.0)
    }
}

/// Entropy, in bits, of a yes-or-no outcome with probability `p`.
func binaryEntropy(_ p: Double) -> Double {
    guard p > 0, p < 1 else { return 0 }
    return -(p * log2(p) + (1 - p) * log2(1 - p))
}

/// Every candidate cause inside a universe: its subsets of one, two or three flags (as many sizes as fit in
/// ``limit``), and last, when it is larger, the universe itself, standing for every larger cause (its prior is
/// the share of one four-flag cause: ``largerPrior`` spread over the universe's four-flag subsets).
struct CauseHypotheses {
    /// Most hypotheses considered; a larger universe covers fewer sizes, or falls back to the reduction.
    static let limit = 60_000
    /// Prior weight of each cause size, shared by the hypotheses of that size.
    static let sizePrior: [Double] = [0.5, 0.35, 0.15]
    /// Prior weight of causes of four flags or more.
    static let largerPrior = 0.05

    /// The flags of the universe, sorted; hypotheses hold positions in it.
    let universe: [Int]
    /// The largest size of cause with a hypothesis of its own.
    private(set) var coveredSize = 0
    /// True when the last hypothesis is the universe itself (it has more flags than ``coveredSize``).
    private(set) var hasUniverse = false
    /// Positions of each hypothesis's members, three slots each (-1 when unused).
    private var slots: [Int] = []
    private var prior: [Double] = []

    /// Creates the hypotheses, or nil when not even the single flags fit.
    init?(universe: [Int]) {
        self.universe = universe
        let n = universe.count
        let choose = { (k: Int) -> Int in k == 1 ? n : k == 2 ? n * (n - 1) / 2 : n * (n - 1) * (n - 2) / 6 }
        guard n <= Self.limit else { return nil }
        for size in 1...min(3, n) where prior.count + choose(size) <= Self.limit {
            coveredSize = size
            let share = Self.sizePrior[size - 1] / Double(choose(size))
            for a in 0..<n {
                if size == 1 { add([a], share) }
                for b in (a + 1)..<n where size >= 2 {
                    if size == 2 { add([a, b], share) }
                    for c in (b + 1)..<n where size == 3 { add([a, b, c], share) }
                }
            }
        }
        // The universe itself, when larger than every hypothesis: enabled only where all of the universe is.
        guard n > coveredSize else { return }
        let fours = Double(n) * Double(n - 1) * Double(n - 2) * Double(n - 3) / 24
        prior.append(Self.largerPrior / max(1, fours))
        hasUniverse = true
    }

    private mutating func add(_ positions: [Int], _ share: Double) {
        slots += positions + Array(repeating: -1, count: 3 - positions.count)
        prior.append(share)
    }

    /// The number of hypotheses, the universe included.
    var count: Int { prior.count }

    /// The index of the hypothesis that stands for the whole universe, or -1 when there is none.
    var universeIndex: Int { hasUniverse ? prior.count - 1 : -1 }

    /// The flags of hypothesis `index`.
    func members(_ index: Int) -> Set<Int> {
        index == universeIndex ? Set(universe) : Set(memberPositions(index).map { universe[$0] })
    }

    /// Which universe positions a set of flags enables.
    func positions(enabled: (Int) -> Bool) -> [Bool] { universe.map(enabled) }

    /// True when hypothesis `index` is enabled where `enabled` (by universe position) says so.
    func isEnabled(_ index: Int, _ enabled: [Bool]) -> Bool {
        if index == universeIndex { return !enabled.contains(false) }
        let base = 3 * index
        return enabled[slots[base]] && (slots[base + 1] < 0 || enabled[slots[base + 1]])
            && (slots[base + 2] < 0 || enabled[slots[base + 2]])
    }

    /// Position of each member of hypothesis `index` (none for the universe).
    func memberPositions(_ index: Int) -> ArraySlice<Int> {
        index == universeIndex ? [] : slots[(3 * index)..<(3 * index + 3)].prefix { $0 >= 0 }
    }

    /// Clean runs, per hypothesis, of the configurations that enable it and never froze or crashed.
    private func cleanRuns(evidence: EvidenceStore) -> [Int] {
        var clean = Array(repeating: 0, count: count)
        for (disabled, runs) in evidence.byConfiguration
        where runs.frozen == 0 && runs.inconclusive == 0 && runs.clean > 0 {
            let enabled = positions { !disabled.contains($0) }
            for index in 0..<count where isEnabled(index, enabled) { clean[index] += runs.clean }
        }
        return clean
    }

    /// Freezes and clean runs of configurations that froze and enable the whole universe: they measure p for all.
    private func universeRuns(evidence: EvidenceStore) -> (frozen: Double, clean: Double) {
        let runs = evidence.frozenConfigurations.filter { $0.isDisjoint(with: universe) }.map { evidence[$0] }
        return (Double(runs.reduce(0) { $0 + $1.frozen }), Double(runs.reduce(0) { $0 + $1.clean }))
    }

    /// The posterior weight of each hypothesis (scaled so that the largest is 1), and its expected freeze rate
    /// (its posterior mean of p: (F + 1) / (F + C + C_S + 2)).
    func posterior(evidence: EvidenceStore) -> (weights: [Double], rates: [Double]) {
        let (frozen, clean) = universeRuns(evidence: evidence)
        let own = cleanRuns(evidence: evidence)
        // log(prior) + log B(F + 1, C + C_S + 1), without the term log Γ(F + 1) that every hypothesis shares.
        let logs = own.indices.map { index in
            let c = clean + Double(own[index])
            return log(prior[index]) + lgamma(c + 1) - lgamma(frozen + c + 2)
        }
        let top = logs.max() ?? 0
        return (logs.map { exp($0 - top) }, own.map { (frozen + 1) / (frozen + clean + Double($0) + 2) })
    }
}
