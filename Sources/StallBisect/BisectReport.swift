import FoundationEssentials
import StallFormat

/// The JSON result of `stallprof bisect` (`--json`), schema `stallprof.bisect/v1`.
public struct BisectReport: Codable, Sendable {
    /// Always `stallprof.bisect/v1`.
    public var schema = "stallprof.bisect/v1"
    /// `found`, `none`, `inconsistent`, `not-reproducible`, `not-attributable` or `too-flaky`.
    public var verdict: BisectVerdict
    /// Why, for verdicts other than `found`.
    public var message: String?
    /// The command run (after `--`).
    public var command: [String]
    /// The flags searched, in order.
    public var flags: [String]
    /// Flags the app never reported consulting (nil when it reported none: it may not link StallProfiler).
    public var unconsultedFlags: [String]?
    /// Minimal sets of flags that must all be enabled for the freeze.
    public var causes: [[String]]
    /// Flags whose disabling alone makes the command good.
    public var fixes: [String]
    /// A smallest set of flags whose disabling makes the command good.
    public var minimalFix: [String]
    /// Executions of the command, calibration and verification included (the length of `trials`).
    public var runs: Int
    /// Clean runs that made a configuration good.
    public var repeats: Int
    /// Freeze rate of the all-enabled configuration.
    public var freezeRate: Double?
    /// What was verified.
    public var claims: [Claim]
    /// Every run, in order.
    public var trials: [BisectTrial]

    /// One verified statement.
    public struct Claim: Codable, Sendable {
        /// The statement.
        public var statement: String
        /// True when verified.
        public var passed: Bool
        /// The runs behind it.
        public var evidence: String
    }

    /// The report of `outcome` for `command`; `consulted` is the set of flags the app reported reading.
    public init(_ outcome: BisectOutcome, command: [String], consulted: Set<String>) {
        verdict = outcome.verdict
        message = outcome.message
        self.command = command
        flags = outcome.flags
        unconsultedFlags = consulted.isEmpty ? nil : outcome.flags.filter { !consulted.contains($0) }
        causes = outcome.causes
        fixes = outcome.fixes
        minimalFix = outcome.minimalFix
        runs = outcome.trials.count
        repeats = outcome.repeats
        freezeRate = outcome.freezeRate
        claims = outcome.claims.map { Claim(statement: $0.statement, passed: $0.passed, evidence: $0.evidence) }
        trials = outcome.trials
    }

    /// Pretty-printed JSON with sorted keys, ending with a newline.
    public func json() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(self), as: UTF8.self) + "\n"
    }

    /// JUnit XML: one test case per verified claim; a verdict other than `found` is one failing case.
    public func junit() -> String {
        var cases = claims.map { claim in
            JUnitXML.Case(
                className: "stallprof.bisect", name: claim.statement,
                failure: claim.passed ? nil : (message: "not verified", text: ""), output: claim.evidence)
        }
        if verdict != .found {
            cases.append(JUnitXML.Case(
                className: "stallprof.bisect", name: "bisect verdict", failure: (message: verdict.rawValue, text: message ?? "")))
        }
        return JUnitXML.document(suite: "stallprof bisect", cases: cases)
    }

    /// A Markdown summary for GitHub Actions' step summary.
    public func markdownSummary() -> String {
        func set(_ names: [String]) -> String { names.isEmpty ? "-" : names.map { "`\($0)`" }.joined(separator: ", ") }
        var lines = [
            "### stallprof bisect: \(verdict.rawValue)", "",
            message.map { "\($0)\n" } ?? "",
            "| | |", "| --- | --- |",
            "| causes | \(causes.isEmpty ? "-" : causes.map { set($0) }.joined(separator: "; ")) |",
            "| fixes (each alone) | \(set(fixes)) |",
            "| minimal fix | \(set(minimalFix)) |",
            "| runs | \(runs) (a configuration is good after \(repeats) clean run\(repeats == 1 ? "" : "s")) |",
        ]
        if let unconsultedFlags, !unconsultedFlags.isEmpty { lines.append("| never consulted | \(set(unconsultedFlags)) |") }
        lines += ["", "| # | phase | disabled | verdict | main-thread CPU | seconds |", "| --- | --- | --- | --- | --- | --- |"]
        for (index, trial) in trials.enumerated() {
            let cpu = trial.mainThreadCPU.map { "\($0)" } ?? "-"
            let seconds = trial.seconds.map { "\($0)" } ?? "-"
            lines.append("| \(index + 1) | \(trial.phase.rawValue) | \(set(trial.disabled)) | \(trial.verdict.rawValue) | \(cpu) | \(seconds) |")
        }
        return lines.joined(separator: "\n") + "\n\n"
    }
}
