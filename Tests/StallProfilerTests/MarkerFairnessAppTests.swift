import Foundation
import StallAnalysis
import StallFormat
import Testing

/// `watchdog-trials marker-flood` under the watchdog: a thread floods markers while the main thread makes 3,000 in
/// five busy stalls. The main thread's most recent markers of every stall survive the flood, and every marker of
/// each thread is either in the capture or counted as lost for that thread.
@Suite struct MarkerFairnessAppTests {
    @Test func aFloodingThreadCannotTakeTheMainThreadsMostRecentMarkers() throws {
        let result = try TestSupport.runCapturing("watchdog-trials", ["marker-flood"])
        #expect(result.status == 0, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n").map { $0.split(separator: " ").map(String.init) }
        let made = { (who: String) -> (tid: Int32, count: UInt64)? in
            lines.first { $0.count == 4 && $0[0] == who && $0[2] == "made" }.flatMap { line in
                Int32(line[1]).flatMap { tid in UInt64(line[3]).map { (tid, $0) } }
            }
        }
        let main = try #require(made("main")), flooder = try #require(made("flooder"))
        let episodeEnds = lines.filter { $0.count == 4 && $0[0] == "episode" }
            .compactMap { Int($0[3].split(separator: ".").last ?? "") }
        #expect(main.count == 3_000 && episodeEnds == [599, 1199, 1799, 2399, 2999])

        let capture = result.capture
        #expect(capture.closedCleanly)
        let mine = Set(capture.markers.filter { $0.tid == main.tid }.map(\.name))
        let depth = 32  // ThreadMarkerRings.defaultDepth
        for end in episodeEnds {
            let recent = (end - depth + 1...end).map { "main \($0)" }
            #expect(recent.allSatisfy(mine.contains), "the main thread's last \(depth) markers of the stall ending at \(end)")
        }
        // Every marker is in the file or counted as lost, for the thread that made it.
        let lost = capture.droppedMarkersByThread
        #expect(UInt64(mine.count) + (lost[main.tid] ?? 0) == main.count)
        let floods = UInt64(capture.markers.filter { $0.tid == flooder.tid }.count)
        #expect(floods + (lost[flooder.tid] ?? 0) == flooder.count)
        #expect((lost[flooder.tid] ?? 0) > 0, "the flood lost markers, counted as the flooder's")
        #expect(lost[0] == nil, "both threads had rings of their own")
        #expect(capture.warnings.contains { $0.contains("of thread \(flooder.tid)") }, "\(capture.warnings)")
        // The report shows the losses per thread.
        let report = StallReport(captures: [capture])
        #expect(report.captures[0].markersLost.first?.tid == flooder.tid)
        #expect(report.text().contains("app markers lost"))
    }
}
