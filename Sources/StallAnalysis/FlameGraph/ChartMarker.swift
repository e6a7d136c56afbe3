import StallFormat

/// An app marker (`StallMarker`) placed on a flame chart's axis: counts from the left edge, oldest sample first.
public struct ChartMarker: Sendable, Equatable {
    /// The name the app gave.
    public var name: String
    /// An instant or an interval.
    public var kind: Marker.Kind
    /// Where it starts on the axis, in counts.
    public var start: Double
    /// Where it ends (an instant: ``start``).
    public var end: Double
    /// The tooltip: name, kind, time from the capture's start, duration, thread.
    public var title: String

    /// Creates a chart marker.
    public init(name: String, kind: Marker.Kind, start: Double, end: Double, title: String) {
        self.name = name
        self.kind = kind
        self.start = start
        self.end = end
        self.title = title
    }

    /// The markers of `capture` on the axis of its selected samples in time order (the order of
    /// ``StallCaptureImporter/timeOrdered(_:diagnostics:)``, drawn oldest first): those within a second of a
    /// selected episode (the report's rule). Sample `k` covers `[k, k + 1)`; a time between two samples of one
    /// episode falls proportionally between their centres; a time outside every episode (the chart has no axis
    /// there) falls on the edge between the episodes around it.
    public static func place(_ capture: Capture, options: StallCaptureImporter.Options) -> [ChartMarker] {
        var times: [UInt64] = [], episodeOf: [Int] = []
        var windows: [ClosedRange<UInt64>] = []
        for selected in options.selection.episodes(of: capture) {
            let (stall, margin) = (selected.episode, StallReport.markerMarginNs)
            let end = stall.endNs
            windows.append((stall.begin.startNs &- min(margin, stall.begin.startNs))...(end &+ min(margin, .max - end)))
            for sample in selected.samples {
                times.append(sample.timestampNs)
                episodeOf.append(selected.index)
            }
        }
        guard !times.isEmpty else { return [] }
        func position(_ t: UInt64) -> Double {
            // The last sample at or before t (samples are in time order within and across episodes).
            var low = 0, high = times.count
            while low < high {
                let mid = (low + high) / 2
                if times[mid] <= t { low = mid + 1 } else { high = mid }
            }
            let k = low - 1
            if k < 0 { return 0 }
            if k == times.count - 1 { return t == times[k] ? Double(k) + 0.5 : Double(times.count) }
            guard episodeOf[k] == episodeOf[k + 1], times[k + 1] > times[k] else { return Double(k + 1) }
            return Double(k) + 0.5 + Double(t - times[k]) / Double(times[k + 1] - times[k])
        }
        // Windows begin in episode order; the latest end among the first k tells whether any of them reaches t.
        windows.sort { $0.lowerBound < $1.lowerBound }
        var reach: [UInt64] = []
        for window in windows { reach.append(max(reach.last ?? 0, window.upperBound)) }
        func nearEpisode(_ start: UInt64, _ end: UInt64) -> Bool {
            var low = 0, high = windows.count  // windows that begin at or before `end`: [0, low)
            while low < high {
                let mid = (low + high) / 2
                if windows[mid].lowerBound <= end { low = mid + 1 } else { high = mid }
            }
            return low > 0 && reach[low - 1] >= start
        }
        let origin = capture.originNs
        return capture.markers.compactMap { marker in
            let end = marker.kind == .instant ? marker.startNs : marker.durationNs.map { marker.startNs &+ $0 } ?? .max
            guard nearEpisode(marker.startNs, end) else { return nil }
            let at = ReportFormat.threeDecimals(Double(marker.startNs &- min(origin, marker.startNs)) / 1e6)
            var title = "\(marker.name) (\(marker.kind.rawValue) at \(at) ms"
            if marker.kind == .interval {
                title += marker.durationNs.map { ", \(ReportFormat.threeDecimals(Double($0) / 1e6)) ms" } ?? ", not ended"
            }
            title += ", thread \(marker.tid))"
            return ChartMarker(name: marker.name, kind: marker.kind, start: position(marker.startNs),
                               end: end == .max ? Double(times.count) : position(end), title: title)
        }
    }

    /// `markers` moved `offset` counts to the right.
    static func shifted(_ markers: [ChartMarker], by offset: Double) -> [ChartMarker] {
        markers.map { var m = $0; m.start += offset; m.end += offset; return m }
    }
}
