#if canImport(Glibc)
import Glibc
#endif

/// How the search spends runs. Every field documents its default.
public struct BisectSearchOptions: Sendable {
    /// Runs of the all-enabled configuration that must all freeze for the repro to be treated as deterministic
    /// (then one clean run makes a configuration good, and every later run is checked for signs of flakiness:
    /// the first sign starts the full calibration). Default: 1.
    public var deterministicCalibrationRuns = 1
    /// Runs of the all-enabled configuration without a freeze that make the repro `not-reproducible`; once it
    /// froze, half of the most runs spent measuring a low freeze rate before calling it `too-flaky`. Default: 10.
    public var flakyCalibrationRuns = 10
    /// Runs of the all-enabled configuration that first measure the freeze rate of a flaky repro; the search's own
    /// runs refine it (those of every configuration holding a cause found). Default: 4.
    public var flakyMeasureRuns = 4
    /// Accepted probability that one configuration judged good is in fact a missed freeze. With a measured
    /// freeze rate p, a configuration is good after k clean runs with (1 - p)^k <= this. Default: 0.01.
    public var missProbability = 0.01
    /// Clean runs that make a configuration good, fixed (`--repeat`); nil chooses from the calibration: 1 for a
    /// deterministic repro, more for a flaky one. Default: nil.
    public var repeats: Int? = nil
    /// Most clean runs per configuration; a repro that needs more is `too-flaky`. Default: 12.
    public var maxRepeats = 12
    /// Most runs of the command in total; a flaky repro that needs more is `too-flaky`. Default: 200.
    public var maxRuns = 200
    /// Runs started at once (`-j`). Runs of undecided configurations are batched; a batch may run a
    /// configuration the sequential search would have skipped. Default: 1.
    public var parallelism = 1

    /// Creates the default options.
    public init() {}

    /// The clean runs needed for a freeze rate `rate` (0 < rate <= 1).
    func repeatsNeeded(freezeRate rate: Double) -> Int {
        guard rate < 1 else { return 1 }
        guard rate > 0 else { return Int.max }
        let needed = log(missProbability) / log(1 - rate)
        return needed >= Double(Int.max / 2) ? Int.max : max(2, Int(needed.rounded(.up)))
    }
}
