import StallFormat

/// One condition of `report --fail-on` (docs/REPORT.md, "A CI gate"): `stall>500ms`, `saturated>1s`, `busy>200ms`,
/// `blocked>200ms`, `episode>500ms` (any episode), `hang-rate>5s/h`, `episodes>0`. It holds when an episode of the
/// subject lasted longer than the limit, when the hang rate (frozen seconds per recorded hour) is above it, or when
/// more episodes than the limit were selected.
public struct GateCondition: Sendable, Equatable, CustomStringConvertible {
    /// What the condition looks at.
    public enum Subject: String, Sendable, CaseIterable {
        case stall, saturated, busy, blocked, episode
        case hangRate = "hang-rate"
        case episodes
    }

    /// What it looks at.
    public let subject: Subject
    /// The limit: milliseconds for an episode's duration, seconds per hour for the hang rate, a count for
    /// `episodes`.
    public let limit: Double
    /// The text it was given.
    public let description: String

    /// Parses `stall>500ms`, `saturated>1s`, `hang-rate>5s/h`, `episodes>0`... A malformed one is a usage error
    /// naming it and the forms it takes.
    public init(parsing text: String) throws(StallError) {
        let usage = StallError.usage(
            "--fail-on takes SUBJECT>LIMIT (stall, saturated, busy, blocked or episode>DURATION such as 500ms or 1s; "
                + "hang-rate>5s/h; episodes>N), not '\(text)'")
        let parts = text.split(separator: ">", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let subject = Subject(rawValue: String(parts[0])) else { throw usage }
        let raw = String(parts[1])
        func number(_ digits: Substring) -> Double? {
            guard let value = Double(digits), value.isFinite, value >= 0, digits.allSatisfy({ $0.isNumber || $0 == "." })
            else { return nil }
            return value
        }
        var limit: Double?
        switch subject {
        case .episodes:
            limit = raw.allSatisfy(\.isNumber) ? number(Substring(raw)) : nil
        case .hangRate:
            if raw.hasSuffix("ms/h") { limit = number(raw.dropLast(4)).map { $0 / 1000 } }
            else if raw.hasSuffix("s/h") { limit = number(raw.dropLast(3)) }
        default:
            if raw.hasSuffix("ms") { limit = number(raw.dropLast(2)) }
            else if raw.hasSuffix("s") { limit = number(raw.dropLast(1)).map { $0 * 1000 } }
        }
        guard let limit else { throw usage }
        self.subject = subject
        self.limit = limit
        self.description = text
    }

    /// The episodes (indexes into `report.episodes`) that make the condition hold, or for the capture-wide
    /// subjects every selected episode when it holds; nil when it does not hold.
    public func offenders(in report: StallReport) -> [Int]? {
        let all = Array(report.episodes.indices)
        switch subject {
        case .hangRate:
            return (report.summary.stallSecondsPerHour ?? 0) > limit ? all : nil
        case .episodes:
            return Double(report.episodes.count) > limit ? all : nil
        default:
            let found = all.filter { index in
                let e = report.episodes[index]
                let matches = switch subject {
                case .stall: e.kind == .stall
                case .saturated: e.kind == .saturated
                case .busy: e.state == .busy
                case .blocked: e.state == .blocked
                default: true
                }
                return matches && e.durationMs > limit
            }
            return found.isEmpty ? nil : found
        }
    }
}

/// The outcome of `report --fail-on`: each condition with the episodes that make it hold.
public struct ReportGate: Sendable {
    /// Each condition and its offenders (nil: it does not hold), in the order given.
    public let results: [(condition: GateCondition, offenders: [Int]?)]
    private let lines: [Int: String]

    /// Checks `conditions` against `report`.
    public init(_ conditions: [GateCondition], report: StallReport) {
        results = conditions.map { ($0, $0.offenders(in: report)) }
        var lines: [Int: String] = [:]
        for (index, e) in report.episodes.enumerated() {
            let at = e.startWallNs.map { " at \(ReportFormat.clock($0)) UTC" } ?? ""
            lines[index] = "\(report.label(e)) (\(e.state?.description ?? "unclassified"), "
                + "\(ReportFormat.seconds(e.durationMs / 1000))\(at))"
        }
        self.lines = lines
    }

    /// True when some condition holds.
    public var failed: Bool { results.contains { $0.offenders != nil } }

    /// One line per condition that holds, with its offending episodes (at most ten named).
    public var text: String {
        results.compactMap { result -> String? in
            guard let offenders = result.offenders else { return nil }
            let named = offenders.prefix(10).compactMap { lines[$0] }.joined(separator: ", ")
            let more = offenders.count > 10 ? " and \(offenders.count - 10) more" : ""
            return "failed: \(result.condition): " + (named.isEmpty ? "no episode" : named + more)
        }.joined(separator: "\n")
    }

    /// JUnit XML: one test case per condition, failing with its episodes when it holds.
    public func junit() -> String {
        let cases = results.map { result in
            JUnitXML.Case(
                className: "stallprof.report", name: "not \(result.condition)",
                failure: result.offenders.map { offenders in
                    (message: "\(result.condition) holds", text: offenders.compactMap { lines[$0] }.joined(separator: "\n"))
                })
        }
        return JUnitXML.document(suite: "stallprof report", cases: cases)
    }

    /// A Markdown table for GitHub Actions' step summary.
    public func markdownSummary() -> String {
        var rows = ["### stallprof report: \(failed ? "failed" : "passed")", "", "| condition | result | episodes |",
                    "| --- | --- | --- |"]
        for result in results {
            let episodes = result.offenders.map { $0.prefix(10).compactMap { lines[$0] }.joined(separator: "; ") } ?? "-"
            rows.append("| `\(result.condition)` | \(result.offenders == nil ? "passed" : "**failed**") | \(episodes) |")
        }
        return rows.joined(separator: "\n") + "\n\n"
    }
}
