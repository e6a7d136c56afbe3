/// What the runs of one configuration showed so far.
public struct ConfigurationEvidence: Sendable, Equatable {
    /// Runs that froze.
    public var frozen = 0
    /// Runs that were good.
    public var clean = 0
    /// Runs that crashed, failed or were killed before a verdict.
    public var inconclusive = 0
    /// Runs made to verify the answer (counted in the three above as well).
    public var verifyRuns = 0
    /// Verification runs that froze.
    public var verifyFrozen = 0

    /// Every run of the configuration.
    public var total: Int { frozen + clean + inconclusive }

    mutating func add(_ verdict: RunVerdict, phase: BisectPhase) {
        switch verdict {
        case .frozen: frozen += 1
        case .good: clean += 1
        case .inconclusive: inconclusive += 1
        }
        if phase == .verify {
            verifyRuns += 1
            if verdict == .frozen { verifyFrozen += 1 }
        }
    }
}

/// The status of a configuration under the current number of clean runs required.
enum ConfigurationStatus: Equatable {
    /// At least one run froze: a freeze is trusted.
    case frozen
    /// No run froze, at least one was inconclusive: never counted as fixed.
    case inconclusive
    /// Enough clean runs and nothing else.
    case good
    /// More runs are needed.
    case undecided

    /// True when the configuration still shows the problem (a freeze, or no clean answer).
    var reproduces: Bool { self == .frozen || self == .inconclusive }
}

/// Every configuration run so far (a configuration is the set of disabled flag indices), used as a cache so
/// that no configuration runs more often than the search needs, and to detect contradictions.
struct EvidenceStore {
    private(set) var byConfiguration: [Set<Int>: ConfigurationEvidence] = [:]
    /// Let a configuration be judged by others (set for a flaky repro). Freezing is monotone in the enabled flags:
    /// a configuration is good when one that enables at least its flags and never froze ran clean often enough
    /// (see ``cleanRuns(_:)``), and it reproduces when one that enables fewer of its flags froze (it holds that
    /// cause too).
    var pooling = false
    /// Configurations whose pooled clean runs were shown to be misses (a configuration enabling fewer flags
    /// froze); each raised the clean runs required once, and ``contradiction(repeats:)`` skips them after that.
    private(set) var acknowledged: Set<Set<Int>> = []

    /// The causes (flag indices) the current search has found so far: with ``pooling``, every configuration
    /// enabling one of them holds a cause, so its runs measure the freeze rate. Reset when the search restarts.
    var foundCauses: [Set<Int>] = []

    /// Records that the miss at `disabled` has been acted on.
    mutating func acknowledge(_ disabled: Set<Int>) { acknowledged.insert(disabled) }

    subscript(_ disabled: Set<Int>) -> ConfigurationEvidence { byConfiguration[disabled] ?? ConfigurationEvidence() }

    mutating func record(_ disabled: Set<Int>, _ verdict: RunVerdict, phase: BisectPhase) {
        byConfiguration[disabled, default: ConfigurationEvidence()].add(verdict, phase: phase)
    }

    /// The status of `disabled` when `repeats` clean runs make a configuration good.
    func status(_ disabled: Set<Int>, repeats: Int) -> ConfigurationStatus {
        let evidence = self[disabled]
        if evidence.frozen > 0 { return .frozen }
        if evidence.inconclusive > 0 { return .inconclusive }
        if pooling, byConfiguration.contains(where: { $0.value.frozen > 0 && disabled.isSubset(of: $0.key) }) {
            return .frozen
        }
        return cleanRuns(disabled) >= repeats ? .good : .undecided
    }

    /// The clean runs that speak for `disabled`: its own, and with ``pooling`` the most of any configuration that
    /// disables a subset of its flags and has only clean runs (one judged good makes every configuration enabling
    /// fewer flags good). Runs of different configurations are never summed: the configurations that froze would
    /// be left out of the sum, and the clean runs of a dozen configurations that each ran once, all holding the
    /// cause, would add up to "good".
    func cleanRuns(_ disabled: Set<Int>) -> Int {
        guard pooling else { return self[disabled].clean }
        return byConfiguration.reduce(0) { most, entry in
            entry.value.frozen == 0 && entry.value.inconclusive == 0 && entry.key.isSubset(of: disabled)
                ? max(most, entry.value.clean) : most
        }
    }

