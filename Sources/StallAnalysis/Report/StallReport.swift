import StallFormat

/// Options of `stallprof report`. Every field documents its default.
public struct StallReportOptions: Sendable {
    /// How many functions to list per stall, by self samples. Default: 5.
    public var topFunctions = 5
    /// Which stalls to describe. Default: `.all`.
    public var state: StallStateFilter = .all
    /// How names are resolved. Default: ``SymbolizerOptions/init()``.
    public var symbolizer = SymbolizerOptions()

    /// Creates the default options.
    public init() {}
}

/// A plain-text summary of a capture: the process, a table of its stalls (start, duration, busy or blocked, CPU,
/// samples) and, for each stall, the functions its samples were in.
public struct StallReport {
    /// One function's share of a stall's samples.
    public struct FunctionShare: Equatable, Sendable {
        /// The function's name.
        public var name: String
        /// Samples with the function as the leaf.
        public var selfSamples: Int
        /// Samples with the function anywhere on the stack.
        public var totalSamples: Int
    }

    /// The capture described.
    public let capture: Capture
    /// The options used.
    public let options: StallReportOptions
    /// For each stall id, its functions by self samples, most first.
    public private(set) var functions: [UInt32: [FunctionShare]] = [:]
    /// For each stall id, the innermost frames that lie in the app's executable, by samples, most first: where
    /// the app's own code was when the leaf is in a library (a lock wait in libc, a layout pass in a framework).
    /// Empty for stalls whose samples never leave the executable.
    public private(set) var appFrames: [UInt32: [FunctionShare]] = [:]

    /// Builds the report, resolving names from the capture's image map.
    public init(capture: Capture, options: StallReportOptions = StallReportOptions()) {
        self.capture = capture
        self.options = options
        let symbolizer = Symbolizer(images: capture.images, options: options.symbolizer)
        let executable = capture.process?.executable
        for stall in capture.stalls where options.state.accepts(stall.state) {
            var selfCounts: [String: Int] = [:], totalCounts: [String: Int] = [:], appCounts: [String: Int] = [:]
            var leavesOutsideApp = false
            for sample in stall.samples where !sample.frames.isEmpty {
                let names = symbolizer.rootFirstNames(leafFirst: sample.frames)
                selfCounts[names[names.count - 1], default: 0] += 1
                for name in Set(names) { totalCounts[name, default: 0] += 1 }
                let inApp = sample.frames.firstIndex { symbolizer.image(containing: $0)?.path == executable }
                if let inApp {
                    leavesOutsideApp = leavesOutsideApp || inApp > 0
                    appCounts[names[names.count - 1 - inApp], default: 0] += 1
                }
            }
            functions[stall.id] = Self.shares(selfCounts, totals: totalCounts)
            appFrames[stall.id] = leavesOutsideApp ? Self.shares(appCounts, totals: totalCounts) : []
        }
    }

    /// Counts as shares, most samples first (ties by name).
    static func shares(_ counts: [String: Int], totals: [String: Int]) -> [FunctionShare] {
        counts.map { FunctionShare(name: $0.key, selfSamples: $0.value, totalSamples: totals[$0.key] ?? 0) }
            .sorted { ($0.selfSamples, $1.name) > ($1.selfSamples, $0.name) }
    }

    /// The report as text.
    public func rendered() -> String {
        var lines: [String] = []
        let stalls = capture.stalls.filter { options.state.accepts($0.state) }
        if let p = capture.process {
            lines.append("capture \(capture.source): pid \(p.pid), \(p.executable)")
            lines.append("threshold \(Self.milliseconds(p.thresholdNs)), sample interval \(Self.milliseconds(p.sampleIntervalNs))"
                + (capture.closedCleanly ? ", closed cleanly" : ", not closed (the process ended without stopping the watchdog)"))
        }
        let busy = stalls.filter { $0.state == .busy }.count, blocked = stalls.filter { $0.state == .blocked }.count
        let total = stalls.reduce(UInt64(0)) { $0 + $1.durationNs }
        lines.append("\(stalls.count) stall\(stalls.count == 1 ? "" : "s"): \(busy) busy, \(blocked) blocked, \(Self.seconds(total)) in all")
        guard !stalls.isEmpty else { return lines.joined(separator: "\n") + "\n" }
        lines.append("")
        let origin = capture.process?.startMonotonicNs ?? stalls[0].begin.startNs
        var table = [["stall", "start", "duration", "state", "active", "cpu", "samples", "missed", "thread"]]
        for stall in stalls {
            table.append([
                "\(stall.id)" + (stall.isFinished ? "" : "*"),
                "+" + Self.seconds(stall.begin.startNs &- min(origin, stall.begin.startNs)),
                Self.seconds(stall.durationNs), stall.state?.description ?? "?", Self.percent(stall.activeRatio),
                Self.percent(stall.cpuRatio), "\(stall.samples.count)", stall.end.map { "\($0.missedCount)" } ?? "-",
                "\(stall.begin.threadID)",
            ])
        }
        lines += Self.columns(table)
        if stalls.contains(where: { !$0.isFinished }) { lines.append("* unfinished: the file ends during the stall") }
        for stall in stalls {
            let shares = functions[stall.id] ?? []
            let sampled = shares.reduce(0) { $0 + $1.selfSamples }
            guard sampled > 0 else { continue }
            lines.append("")
            lines.append("stall \(stall.id) (\(stall.state?.description ?? "unclassified"), \(Self.seconds(stall.durationNs))): where its \(sampled) samples were")
            var rows = [["self", "total", "function"]]
            for share in shares.prefix(options.topFunctions) {
                rows.append([Self.percent(Double(share.selfSamples) / Double(sampled)),
                             Self.percent(Double(share.totalSamples) / Double(sampled)), share.name])
            }
            lines += Self.columns(rows).map { "  " + $0 }
            let app = appFrames[stall.id] ?? []
            guard !app.isEmpty else { continue }
            lines.append("  innermost frames in the executable:")
            var appRows: [[String]] = []
            for share in app.prefix(options.topFunctions) {
                appRows.append([Self.percent(Double(share.selfSamples) / Double(sampled)), share.name])
            }
            lines += Self.columns(appRows).map { "  " + $0 }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    static func seconds(_ ns: UInt64) -> String {
        let value = Double(ns) / 1e9
        return value < 10 ? threeDecimals(value) + " s" : String(Int(value.rounded())) + " s"
    }

    static func threeDecimals(_ value: Double) -> String {
        let thousandths = Int((value * 1000).rounded())
        let fraction = String(thousandths % 1000)
        return "\(thousandths / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }

    static func milliseconds(_ ns: UInt64) -> String {
        ns % 1_000_000 == 0 ? "\(ns / 1_000_000) ms" : threeDecimals(Double(ns) / 1e6) + " ms"
    }

    static func percent(_ ratio: Double?) -> String {
        guard let ratio else { return "-" }
        return "\(Int((ratio * 100).rounded()))%"
    }

    /// Left-aligned columns separated by two spaces; the last column is not padded.
    static func columns(_ rows: [[String]]) -> [String] {
        guard let width = rows.first?.count else { return [] }
        let widths = (0..<width).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { index, cell in
                index == width - 1 ? cell : cell + String(repeating: " ", count: widths[index] - cell.count)
            }.joined(separator: "  ")
        }
    }
}
