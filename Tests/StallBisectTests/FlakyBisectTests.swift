@testable import StallBisect
import Testing

/// The search on flaky simulated repros: how often it is right, and within how many runs. Every repro is seeded,
/// so each test gives the same figures on every run; tools/bench-bisect.sh measures more seeds.
@Suite struct FlakyBisectTests {
    static let twelve = (0..<12).map { "f\($0)" }

    func search(_ repro: SimulatedRepro) throws -> BisectOutcome {
        try BisectSearch(flags: Self.twelve, run: repro.predicate()).search()
    }

    func sorted(_ causes: [[String]]) -> [[String]] { causes.map { $0.sorted() }.sorted { $0.lexicographicallyPrecedes($1) } }

    /// The AND pair of seed `seed`, as the benchmark places it.
    func pair(_ seed: Int) -> [String] {
        ["f\(seed % 12)", "f\((seed % 12 + 1 + (seed / 12) % 11) % 12)"].sorted()
    }

    /// Members of a cause of `size` flags placed by `seed`.
    func members(_ size: Int, seed: Int) -> [String] {
        var generator = SplitMix64(state: UInt64(seed) &* 0x9E37_79B9_7F4A_7C15)
        return Array(Self.twelve.shuffled(using: &generator).prefix(size))
    }

    /// 70 % freeze rate, AND pair placed by the seed: the right answer within 90 runs for at least 99 % of 400
    /// fixed seeds.
    @Test func flakyAndPair() throws {
        var failures: [Int] = []
        for seed in 1...400 {
            let outcome = try search(SimulatedRepro(causes: [Set(pair(seed))], freezeRate: 0.7, seed: UInt64(seed)))
            let right = outcome.verdict == .found && sorted(outcome.causes) == [pair(seed)]
            if !right || outcome.trials.count > 90 { failures.append(seed) }
        }
        #expect(failures.count <= 4, "seeds \(failures)")
    }

    /// Issue 9: a 50 %-flaky repro gets the right answer within 90 runs at least 95 % of the time (the same 400
    /// seeds; halving with repeated runs reached 90 %, the Bayesian search of ``BisectSearch/locate(in:)`` 97 %).
    @Test func fiftyPercentFlakyAndPair() throws {
        var (wrong, over90) = (0, 0)
        for seed in 1...400 {
            let outcome = try search(SimulatedRepro(causes: [Set(pair(seed))], freezeRate: 0.5, seed: UInt64(seed)))
            if outcome.verdict != .found || sorted(outcome.causes) != [pair(seed)] {
                wrong += 1
            } else if outcome.trials.count > 90 {
                over90 += 1
            }
        }
        #expect(wrong <= 4, "wrong or no answer for \(wrong) of 400 seeds")
        #expect(wrong + over90 <= 20, "\(wrong + over90) of 400 seeds not right within 90 runs")
    }

    /// Two independent causes, each freezing half of the runs: both found.
    @Test func flakyOrPair() throws {
        var wrong: [Int] = []
        for seed in 1...60 {
            let causes = members(2, seed: seed).map { [$0] }
            let outcome = try search(SimulatedRepro(causes: causes.map(Set.init), freezeRate: 0.5, seed: UInt64(seed)))
            if outcome.verdict != .found || sorted(outcome.causes) != sorted(causes) { wrong.append(seed) }
        }
        #expect(wrong.count <= 3, "seeds \(wrong)")
    }

    /// An AND of three (the largest cause with hypotheses of its own) and of four (the universe hypothesis wins,
    /// and halving finds it), 70 % and 80 % flaky.
    @Test(arguments: [(3, 0.7), (4, 0.8)]) func flakyLargerAnd(size: Int, rate: Double) throws {
        var wrong: [Int] = []
        for seed in 1...30 {
            let cause = members(size, seed: seed).sorted()
            let outcome = try search(SimulatedRepro(causes: [Set(cause)], freezeRate: rate, seed: UInt64(seed)))
            if outcome.verdict != .found || sorted(outcome.causes) != [cause] { wrong.append(seed) }
        }
        #expect(wrong.count <= 1, "seeds \(wrong)")
    }

    /// A flag whose disabling crashes the app, in a flaky repro: the Bayesian search never re-runs a configuration
    /// that crashed (it would learn nothing and spend the budget); the cause is still found.
    @Test func aCrashingFlagInAFlakyRepro() throws {
        var wrong: [Int] = []
        for seed in 1...20 {
            let repro = SimulatedRepro(
                causes: [["f0", "f1"]], freezeRate: 0.7, crashWhenDisabled: ["f2"], seed: UInt64(seed))
            let outcome = try BisectSearch(flags: ["f0", "f1", "f2", "f3"], run: repro.predicate()).search()
            if outcome.verdict != .found || sorted(outcome.causes) != [["f0", "f1"]] || outcome.trials.count > 90 {
                wrong.append(seed)
            }
        }
        #expect(wrong.count <= 1, "seeds \(wrong)")
    }

    @Test func tooFlakySaysSo() throws {
        let outcome = try search(SimulatedRepro(causes: [["f4"]], freezeRate: 0.15, seed: 7))
        #expect(outcome.verdict == .tooFlaky || outcome.verdict == .notReproducible)
    }

    /// Clean runs of different configurations are never summed: a dozen configurations that each enable the cause
    /// and ran clean once do not make the cause alone good.
    @Test func cleanRunsOfManyConfigurationsDoNotAddUp() {
        var evidence = EvidenceStore()
        evidence.pooling = true
        let cause: Set<Int> = [1, 2]
        for extra in 3..<12 { evidence.record(Set(3..<12).subtracting([extra]).union([0]), .good, phase: .search) }
        evidence.record([], .frozen, phase: .calibrate)
        let onlyTheCause = Set(0..<12).subtracting(cause)
        #expect(evidence.cleanRuns(onlyTheCause) == 1)
        #expect(evidence.status(onlyTheCause, repeats: 7) == .undecided)
    }

    /// The hypotheses of a universe: every subset of one to three flags, and the universe itself only when larger.
    @Test func hypothesesCoverSmallSubsets() throws {
        let four = try #require(CauseHypotheses(universe: [2, 5, 7, 9]))
        #expect(four.count == 4 + 6 + 4 + 1)
        #expect(four.members(four.universeIndex) == [2, 5, 7, 9])
        let three = try #require(CauseHypotheses(universe: [1, 4, 8]))
        #expect(three.count == 3 + 3 + 1)
        #expect(three.universeIndex == -1)
        let large = try #require(CauseHypotheses(universe: Array(0..<200)))
        #expect(large.coveredSize == 2)
    }
}
