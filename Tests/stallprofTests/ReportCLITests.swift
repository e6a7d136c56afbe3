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

    /// The CI gate: `--fail-on` exits 1 naming the episodes, writes JUnit and GitHub's step summary; 0 when nothing
    /// holds; a malformed condition, `--junit` alone or a gate on another profile is a usage error.
    @Test func theGateFailsTheJobOnStalls() throws {
        let path = try ReportFixtures.write(ReportFixtures.mixedRecords(), name: "gate")
        let junit = CLI.temporary("gate.xml"), summary = CLI.temporary("summary.md")
        defer { for file in [path, junit, summary] { unlink(file) } }
        let failed = try CLI.run(["report", "--fail-on", "stall>100ms", "--fail-on", "episodes>100", "--junit", junit, path],
                                 environment: ["GITHUB_STEP_SUMMARY": summary])
        #expect(failed.status == 1)
        #expect(failed.out.contains("episodes:"), "the report is still written")
        #expect(failed.err.contains("failed: stall>100ms: stall 1 (") && !failed.err.contains("episodes>100"), "\(failed.err)")
        let xml = try String(contentsOfFile: junit, encoding: .utf8)
        #expect(xml.contains("tests=\"2\" failures=\"1\"") && xml.contains("name=\"not episodes&gt;100\"></testcase>"))
        #expect(try String(contentsOfFile: summary, encoding: .utf8).contains("| `stall>100ms` | **failed** |"))

        let passed = try CLI.run(["report", "--fail-on", "stall>1h", "--fail-on", "hang-rate>3600s/h", path])
        #expect(passed.status == 64, "an hour is no unit the gate takes")
        let quiet = try CLI.run(["report", "--fail-on", "episode>100s", path])
        #expect(quiet.status == 0 && !quiet.err.contains("failed"), "\(quiet.err)")
        #expect(try CLI.run(["report", "--junit", junit, path]).status == 64)
        #expect(try CLI.run(["report", "--fail-on", "episodes>0", "-"], input: Array("a;b 1\n".utf8)).status == 64)
    }
}
