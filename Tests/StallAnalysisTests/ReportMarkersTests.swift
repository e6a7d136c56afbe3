import Foundation
import StallFormat
import Testing

@testable import StallAnalysis

/// App markers in `stallprof report`: which markers an episode shows, and the text timeline.
@Suite struct ReportMarkersTests {
    /// One 1 s stall at 2,000 ms and `markers` (kind, span, ms after the capture's start, name, tid).
    func report(_ markers: [(MarkerRecord.Kind, UInt64, UInt64, String, Int32)]) throws -> StallReport {
        let records = ReportFixtures.records(
            ReportFixtures.episode(1, at: 2_000, durationMs: 1_000, state: .busy,
                                   samples: Array(repeating: [ReportFixtures.height, ReportFixtures.pass], count: 5))
            + markers.map { kind, span, ms, name, tid in
                .marker(MarkerRecord(kind: kind, spanID: span, threadID: tid,
                                     timestampNs: ReportFixtures.startNs + ms * 1_000_000, name: name))
            })
        return StallReport(captures: [try ReportFixtures.capture(records, name: "markers")])
    }

    @Test func anEpisodeShowsTheMarkersWithinASecondOfIt() throws {
        let report = try report([
            (.instant, 0, 999, "too early", 4242), (.instant, 0, 1_000, "just in", 4242),
            (.begin, 1, 100, "long before, over it", 4242), (.begin, 2, 500, "before, never ended", 4242),
            (.begin, 3, 200, "ended before the margin", 4242), (.end, 3, 900, "", 4242),
            (.instant, 0, 4_000, "just after", 4242), (.instant, 0, 4_001, "too late", 4242),
            (.end, 1, 5_000, "", 4242),
        ])
        let names = report.episodes[0].markers.map(\.name)
        #expect(names == ["long before, over it", "before, never ended", "just in", "just after"])
        #expect(report.markers.count == 7, "the top level lists every marker")
        let interval = try #require(report.episodes[0].markers.first)
        #expect(interval.kind == .interval && interval.startMs == 100 && interval.durationMs == 4_900)
        #expect(report.episodes[0].markers[1].durationMs == nil)
    }

    @Test func theTimelineOrdersMarkersAndTheEpisodeAndFits80Columns() throws {
        let long = String(repeating: "a-rather-long-marker-name ", count: 3)
        let report = try report([
            (.instant, 0, 1_650, "touchDown", 4242), (.begin, 1, 1_990, long, 4242), (.end, 1, 2_990, "", 4242),
            (.instant, 0, 3_010, "touchUp", 77),
        ])
        let text = report.text()
        for line in text.split(separator: "\n") { #expect(line.count <= StallReport.textWidth, "\(line)") }
        let lines = text.split(separator: "\n").map(String.init)
        let start = try #require(lines.firstIndex { $0.hasPrefix("  timeline of stall 1") })
        let rows = Array(lines[(start + 1)...].prefix(4))
        #expect(rows[0].hasPrefix("       -350.0  |") && rows[0].hasSuffix("touchDown"))
        #expect(rows[1].hasPrefix("        -10.0") && rows[1].contains("[") && rows[1].contains("]"))
        #expect(rows[2].hasPrefix("          0.0") && rows[2].contains("#") && rows[2].hasSuffix("stall 1 (1000.0 ms)"))
        #expect(rows[3].hasPrefix("       1010.0") && rows[3].hasSuffix("touchUp, thread 77"))
        #expect(rows[3].firstIndex(of: "|")! > rows[0].firstIndex(of: "|")!)
    }

    @Test func aBusyTimelineListsAtMostTwelveMarkers() throws {
        let report = try report((0..<20).map { (.instant, 0, 2_000 + UInt64($0) * 10, "tick \($0)", 4242) })
        let text = report.text()
        #expect(text.contains("    (8 more markers in --json)"))
        #expect(report.episodes[0].markers.count == 20)
    }

    @Test func aCaptureWithoutMarkersPrintsNoTimeline() throws {
        let report = try report([])
        #expect(!report.text().contains("timeline"))
        #expect(report.episodes[0].markers.isEmpty && report.markers.isEmpty)
    }
}
