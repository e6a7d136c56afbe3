import StallFormat
import Testing

@testable import StallAnalysis

/// The report on hand-made captures (addresses that resolve to nothing, so names are `[unknown]` or `[image]`).
@Suite struct StallReportTests {
    func capture() -> Capture {
        let image = ImageRecord(path: "/nonexistent/app", loadBias: 0x1000, start: 0x1000, end: 0x9000, buildID: [])
        var busy = Stall(begin: StallBeginRecord(stallID: 1, startNs: 1_500_000_000, detectedNs: 1_750_000_000, threadID: 77))
        busy.samples = (0..<4).map { i in
            Sample(timestampNs: 1_750_000_000 + UInt64(i) * 10_000_000, threadCPUNs: UInt64(i) * 10_000_000,
                   flags: [], frames: i == 3 ? [0x20] : [0x2000, 0x3000])
        }
        busy.end = StallEndRecord(stallID: 1, endNs: 2_500_000_000, cpuNs: 30_000_000, runQueueNs: 0,
                                  measuredNs: 30_000_000, state: .busy, sampleCount: 4, missedCount: 1)
        var blocked = Stall(begin: StallBeginRecord(stallID: 2, startNs: 3_000_000_000, detectedNs: 3_250_000_000, threadID: 77))
        blocked.samples = [Sample(timestampNs: 3_300_000_000, threadCPUNs: 0, flags: [], frames: [0x2000])]
        return Capture(
            source: "t.stalls",
            process: ProcessRecord(pid: 77, startMonotonicNs: 1_000_000_000, startWallNs: 0, thresholdNs: 250_000_000,
                                   sampleIntervalNs: 10_000_000, executable: "/nonexistent/app"),
            images: [image], stalls: [busy, blocked], closedCleanly: false)
    }

    @Test func tableAndFunctions() {
        let report = StallReport(capture: capture())
        let text = report.rendered()
        #expect(text.contains("capture t.stalls: pid 77, /nonexistent/app"))
        #expect(text.contains("threshold 250 ms, sample interval 10 ms, not closed"))
        #expect(text.contains("2 stalls: 1 busy, 0 blocked, 1.300 s in all"))
        #expect(text.contains("1      +0.500 s  1.000 s   busy"))
        #expect(text.contains("2*     +2.000 s  0.300 s   ?"))
        #expect(text.contains("* unfinished"))
        let busy = report.functions[1] ?? []
        #expect(busy.map(\.name) == ["[app]", "[unknown]"])
        #expect(busy.first?.selfSamples == 3 && busy.first?.totalSamples == 3)
        #expect(text.contains("75%   75%    [app]"))
    }

    @Test func innermostExecutableFramesWhenTheLeafIsInALibrary() {
        var capture = capture()
        capture.images.append(ImageRecord(path: "/nonexistent/libc.so.6", loadBias: 0xA000, start: 0xA000, end: 0xB000, buildID: []))
        capture.stalls[0].samples = (0..<4).map { i in
            Sample(timestampNs: UInt64(i), threadCPUNs: 0, flags: [], frames: i < 3 ? [0xA100, 0x2000, 0x3000] : [0x2000])
        }
        let report = StallReport(capture: capture)
        #expect(report.functions[1]?.first?.name == "[libc.so.6]")
        #expect(report.appFrames[1] == [StallReport.FunctionShare(name: "[app]", selfSamples: 4, totalSamples: 4)])
        #expect(report.rendered().contains("  innermost frames in the executable:\n  100%  [app]"))
        // Stalls whose samples never leave the executable get no such section.
        #expect(StallReport(capture: self.capture()).appFrames[1] == [])
    }

    @Test func stateFilterAndEmptyCaptures() {
        var options = StallReportOptions()
        options.state = .busy
        let text = StallReport(capture: capture(), options: options).rendered()
        #expect(text.contains("1 stall: 1 busy"))
        #expect(!text.contains("2*"))
        #expect(StallReport(capture: Capture(source: "e")).rendered() == "0 stalls: 0 busy, 0 blocked, 0.000 s in all\n")
    }
}
