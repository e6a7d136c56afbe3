import Foundation
import StallFormat
import Testing

@testable import StallAnalysis

/// Stacks deeper than the capture's frame limit get the root frame `[truncated]` everywhere.
@Suite struct TruncatedStackTests {
    /// One busy stall: a truncated sample, a repeat of it (no frames of its own), and a complete sample.
    static func records() -> [CaptureRecord] {
        let start = ReportFixtures.startNs
        let stack = [ReportFixtures.systemLeaf, ReportFixtures.system]
        let samples: [(SampleFlags, [UInt64])] = [([.truncated], stack), ([.repeated], []), ([], stack)]
        var body: [CaptureRecord] = [.stallBegin(StallBeginRecord(
            stallID: 1, startNs: start, detectedNs: start + 250_000_000, threadID: 4242))]
        for (index, (flags, frames)) in samples.enumerated() {
            body.append(.sample(SampleRecord(
                stallID: 1, timestampNs: start + 250_000_000 + UInt64(index) * 10_000_000,
                threadCPUNs: UInt64(index + 1) * 10_000_000, flags: flags, frames: frames)))
        }
        body.append(.stallEnd(StallEndRecord(
            stallID: 1, endNs: start + 500_000_000, cpuNs: 500_000_000, measuredNs: 500_000_000, state: .busy,
            sampleCount: 3, missedCount: 0)))
        return ReportFixtures.records(body)
    }

    @Test func foldAndFlameGraphPutTruncatedStacksUnderTheirOwnRoot() throws {
        let path = try ReportFixtures.write(Self.records(), name: "truncated")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (stacks, _) = try Folder.fold([InputSource(path: path)], options: FoldOptions())
        let lines = stacks.rendered().split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        #expect(lines.contains { $0.hasPrefix("[truncated];") && $0.hasSuffix(" 2") })
        #expect(lines.contains { !$0.hasPrefix("[truncated]") && $0.hasSuffix(" 1") })
        let (profile, _) = try ProfileLoader.load([InputSource(path: path)], options: FoldOptions())
        var diagnostics = Diagnostics()
        let svg = try #require(SVGFrames(SVGFlameGraph().render(profile, diagnostics: &diagnostics)))
        #expect(svg.frame("[truncated]") != nil)
    }

    @Test func reportSaysHowManySamplesWereTruncated() throws {
        let report = StallReport(captures: [try ReportFixtures.capture(Self.records(), name: "truncated")])
        let text = report.text()
        #expect(text.contains("2 of 3 samples [truncated]"), "\(text)")
    }
}
