import Foundation
import StallFormat
import Testing

@testable import StallAnalysis

/// `runQueueWaitMs` (issue 17): the wait for a CPU that cost an episode's samples, in `report --json` and, where
/// samples were missed, in the text.
@Suite struct ReportRunQueueWaitTests {
    /// An episode whose end record says 12 samples were missed while the thread waited 700 ms for a CPU.
    func records(missedWait: UInt64?) -> [CaptureRecord] {
        ReportFixtures.records(ReportFixtures.episode(
            1, at: 2_000, durationMs: 1_000, state: .busy,
            samples: Array(repeating: [ReportFixtures.height, ReportFixtures.pass, ReportFixtures.system], count: 4),
            missed: 12
        ).map { record in
            guard case .stallEnd(var end) = record else { return record }
            end.runQueueNs = 800_000_000
            end.missedRunQueueNs = missedWait
            return .stallEnd(end)
        })
    }

    func episode(_ json: String) throws -> [String: Any] {
        let root = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        return try #require((root["episodes"] as? [[String: Any]])?.first)
    }

    @Test func theWaitThatCostSamplesIsReported() throws {
        let capture = try ReportFixtures.capture(records(missedWait: 700_000_000), name: "rq-wait")
        let report = StallReport(captures: [capture])
        let episode = try episode(report.json())
        #expect(episode["runQueueWaitMs"] as? Double == 700)
        #expect(episode["missedSamples"] as? Int == 12)
        #expect(report.text().contains("missed: the thread waited 0.700 s for a CPU (12 samples)"))
    }

    @Test func olderCapturesSayOnlyThatSamplesWereMissed() throws {
        let capture = try ReportFixtures.capture(records(missedWait: nil), name: "rq-wait-old")
        let report = StallReport(captures: [capture])
        #expect(try episode(report.json())["runQueueWaitMs"] is NSNull)
        #expect(report.text().contains("missed: 12 samples (the thread did not answer in time)"))
        #expect(!report.text().contains("for a CPU"))
    }

    @Test func nothingIsSaidWhenNoSampleWasMissed() throws {
        let records = ReportFixtures.records(ReportFixtures.episode(
            1, at: 2_000, durationMs: 1_000, state: .busy, samples: [[ReportFixtures.pass, ReportFixtures.system]]))
        let report = StallReport(captures: [try ReportFixtures.capture(records, name: "rq-none")])
        #expect(!report.text().contains("missed:"))
    }
}