    /// A configuration (disabled set) that ran clean, never froze, disables `member` and enables at least the
    /// flags that `disabled` enables; the one enabling the fewest flags. For a deterministic repro, whose freezing
    /// is monotone in the enabled flags, it proves that disabling `disabled` is good.
    func cleanWitness(disabled: Set<Int>, member: Int) -> Set<Int>? {
        let clean = byConfiguration.filter {
            $0.value.clean > 0 && $0.value.frozen == 0 && $0.key.contains(member) && $0.key.isSubset(of: disabled)
        }
        // Most flags disabled first; ties broken by the sorted indices, so the choice does not depend on hashing.
        return clean.keys.map { $0.sorted() }
            .max { $0.count != $1.count ? $0.count < $1.count : $1.lexicographicallyPrecedes($0) }.map(Set.init)
    }

    /// The configurations (disabled sets) that froze at least once.
    var frozenConfigurations: [Set<Int>] { byConfiguration.filter { $0.value.frozen > 0 }.map(\.key) }

    /// True when some configuration ran clean.
    var hasCleanRun: Bool { byConfiguration.values.contains { $0.clean > 0 } }

    /// True when some configuration both froze and ran clean: the repro is not deterministic.
    var showsFlakiness: Bool { byConfiguration.values.contains { $0.frozen > 0 && $0.clean > 0 } }

    /// A configuration judged good although one that disables a superset of its flags (enables fewer) froze.
    /// Freezing is monotone in the enabled flags, so this means a freeze was missed.
    func contradiction(repeats: Int) -> Set<Int>? {
        let frozen = byConfiguration.filter { $0.value.frozen > 0 }.map(\.key)
        for (disabled, evidence) in byConfiguration where evidence.frozen == 0 && evidence.inconclusive == 0 {
            guard !acknowledged.contains(disabled), cleanRuns(disabled) >= repeats else { continue }
            if frozen.contains(where: { disabled.isSubset(of: $0) }) { return disabled }
        }
        return nil
    }

    /// The freeze rate measured on every configuration known to hold a cause (it froze, or with ``pooling`` one
    /// enabling fewer of its flags froze, or it enables one of ``foundCauses``): (freezes + 0.5) / (freezes + clean runs + 1). The all-enabled runs of
    /// the calibration are among them; the search adds its own, so the estimate sharpens as it goes. (A question
    /// stops at a configuration's first freeze: the pooled ratio is the geometric estimate, slightly high.)
    /// `optimistic` gives a one-sided 95 % upper bound instead (normal approximation).
    func causeFreezeRate(optimistic: Bool = false) -> Double {
        let holding = byConfiguration.filter { entry in
            entry.value.frozen > 0
                || (pooling && byConfiguration.contains { $0.value.frozen > 0 && entry.key.isSubset(of: $0.key) })
                || (pooling && foundCauses.contains { $0.isDisjoint(with: entry.key) })
        }
        let frozen = Double(holding.values.reduce(0) { $0 + $1.frozen })
        let runs = frozen + Double(holding.values.reduce(0) { $0 + $1.clean })
        let rate = (frozen + 0.5) / (runs + 1)
        return optimistic ? min(1, rate + 1.645 * (rate * (1 - rate) / (runs + 1)).squareRoot()) : rate
    }

    /// The freeze rate of a configuration: (freezes + 0.5) / (freezes + clean runs + 1). Meant for the
    /// all-enabled configuration, whose runs do not stop at the first freeze (so the estimate is not biased).
    func freezeRate(_ disabled: Set<Int>) -> Double {
        let evidence = self[disabled]
        return (Double(evidence.frozen) + 0.5) / (Double(evidence.frozen + evidence.clean) + 1)
    }
}
