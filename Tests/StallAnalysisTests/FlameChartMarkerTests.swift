import Foundation
import StallFormat
import Testing

@testable import StallAnalysis

/// App markers over a capture's flame chart: where they fall on the sample axis, and how the SVG draws them.
@Suite struct FlameChartMarkerTests {
    static let ms: UInt64 = 1_000_000

    /// Two stalls of four samples each (10 ms apart) at 1,000 ms and 3,000 ms, and `markers`.
    static func capture(_ markers: [Marker]) -> Capture {
        let app = ImageRecord(path: "/nonexistent/app", loadBias: 0x1000, start: 0x1000, end: 0x2000, buildID: [])
        func stall(_ id: UInt32, at start: UInt64) -> Stall {
            let samples = (0..<4).map { k in
                Sample(timestampNs: (start + 260 + 10 * UInt64(k)) * ms, threadCPUNs: 0, flags: [], frames: [0x1100])
            }
            let end = StallEndRecord(stallID: id, endNs: (start + 300) * ms, cpuNs: 1, measuredNs: 1, state: .busy,
                                     sampleCount: 4, missedCount: 0)
            return Stall(begin: StallBeginRecord(stallID: id, startNs: start * ms, detectedNs: (start + 250) * ms,
                                                 threadID: 7), end: end, samples: samples)
        }
        var capture = Capture(
            source: "c.stalls",
            process: ProcessRecord(pid: 7, startMonotonicNs: 0, startWallNs: 0, thresholdNs: 250 * ms,
                                   sampleIntervalNs: 10 * ms, executable: "/nonexistent/app"),
            images: [app], stalls: [stall(1, at: 1_000), stall(2, at: 3_000)])
        capture.markers = markers
        return capture
    }

    static func instant(_ name: String, at t: UInt64) -> Marker {
        Marker(name: name, kind: .instant, startNs: t * ms, tid: 7)
    }

    @Test func markersFallOnTheSampleAxis() {
        let placed = ChartMarker.place(Self.capture([
            Self.instant("before", at: 500),  // before every sample: the left edge
            Self.instant("on a sample", at: 1_270),  // sample 1's centre
            Self.instant("between samples", at: 1_275),  // halfway between samples 1 and 2
            Self.instant("between stalls", at: 2_500),  // no axis there: the edge between the stalls
            Marker(name: "over stall 2", kind: .interval, startNs: 2_900 * Self.ms, durationNs: 500 * Self.ms, tid: 7),
            Marker(name: "open", kind: .interval, startNs: 3_265 * Self.ms, tid: 7),  // never ended: to the right edge
            Self.instant("far", at: 9_000),  // more than a second from every stall: left out
        ]), options: StallCaptureImporter.Options())
        #expect(placed.map(\.name) == ["before", "on a sample", "between samples", "between stalls", "over stall 2", "open"])
        #expect(placed.map(\.start) == [0, 1.5, 2, 4, 4, 5])
        #expect(placed.map(\.end) == [0, 1.5, 2, 4, 8, 8])
        #expect(placed[4].title == "over stall 2 (interval at 2900.000 ms, 500.000 ms, thread 7)")
        #expect(placed[5].title.contains("not ended"))
        // Only the selected episode's window and samples count.
        var second = StallCaptureImporter.Options()
        second.selection.stallIDs = [2]
        let only = ChartMarker.place(Self.capture([Self.instant("in 2", at: 3_275), Self.instant("at 1", at: 1_270)]),
                                     options: second)
        #expect(only.map(\.name) == ["in 2"] && only.map(\.start) == [2])
    }

    @Test func theFlameChartDrawsInstantsAsLinesAndIntervalsAsBars() throws {
        let capture = Self.capture([
            Self.instant("touch<Down>", at: 1_265),
            Marker(name: "perform", kind: .interval, startNs: 1_250 * Self.ms, durationNs: 2_100 * Self.ms, tid: 7),
        ])
        let placed = ChartMarker.place(capture, options: StallCaptureImporter.Options())
        var options = FlameGraphOptions()
        options.flameChart = true
        var diagnostics = Diagnostics()
        let profile = OrderedStacks(stacks: StallCaptureImporter().timeOrdered(capture, diagnostics: &diagnostics))
        let svg = SVGFlameGraph(options: options, markers: placed).render(profile, diagnostics: &diagnostics)
        let markers = try #require(svg.range(of: "<svg id=\"markers\"").map { String(svg[$0.lowerBound...]) })
        #expect(markers.contains("<title>touch&lt;Down&gt; (instant at 1265.000 ms, thread 7)</title><line"))
        #expect(markers.contains("<title>perform (interval at 1250.000 ms, 2100.000 ms, thread 7)</title><rect"))
        #expect(markers.contains("fg:x=\"0\" fg:w=\"8\""), "the interval covers every sample")
        // A graph that is not a time-ordered chart draws none.
        let plain = SVGFlameGraph(options: FlameGraphOptions(), markers: placed).render(profile, diagnostics: &diagnostics)
        #expect(!plain.contains("id=\"markers\""))
        options.reverse = true
        #expect(!SVGFlameGraph(options: options, markers: placed).render(profile, diagnostics: &diagnostics)
            .contains("id=\"markers\""))
    }

    /// Several inputs: the chart reverses all the stacks, so the last input's samples come first.
    @Test func markersOfSeveralCapturesAreShiftedToTheirSamples() throws {
        let records: [CaptureRecord] = [
            .process(ProcessRecord(pid: 7, startMonotonicNs: 0, startWallNs: 0, thresholdNs: 250 * Self.ms,
                                   sampleIntervalNs: 10 * Self.ms, executable: "/nonexistent/app")),
            .stallBegin(StallBeginRecord(stallID: 1, startNs: 1_000 * Self.ms, detectedNs: 1_250 * Self.ms, threadID: 7)),
        ] + (0..<3).map { k in
            .sample(SampleRecord(stallID: 1, timestampNs: (1_260 + 10 * UInt64(k)) * Self.ms, threadCPUNs: 0, flags: [],
                                 frames: [0x1100 + UInt64(k)]))
        } + [.marker(MarkerRecord(kind: .instant, threadID: 7, timestampNs: 1_270 * Self.ms, name: "mid"))]
        let first = try ReportFixtures.write(records, name: "chart-a"), second = try ReportFixtures.write(records, name: "chart-b")
        defer { for path in [first, second] { try? FileManager.default.removeItem(atPath: path) } }
        let (profile, markers, _) = try ProfileLoader.loadChart(
            [InputSource(path: first), InputSource(path: second)], options: FoldOptions(), timeOrder: true)
        #expect(profile.total == 6)
        #expect(markers.map(\.start) == [4.5, 1.5], "the first input's samples come after the second's")
    }
}
