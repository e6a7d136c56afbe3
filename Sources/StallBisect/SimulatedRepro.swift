/// A simulated command under bisection, for tests and benchmarks of ``BisectSearch``: it freezes when every
/// flag of some cause is enabled, with a given probability, from a seeded random generator.
public final class SimulatedRepro: @unchecked Sendable {
    /// Sets of flags that must all be enabled for a freeze.
    public let causes: [Set<String>]
    /// Probability that a configuration holding a cause freezes in one run. Default: 1 (deterministic).
    public let freezeRate: Double
    /// Flags whose disabling makes the app crash instead of freezing (while a cause is enabled). Default: none.
    public let crashWhenDisabled: Set<String>
    /// Runs made so far.
    public private(set) var runs = 0
    private var generator: SplitMix64

    /// Creates a simulated repro.
    public init(causes: [Set<String>], freezeRate: Double = 1, crashWhenDisabled: Set<String> = [], seed: UInt64 = 1) {
        self.causes = causes
        self.freezeRate = freezeRate
        self.crashWhenDisabled = crashWhenDisabled
        generator = SplitMix64(state: seed)
    }

    /// One run with `disabled` disabled.
    public func observe(disabled: [String]) -> BisectObservation {
        runs += 1
        let off = Set(disabled)
        guard causes.contains(where: { $0.isDisjoint(with: off) }) else { return BisectObservation(.good) }
        if !crashWhenDisabled.isDisjoint(with: off) { return BisectObservation(.inconclusive, detail: "signal 11") }
        return BisectObservation(nextUnit() < freezeRate ? .frozen : .good)
    }

    /// The predicate in the shape ``BisectSearch`` takes.
    public func predicate() -> BisectSearch.Run {
        { configurations, _ in configurations.map(self.observe(disabled:)) }
    }

    /// A uniform number in [0, 1).
    private func nextUnit() -> Double { Double(generator.next() >> 11) / Double(1 << 53) }
}

/// SplitMix64: a small seeded random number generator, so that simulations and tests reproduce.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    /// The generator's state; the seed.
    public var state: UInt64

    /// Creates a generator from a seed.
    public init(state: UInt64) { self.state = state }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
