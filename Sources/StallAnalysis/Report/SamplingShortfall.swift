import StallFormat

/// The text report's line on episodes the watchdog sampled slower than asked, under a group's heading:
/// `sampling: asked 1000/s, got 250/s (one per scheduler tick)` (docs/REPORT.md, `samplesPerSecond`). Only the
/// watchdog's own figure counts (``EpisodeSummary/sampleRate``): it measured the rate over the span it watched
/// the thread and judged what held it back; the figure computed for older captures is in the JSON alone.
enum SamplingShortfall {
    /// Share of the asked rate below which an episode counts as sampled short: a watchdog that keeps its schedule
    /// gets within a few percent of it (a sample late by a wake-up is made up for by the next).
    static let shortShare = 0.9

    /// True when `episode` has the watchdog's figure and it fell short of the asked rate: the tick held it back,
    /// or it is below ``shortShare`` of the asked one.
    static func isShort(_ episode: EpisodeSummary) -> Bool {
        guard let rate = episode.sampleRate, let asked = episode.askedSamplesPerSecond else { return false }
        return rate.limit == .tick || rate.samplesPerSecond < shortShare * asked
    }

    /// The lines of a group of `members`, indented for its section: one per asked rate and limit among the short
    /// episodes, each naming how many of the group's episodes it covers when there are several. Empty when none
    /// fell short.
    static func lines(_ members: [EpisodeSummary]) -> [String] {
        let short = members.filter(isShort)
        var classes: [(asked: Double, limit: SampleRateLimit, rates: [Double])] = []
        for episode in short {
            guard let asked = episode.askedSamplesPerSecond, let rate = episode.sampleRate else { continue }
            if let index = classes.firstIndex(where: { $0.asked == asked && $0.limit == rate.limit }) {
                classes[index].rates.append(rate.samplesPerSecond)
            } else {
                classes.append((asked, rate.limit, [rate.samplesPerSecond]))
            }
        }
        return classes.flatMap { entry in
            let low = perSecond(entry.rates.min() ?? 0), high = perSecond(entry.rates.max() ?? 0)
            var text = "sampling: asked \(perSecond(entry.asked)), got " + (low == high ? low : "\(low.dropLast(2))-\(high)")
            if members.count > 1 { text += " in \(entry.rates.count) of \(members.count) episodes" }
            if entry.limit == .tick { text += " (one per scheduler tick)" }
            return StallReport.wrap(text, first: "  ", indent: "    ")
        }
    }

    /// `250/s`; one decimal below 10 (`2.5/s`).
    static func perSecond(_ rate: Double) -> String {
        guard rate.isFinite else { return "?/s" }
        if rate >= 10 { return "\(Int(min(rate, 1e15).rounded()))/s" }
        let tenths = Int((max(rate, 0) * 10).rounded())
        return "\(tenths / 10).\(tenths % 10)/s"
    }
}
