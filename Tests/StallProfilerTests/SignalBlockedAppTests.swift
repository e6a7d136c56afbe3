import Foundation
import StallAnalysis
import StallFormat
import Testing

/// `watchdog-trials signal-blocked`: the main thread blocks SIGPROF, then stalls busy. The capture records its
/// blocked-signal mask, and the report says why the stall has no stacks.
@Suite struct SignalBlockedAppTests {
    @Test func aMainThreadThatBlocksTheSignalIsReportedAsSuch() throws {
        let result = try TestSupport.runCapturing("watchdog-trials", ["signal-blocked"])
        #expect(result.status == 0, "\(result.stderr)")
        let capture = result.capture
        #expect(capture.closedCleanly)
        let stall = try #require(capture.stalls.first { $0.kind == .stall && $0.state == .busy }, "\(capture.stalls)")
        #expect(stall.samples.allSatisfy { $0.frames.isEmpty }, "the signal never got through")
        let mask = try #require(stall.signalMask, "the watchdog looked at the thread's mask")
        #expect(mask.threadID == stall.begin.threadID && mask.signal == SIGPROF && mask.blocksSignal)
        #expect((stall.end?.missedCount ?? 0) > 0)

        let report = StallReport(captures: [capture])
        let text = report.text()
        #expect(text.contains("  no samples with a stack\n  hint: the thread blocks SIGPROF: no stacks\n"), "\(text)")
        let root = try #require(try JSONSerialization.jsonObject(with: Data(report.json().utf8)) as? [String: Any])
        let episodes = try #require(root["episodes"] as? [[String: Any]])
        let episode = try #require(episodes.first { ($0["id"] as? Int) == Int(stall.id) })
        let hints = try #require(episode["hints"] as? [[String: Any]])
        #expect(hints.contains { $0["kind"] as? String == "signal-blocked"
            && $0["text"] as? String == "the thread blocks SIGPROF: no stacks" }, "\(hints)")
    }
}
