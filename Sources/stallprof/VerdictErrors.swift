import StallBisect

/// A bisection ended with a verdict other than `found`; `runMain` maps it to an exit code.
struct BisectVerdictError: Error, CustomStringConvertible {
    /// The verdict.
    var verdict: BisectVerdict
    /// Why.
    var message: String
    /// One line for standard error.
    var description: String { "bisect: \(verdict.rawValue): \(message)" }
}

/// `stallprof check` found the run frozen or inconclusive; `runMain` maps it to exit 1 or 125.
struct CheckVerdictError: Error, CustomStringConvertible {
    /// The run's verdict (never `.good`).
    var verdict: RunVerdict
    /// One line for standard error.
    var description: String
}
