import Foundation
import StallTestSupport
import Testing

/// `--kind` through the CLI: fold and report.
@Suite struct ReportCLITests {
    @Test func kindFiltersFoldAndReport() throws {
        let path = try ReportFixtures.write(ReportFixtures.mixedRecords(), name: "cli")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (allStatus, all, _) = try CLI.run(["fold", path], input: "")
        #expect(allStatus == 0 && all.contains("stallprof_fixture_render") && all.contains("stallprof_fixture_layout_pass"))
        let (_, saturated, _) = try CLI.run(["fold", "--kind", "saturated", path], input: "")
        #expect(saturated.contains("stallprof_fixture_render") && !saturated.contains("stallprof_fixture_layout_pass"))
        let (_, stalls, _) = try CLI.run(["fold", "--kind=stall", path], input: "")
        #expect(!stalls.contains("stallprof_fixture_render") && stalls.contains("stallprof_fixture_layout_pass"))
        let (status, json, _) = try CLI.run(["report", "--json", "--kind", "saturated", path], input: "")
        #expect(status == 0)
        let root = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let episodes = try #require(root["episodes"] as? [[String: Any]])
        #expect(episodes.map { $0["id"] as? Int } == [2])
        let (_, text, _) = try CLI.run(["report", "--stall", "1", "--stall", "4", path], input: "")
        #expect(text.contains("2 episodes: 2 stalls, 0 saturated"))
        #expect(try CLI.run(["report", "--kind", "frozen", path], input: "").0 == 64)
        #expect(try CLI.run(["report", "/nonexistent/x.stalls"], input: "").0 != 0)
    }
}
