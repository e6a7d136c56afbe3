import StallFormat

/// One app marker (`StallMarker`) as the report shows it, on the episodes' clock.
public struct MarkerSummary: Sendable, Equatable {
    /// Index of its capture in ``StallReport/captures``.
    public var capture: Int
    /// The name the app gave.
    public var name: String
    /// An instant or an interval.
    public var kind: Marker.Kind
    /// Start, milliseconds after the capture's start (the origin of ``EpisodeSummary/startMs``).
    public var startMs: Double
    /// An interval's duration in milliseconds; nil for an instant or an interval that never ended in the file.
    public var durationMs: Double?
    /// Kernel tid of the thread that marked it.
    public var tid: Int32
}

/// A capture's markers by start time, with the latest end among the first k, so that the markers overlapping a
/// window are found without scanning them all for every episode.
struct MarkerIndex {
    let markers: [MarkerSummary]
    private let reach: [Double]

    /// `markers` must be sorted by start.
    init(_ markers: [MarkerSummary]) {
        self.markers = markers
        var reach: [Double] = []
        for m in markers {
            let end = m.kind == .instant ? m.startMs : m.startMs + (m.durationMs ?? .infinity)
            reach.append(max(reach.last ?? -.infinity, end))
        }
        self.reach = reach
    }

    /// The markers whose time overlaps `[low, high]`, by start time.
    func overlapping(_ low: Double, _ high: Double) -> [MarkerSummary] {
        var lower = 0, upper = markers.count  // markers that start at or before `high`: [0, lower)
        while lower < upper {
            let mid = (lower + upper) / 2
            if markers[mid].startMs <= high { lower = mid + 1 } else { upper = mid }
        }
        var first = lower  // back while some earlier marker may still reach `low`
        while first > 0 && reach[first - 1] >= low { first -= 1 }
        return markers[first..<lower].filter { m in
            (m.kind == .instant ? m.startMs : m.startMs + (m.durationMs ?? .infinity)) >= low
        }
    }
}

extension StallReport {
    /// Markers shown with an episode: those that overlap the episode or the second before or after it.
    public static let markerMarginNs: UInt64 = 1_000_000_000
    /// Episodes of a group whose timeline the text prints; the JSON has every episode's markers.
    static let timelineEpisodes = 3
    /// Markers one text timeline lists; the JSON has every one.
    static let timelineRows = 12
    /// Columns of a timeline's strip.
    static let stripWidth = 30

    /// Every marker of `capture`, on its episodes' clock.
    static func markers(of capture: Capture, index: Int) -> [MarkerSummary] {
        let origin = capture.originNs
        return capture.markers.map { marker in
            MarkerSummary(
                capture: index, name: marker.name, kind: marker.kind,
                startMs: Double(marker.startNs &- min(origin, marker.startNs)) / 1e6,
                durationMs: marker.durationNs.map { Double($0) / 1e6 }, tid: marker.tid)
        }
    }

    /// The markers that overlap `episode` widened by ``markerMarginNs`` on each side (an interval that never
    /// ended runs to the end of time), in `index`'s order.
    static func markers(_ index: MarkerIndex, around episode: EpisodeSummary) -> [MarkerSummary] {
        let margin = Double(markerMarginNs) / 1e6
        return index.overlapping(episode.startMs - margin, episode.startMs + episode.durationMs + episode.pausedMs + margin)
    }

