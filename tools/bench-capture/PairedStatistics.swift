// The statistic of the slowdown benchmark: a mean of paired contrasts with a t-based 95 % confidence interval.
//
// Each observation is one block of four windows of equal work, off/on/on/off (ABBA): the contrast is
// 100 × (1 − (cost of the two off windows) / (cost of the two on windows)), the percentage of work lost per unit of
// cost. Differencing adjacent windows cancels what drifts slowly on a shared VM (the host's clock frequency, a
// sibling hyperthread's load, a build on the other CPU), and the ABBA order cancels a drift that is linear over the
// block, so each contrast keeps only the noise that changes within a few milliseconds. Blocks share no window, so
// their contrasts are treated as independent (the lag-1 autocorrelation is printed to check it); the mean of n of
// them has standard error sd/√n, and the interval is mean ± t(0.975, n−1)·sd/√n. The mean, not the median, is the
// estimate: work lost per CPU second is an average, and a rare slow sample is part of it; the median is printed
// beside it for comparison.
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

/// Contrasts of one kind (one rate, one measure of cost) and their summary.
struct PairedContrasts {
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
    var interval: Interval {
        Interval(estimate: mean(values), halfWidth: halfWidth95(values), median: median(values))
    }

    /// The slowdown at exactly `target` samples a second: the cost of one sample, as a ratio estimate
    /// c = mean(slowdown) / mean(rate), times `target`. Its interval comes from the delta method: the residuals
    /// slowdown − c·rate have mean 0 and standard error sd/√n, divided by mean(rate). The blocks' rates vary (a
    /// 10 ms stretch of on windows holds one or two samples at 100 Hz, and a request still unanswered when the last
    /// on window ends is answered between windows, counted in neither figure), so this is the figure to hold
    /// against a goal stated at a rate. The median is scaled by the same factor.
    func scaled(to target: Double) -> Interval {
        let meanRate = mean(rates)
        guard meanRate > 0 else { return interval }
        let c = mean(values) / meanRate
        let residuals = zip(values, rates).map { $0 - c * $1 }
        return Interval(estimate: c * target, halfWidth: halfWidth95(residuals) * target / meanRate,
                        median: median(values) * target / meanRate)
    }

    /// Sample standard deviation of the contrasts.
    var standardDeviation: Double { standardDeviationOf(values) }

    /// Lag-1 autocorrelation of the contrasts in the order measured: near 0 when blocks are independent, as the
    /// interval assumes (a positive one would make it too narrow).
    var lag1: Double {
        guard values.count > 2 else { return 0 }
        let m = mean(values)
        var num = 0.0, den = 0.0
        for i in values.indices {
            den += (values[i] - m) * (values[i] - m)
            if i > 0 { num += (values[i] - m) * (values[i - 1] - m) }
        }
        return den > 0 ? num / den : 0
    }

    private func mean(_ x: [Double]) -> Double { x.isEmpty ? 0 : x.reduce(0, +) / Double(x.count) }

    private func standardDeviationOf(_ x: [Double]) -> Double {
        guard x.count > 1 else { return 0 }
        let m = mean(x)
        return (x.reduce(0) { $0 + ($1 - m) * ($1 - m) } / Double(x.count - 1)).squareRoot()
    }

    /// Half the width of the 95 % confidence interval of the mean of `x`.
    private func halfWidth95(_ x: [Double]) -> Double {
        guard x.count > 1 else { return .infinity }
        return studentT975(degreesOfFreedom: x.count - 1) * standardDeviationOf(x) / Double(x.count).squareRoot()
    }
}

/// The 0.975 quantile of Student's t with `df` degrees of freedom: exact table below 30, then the Cornish-Fisher
/// expansion around the normal quantile (error under 1e-4 from 30 on; the benchmark has hundreds of blocks).
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
