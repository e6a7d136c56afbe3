import Foundation
import StallFormat
import StallTestSupport
import Testing

@testable import StallAnalysis

/// The cooperative pool's starvations: the `pool` target's episodes that began together (one per pool thread) read
/// as one starvation, said in one sentence in the text and listed in the JSON.
@Suite struct PoolStarvationTests {
    /// Two pool threads blocked on a mutex under the same app function from 1 s, one busy from 5 s, and a main
    /// queue stall between (never part of a starvation).
    static func report() throws -> StallReport {
        let blocked = Array(repeating: [ReportFixtures.systemLeaf, ReportFixtures.pass, ReportFixtures.system], count: 3)
        let busy = Array(repeating: [ReportFixtures.height, ReportFixtures.render, ReportFixtures.system], count: 4)
        func waits(_ id: UInt32) -> CaptureRecord {
            .blockedOn(BlockedOnRecord(
                stallID: id, timestampNs: ReportFixtures.startNs + 1_300_000_000, waitKind: .mutex,
                syscall: ReportFixtures.futexNumber, ownerTID: 77, ownerName: "holder", ownerState: UInt8(ascii: "S"),
                detail: ""))
        }
        let records = ReportFixtures.records(
            ReportFixtures.episode(1, at: 1_000, durationMs: 1_200, state: .blocked, cpuPerMille: 0, samples: blocked,
                                   target: "pool", tid: 501) + [waits(1)]
            + ReportFixtures.episode(2, at: 1_000, durationMs: 1_150, state: .blocked, cpuPerMille: 0, samples: blocked,
                                     target: "pool", tid: 502) + [waits(2)]
            + ReportFixtures.episode(3, at: 3_000, durationMs: 400, state: .busy, samples: busy)
            + ReportFixtures.episode(4, at: 5_000, durationMs: 300, state: .busy, samples: busy, target: "pool", tid: 501))
        return StallReport(captures: [try ReportFixtures.capture(records, name: "pool")])
    }

    @Test func episodesThatBeganTogetherAreOneStarvation() throws {
        let report = try Self.report()
        let starvations = report.starvations
        try #require(starvations.count == 2, "\(starvations)")
        let first = starvations[0]
        #expect(first.episodes.map { report.episodes[$0].id } == [1, 2])
        #expect((first.threads, first.blocked, first.busy) == (2, 2, 0))
        #expect(first.durationMs == 1_200, "the longest episode")
        #expect(first.wait == "a mutex")
        #expect(first.under?.hasPrefix("stallprof_fixture_layout_pass") == true, "\(first)")
        #expect(first.sentence.hasPrefix("the cooperative pool was starved for 1.200 s: 2 of 2 threads blocked in a mutex under stallprof_fixture_layout_pass"), "\(first.sentence)")
        let second = starvations[1]
        #expect((second.threads, second.blocked, second.busy) == (1, 0, 1) && second.wait == nil)
        #expect(second.busyIn?.hasPrefix("stallprof_fixture_markdown_height") == true && second.under == nil, "\(second)")
        #expect(second.sentence.hasPrefix("the cooperative pool was starved for 0.300 s: 1 of 1 thread busy in "), "\(second.sentence)")
    }

    @Test func theTextSaysEachStarvationUnderThePoolsHeadingAndTheJSONListsThem() throws {
        let report = try Self.report()
        let text = report.text()
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let heading = try #require(lines.firstIndex { $0.hasPrefix("target pool: 3 episodes, 2.650 s") }, "\(text)")
        #expect(lines[heading + 1].hasPrefix("the cooperative pool was starved for 1.200 s: 2 of 2 threads"), "\(text)")
        #expect(lines.allSatisfy { $0.count <= StallReport.textWidth }, "\(text)")
        #expect(!(lines.firstIndex { $0.hasPrefix("target main:") }.map { lines[$0 + 1] }?.contains("starved") ?? true))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.json().utf8)) as? [String: Any])
        let listed = try #require(json["starvations"] as? [[String: Any]])
        #expect(listed.count == 2)
        #expect(listed[0]["episodes"] as? [Int] == [1, 2] && listed[0]["threads"] as? Int == 2
            && listed[0]["blocked"] as? Int == 2 && listed[0]["wait"] as? String == "a mutex", "\(listed[0])")
        #expect((listed[0]["sentence"] as? String)?.hasPrefix("the cooperative pool was starved") == true)
        #expect(listed[1]["wait"] is NSNull)
    }

    @Test func aThreadThatJoinsWhileThePoolStarvesIsPartOfItsStarvation() throws {
        let blocked = Array(repeating: [ReportFixtures.systemLeaf, ReportFixtures.pass, ReportFixtures.system], count: 3)
        let records = ReportFixtures.records(
            ReportFixtures.episode(1, at: 1_000, durationMs: 1_000, state: .blocked, cpuPerMille: 0, samples: blocked,
                                   target: "pool", tid: 501)
            + ReportFixtures.episode(2, at: 1_900, durationMs: 600, state: .blocked, cpuPerMille: 0, samples: blocked,
                                     target: "pool", tid: 502)
            + ReportFixtures.episode(3, at: 2_600, durationMs: 300, state: .blocked, cpuPerMille: 0, samples: blocked,
                                     target: "pool", tid: 501))
        let report = StallReport(captures: [try ReportFixtures.capture(records, name: "pool-join")])
        let starvations = report.starvations
        #expect(starvations.map { $0.episodes.map { report.episodes[$0].id } } == [[1, 2], [3]], "\(starvations)")
        #expect(starvations.first?.durationMs == 1_500, "from the first start to the last end")
    }

    @Test func noPoolEpisodesNoStarvations() throws {
        let capture = try ReportFixtures.capture(ReportFixtures.targetRecords(), name: "targets")
        let report = StallReport(captures: [capture])
        #expect(report.starvations.isEmpty)
        #expect(!report.text().contains("starved"))
    }
}