    /// A marker as JSON: `name`, `kind`, `startMs`, `durationMs` (intervals only; null when never ended), `tid`,
    /// then `capture` when `withCapture` (the top-level list).
    static func json(marker m: MarkerSummary, withCapture: Bool) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("name", .string(m.name)), ("kind", .string(m.kind.rawValue)),
            ("startMs", .double(ReportFormat.rounded(m.startMs, 3))),
        ]
        if m.kind == .interval { members.append(("durationMs", .number(m.durationMs.map { ReportFormat.rounded($0, 3) }))) }
        members.append(("tid", .int(Int(m.tid))))
        if withCapture { members.append(("capture", .int(m.capture))) }
        return .object(members)
    }

    /// The text timelines of a group's episodes that have markers: time from the episode's start, a strip
    /// (`#` the episode, `|` an instant, `[===]` an interval, `>` one that never ended) and the name.
    func timelines(_ members: [EpisodeSummary]) -> [String] {
        let shown = members.filter { !$0.markers.isEmpty }
        var lines: [String] = []
        for episode in shown.prefix(Self.timelineEpisodes) {
            lines += timeline(episode)
        }
        if shown.count > Self.timelineEpisodes {
            lines.append("  (timelines of \(shown.count - Self.timelineEpisodes) more episodes in --json)")
        }
        return lines
    }

    private func timeline(_ e: EpisodeSummary) -> [String] {
        var lines = Self.wrap("timeline of \(label(e)), ms from its start (markers within 1 s of it)",
                              first: "  ", indent: "    ")
        let markers = Array(e.markers.prefix(Self.timelineRows))
        let episodeEnd = e.startMs + e.durationMs + e.pausedMs
        let low = min(e.startMs, markers.map(\.startMs).min() ?? e.startMs)
        let high = max(episodeEnd, markers.map { $0.startMs + ($0.durationMs ?? 0) }.max() ?? episodeEnd)
        let column = { (ms: Double) -> Int in
            guard high > low else { return 0 }
            return min(Self.stripWidth - 1, max(0, Int((ms - low) / (high - low) * Double(Self.stripWidth - 1))))
        }
        func strip(_ from: Double, _ to: Double?, _ fill: Character, open: Bool = false) -> String {
            var cells = [Character](repeating: " ", count: Self.stripWidth)
            let a = column(from), b = to.map(column) ?? Self.stripWidth - 1
            for k in a...max(a, b) { cells[k] = fill }
            if fill == "=" { cells[a] = "["; if b > a { cells[b] = open ? ">" : "]" } }
            return String(cells)
        }
        var rows: [(at: Double, order: Int, strip: String, label: String)] = []
        rows.append((e.startMs, 1, strip(e.startMs, episodeEnd, "#"),
                     "\(e.kind) \(e.id) (\(Self.oneDecimalMs(e.durationMs)))"))
        for marker in markers {
            let thread = marker.tid == e.tid ? "" : ", thread \(marker.tid)"
            switch marker.kind {
            case .instant:
                rows.append((marker.startMs, 0, strip(marker.startMs, marker.startMs, "|"), marker.name + thread))
            case .interval:
                let lasted = marker.durationMs.map(Self.oneDecimalMs) ?? "not ended"
                rows.append((marker.startMs, 0,
                             strip(marker.startMs, marker.durationMs.map { marker.startMs + $0 }, "=",
                                   open: marker.durationMs == nil),
                             "\(marker.name) (\(lasted)\(thread))"))
            }
        }
        rows.sort { ($0.at, $0.order) < ($1.at, $1.order) }
        for row in rows {
            let time = Self.signedMs(row.at - e.startMs)
            let prefix = "    " + String(repeating: " ", count: max(0, 9 - time.count)) + time + "  " + row.strip + " "
            lines.append(prefix + ReportFormat.fit(row.label, width: Self.textWidth - prefix.count))
        }
        if e.markers.count > markers.count { lines.append("    (\(e.markers.count - markers.count) more markers in --json)") }
        return lines
    }

    /// `-352.1`, `0.0`, `461.0` (milliseconds, one decimal).
    static func signedMs(_ value: Double) -> String {
        guard value.isFinite, abs(value) < 1e12 else { return "?" }
        let tenths = Int((value * 10).rounded())
        return (tenths < 0 ? "-" : "") + "\(abs(tenths) / 10).\(abs(tenths) % 10)"
    }

    /// `461.0 ms`.
    static func oneDecimalMs(_ value: Double) -> String { signedMs(value) + " ms" }
}
