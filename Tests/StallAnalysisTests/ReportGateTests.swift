import Foundation
import StallFormat
import StallTestSupport
import Testing

@testable import StallAnalysis

/// `report --fail-on`: conditions parsed as docs/REPORT.md gives them, checked against a report's episodes.
@Suite struct ReportGateTests {
    /// A busy stall of 600 ms, a blocked stall of 300 ms and a saturated episode of 2 s, in one recorded minute.
    func report() throws -> StallReport {
        let body = ReportFixtures.episode(1, at: 1_000, durationMs: 600, state: .busy, samples: [[ReportFixtures.pass]])
            + ReportFixtures.episode(2, at: 5_000, durationMs: 300, state: .blocked, cpuPerMille: 0,
                                     samples: [[ReportFixtures.pass]])
            + ReportFixtures.episode(3, kind: .saturated, at: 9_000, durationMs: 2_000, state: .busy,
                                     samples: [[ReportFixtures.pass]])
        return StallReport(captures: [try ReportFixtures.capture(ReportFixtures.records(body), name: "gate")])
    }

    @Test func conditionsParseWithTheirUnits() throws {
        #expect(try GateCondition(parsing: "stall>500ms").limit == 500)
        #expect(try GateCondition(parsing: "saturated>1.5s").limit == 1_500)
        #expect(try GateCondition(parsing: "hang-rate>5s/h").limit == 5)
        #expect(try GateCondition(parsing: "hang-rate>500ms/h").limit == 0.5)
        #expect(try GateCondition(parsing: "episodes>0").subject == .episodes)
        for bad in ["stall", "stall>", "stall>5", "stall>5x", "stall>-1s", "freeze>1s", "episodes>1s", "hang-rate>5s",
                    "stall>nan", "stall>1e3ms", "stall<5s"] {
            #expect(throws: StallError.self, "\(bad)") { try GateCondition(parsing: bad) }
        }
    }

    @Test func eachConditionNamesTheEpisodesThatMakeItHold() throws {
        let report = try report()
        let check = { (text: String) in try GateCondition(parsing: text).offenders(in: report) }
        #expect(try check("stall>500ms") == [0])
        #expect(try check("stall>600ms") == nil)  // longer than, not as long as
        #expect(try check("blocked>200ms") == [1] && check("busy>500ms") == [0, 2])
        #expect(try check("saturated>1s") == [2] && check("saturated>2s") == nil)
        #expect(try check("episode>250ms") == [0, 1, 2])
        #expect(try check("episodes>2") == [0, 1, 2] && check("episodes>3") == nil)
        // 2.9 s frozen in a recorded minute: 174 s per hour.
        #expect(try check("hang-rate>170s/h") != nil && check("hang-rate>180s/h") == nil)
    }

    @Test func theGateSaysWhatFailedInTextJUnitAndMarkdown() throws {
        let report = try report()
        let gate = ReportGate(try ["stall>500ms", "blocked>1s"].map { try GateCondition(parsing: $0) }, report: report)
        #expect(gate.failed)
        #expect(gate.text == "failed: stall>500ms: stall 1 (busy, 0.600 s at 21:00:01.123 UTC)")
        let junit = gate.junit()
        #expect(junit.contains("tests=\"2\" failures=\"1\""))
        #expect(junit.contains("name=\"not stall&gt;500ms\"><failure message=\"stall&gt;500ms holds\">stall 1 (busy"))
        #expect(junit.contains("name=\"not blocked&gt;1s\"></testcase>"))
        #expect(gate.markdownSummary().contains("| `blocked>1s` | passed | - |"))
        let passing = ReportGate([try GateCondition(parsing: "stall>1s")], report: report)
        #expect(!passing.failed && passing.text.isEmpty)
    }
}
