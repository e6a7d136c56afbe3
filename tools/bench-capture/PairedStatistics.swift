// The statistic of the slowdown benchmark: a mean of paired contrasts, with a 95 % confidence interval from batch
// means.
//
// Each observation is one block of four windows of equal work, off/on/on/off (ABBA): the contrast is
// 100 × (1 − (cost of the two off windows) / (cost of the two on windows)), the percentage of work lost per unit of
// cost. Differencing adjacent windows cancels what drifts slowly on a shared VM (the host's clock frequency, a
// build on the other CPU), and the ABBA order cancels a drift that is linear over the block, so each contrast keeps
// only the noise that changes within a few milliseconds.
//
// The contrasts are not independent, though: the cost of sampling itself changes for seconds at a time (above all
// with where the scheduler puts the sampler thread: on the sampled thread's CPU its wake-ups preempt the thread).
// Measured on this machine, means of 100 consecutive blocks varied 1.5-3.4 times as much as independent blocks
// would make them vary, though the lag-1 autocorrelation was below 0.1. So the interval comes from batch means:
// the blocks, in the order measured, are cut into 20 consecutive batches; the batch means are close to independent
// when a batch is longer than such a spell, and the interval is mean ± t(0.975, 19)·sd(batch means)/√20. It is
// wider than the naive t interval over blocks, and honest about the spells; `inflation` prints the ratio.
//
// The mean, not the median, is the estimate: work lost per CPU second is an average, and a rare slow sample is part
// of it (the contrasts' right tail is longer than their left; a 5 % trimmed mean came out lower by up to 0.02 %).
// The median is printed beside it for comparison.
import Foundation

/// An estimate with its 95 % confidence interval, and the median it is printed beside.
struct Interval {
    var estimate: Double, halfWidth: Double, median: Double

    /// "mean +0.120 %, 95 % CI [+0.080 %, +0.160 %] (±0.040), median +0.100 %".
    var summary: String {
        String(format: "mean %+.3f %%, 95 %% CI [%+.3f %%, %+.3f %%] (±%.3f), median %+.3f %%", estimate,
               estimate - halfWidth, estimate + halfWidth, halfWidth, median)
    }

    /// On which side of `goal` (percent) the interval puts the slowdown, and whether it is as narrow as ±goal.
    func verdict(goal: Double) -> String {
        let low = estimate - halfWidth, high = estimate + halfWidth
        let side = high < goal ? String(format: "goal (< %.1f %%) met", goal)
            : low > goal ? String(format: "goal (< %.1f %%) missed", goal)
            : String(format: "not resolved against the %.1f %% goal", goal)
        let width = halfWidth < goal ? String(format: "interval within ±%.1f %%", goal)
            : String(format: "interval wider than ±%.1f %%: more blocks needed", goal)
        return side + "; " + width
    }
}

/// Contrasts of one kind (one rate, one measure of cost), in the order measured, and their summary.
struct PairedContrasts {
    static let batches = 20
    private(set) var values: [Double] = []
    /// Per block: samples a second of the on windows' cost (their CPU time), for `scaled`.
    private(set) var rates: [Double] = []

    /// Adds the contrast of one off/on/on/off block: `off` and `on` are the summed costs of its two off and two on
    /// windows (CPU ns, wall ns or instructions for the same work); `rate`, samples a second in its on windows.
    mutating func add(off: Double, on: Double, rate: Double = 0) {
        guard off > 0, on > 0 else { return }
        values.append(100 * (1 - off / on))
        rates.append(rate)
    }

    var count: Int { values.count }

    /// The mean of the contrasts and its interval.
    var interval: Interval { scaled(to: nil) }

    /// With `target`, the slowdown at exactly `target` samples a second: the cost of one sample, as a ratio
    /// estimate c = mean(slowdown) / mean(rate), times `target`, with a delta-method interval (the batches'
    /// residuals mean(slowdown) − c·mean(rate) have mean 0; their standard error, divided by mean(rate)). The
    /// blocks' rates vary (a 10 ms stretch of on windows holds one or two samples at 100 Hz, and the sampler paces
    /// in wall time, so a preempted thread gets more per CPU second), so this is the figure to hold against a goal
    /// stated at a rate. The median is scaled by the same factor. Without `target`, the plain mean.
    func scaled(to target: Double?) -> Interval {
        let meanRate = mean(rates)
        let factor = target.map { meanRate > 0 ? $0 / meanRate : .nan } ?? 1
        let c = mean(values) * factor / (target ?? 1)
        let batchValues = batchMeans(values), batchRates = batchMeans(rates)
        let residuals = zip(batchValues, batchRates).map { target == nil ? $0 : $0 - c * $1 }
        let half = residuals.count < 2 ? Double.infinity
            : studentT975(degreesOfFreedom: residuals.count - 1) * standardDeviation(residuals)
                / Double(residuals.count).squareRoot()
        return Interval(estimate: mean(values) * factor, halfWidth: half * factor, median: median(values) * factor)
    }

    /// Sample standard deviation of the blocks' contrasts.
    var blockStandardDeviation: Double { standardDeviation(values) }

    /// How much more the batch means vary than independent blocks would make them: 1 for independent blocks.
    var inflation: Double {
        let perBatch = Double(values.count / Self.batches)
        let expected = standardDeviation(values) / perBatch.squareRoot()
        return expected > 0 ? standardDeviation(batchMeans(values)) / expected : 0
    }

    /// Means of `batches` consecutive runs of equal length (a remainder of fewer than `batches` blocks is left
    /// out); one mean per block when there are fewer blocks than that.
    private func batchMeans(_ x: [Double]) -> [Double] {
        let size = x.count / Self.batches
        guard size > 1 else { return x }
        return (0..<Self.batches).map { mean(Array(x[$0 * size..<($0 + 1) * size])) }
    }

    private func mean(_ x: [Double]) -> Double { x.isEmpty ? 0 : x.reduce(0, +) / Double(x.count) }

    private func standardDeviation(_ x: [Double]) -> Double {
        guard x.count > 1 else { return 0 }
        let m = mean(x)
        return (x.reduce(0) { $0 + ($1 - m) * ($1 - m) } / Double(x.count - 1)).squareRoot()
    }
}

/// The 0.975 quantile of Student's t with `df` degrees of freedom: a table below 30, then the Cornish-Fisher
/// expansion around the normal quantile (error under 1e-4 from 30 on).
func studentT975(degreesOfFreedom df: Int) -> Double {
    let table: [Double] = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
                           2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                           2.060, 2.056, 2.052, 2.048, 2.045]
    if df < 1 { return .infinity }
    if df <= table.count { return table[df - 1] }
    let z = 1.959964, v = Double(df)
    let z3 = z * z * z, z5 = z3 * z * z
    return z + (z3 + z) / (4 * v) + (5 * z5 + 16 * z3 + 3 * z) / (96 * v * v)
}
