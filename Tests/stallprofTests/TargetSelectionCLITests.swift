import Foundation
import StallTestSupport
import Testing

/// `--target NAME` on every command that reads captures (through the shared capture selection), on a capture of
/// three watched targets (``ReportFixtures/targetRecords()``: `main` 1 and 4, `loop-1` 2 and 5, `db-queue` 3).
@Suite struct TargetSelectionCLITests {
    static let render = "stallprof_fixture_render", owner = "stallprof_fixture_owner_work"
    static let pass = "stallprof_fixture_layout_pass"

    func withCapture(_ body: (String) throws -> Void) throws {
        let capture = try ReportFixtures.write(ReportFixtures.targetRecords(), name: "cli-targets")
        defer { try? FileManager.default.removeItem(atPath: capture) }
        try body(capture)
    }

    /// Folded lines as (stack, count).
    func folded(_ text: String) -> [(stack: String, count: Int)] {
        text.split(separator: "\n").compactMap { line in
            guard let space = line.lastIndex(of: " "), let count = Int(line[line.index(after: space)...]) else { return nil }
            return (String(line[..<space]), count)
        }
    }

    @Test func foldKeepsTheSamplesOfTheNamedTargets() throws {
        try withCapture { capture in
            let all = folded(try CLI.run(["fold", capture]).out)
            #expect(all.reduce(0) { $0 + $1.count } == 33)
            let loop = folded(try CLI.run(["fold", "--target", "loop-1", capture]).out)
            #expect(loop.reduce(0) { $0 + $1.count } == 14 && loop.allSatisfy { $0.stack.contains(Self.render) })
            let main = folded(try CLI.run(["fold", "--target=main", capture]).out)
            #expect(main.reduce(0) { $0 + $1.count } == 15 && main.allSatisfy { $0.stack.contains(Self.pass) })
            // Repeated: either target.
            let two = folded(try CLI.run(["fold", "--target", "main", "--target", "db-queue", capture]).out)
            #expect(two.reduce(0) { $0 + $1.count } == 19)
            #expect(two.contains { $0.stack.contains(Self.owner) } && !two.contains { $0.stack.contains(Self.render) })
            // With the other selections.
            let stalls = folded(try CLI.run(["fold", "--target", "loop-1", "--kind", "stall", capture]).out)
            #expect(stalls.reduce(0) { $0 + $1.count } == 6)
        }
    }

    @Test func flamegraphAndDiffHonourTheTarget() throws {
        try withCapture { capture in
            let graph = try CLI.run(["flamegraph", "--target", "db-queue", capture])
            #expect(graph.status == 0 && graph.out.contains(Self.owner) && !graph.out.contains(Self.render))
            let diff = try CLI.run(["diff", "--target", "loop-1", capture, capture])
            #expect(diff.status == 0 && !diff.out.isEmpty, "\(diff.err)")
            #expect(diff.out.split(separator: "\n").allSatisfy { $0.contains(Self.render) }, "\(diff.out)")
        }
    }

    @Test func reportSelectsAndGroupsByTarget() throws {
        try withCapture { capture in
            func episodes(_ arguments: [String]) throws -> [[String: Any]] {
                let result = try CLI.run(["report", "--json"] + arguments + [capture])
                #expect(result.status == 0, "\(result.err)")
                return try #require(try CLI.json(result.bytes)["episodes"] as? [[String: Any]])
            }
            let all = try episodes([])
            #expect(all.compactMap { $0["target"] as? String } == ["main", "loop-1", "db-queue", "main", "loop-1"])
            let loop = try episodes(["--target", "loop-1"])
            #expect(loop.compactMap { $0["id"] as? Int } == [2, 5] && loop.allSatisfy { $0["target"] as? String == "loop-1" })
            let two = try episodes(["--target", "db-queue", "--target", "main"])
            #expect(two.compactMap { $0["id"] as? Int } == [1, 3, 4])
            let text = try CLI.run(["report", capture]).out
            #expect(text.contains("\ntarget db-queue: 1 episode\n") && text.contains("\nstall 2 on loop-1 (busy"), "\(text)")
            let mainOnly = try CLI.run(["report", "--target", "main", capture]).out
            #expect(mainOnly.contains("2 episodes: 2 stalls") && !mainOnly.contains("\ntarget "), "\(mainOnly)")
            // The gate sees the selected episodes only, and names their target.
            let gate = try CLI.run(["report", "--target", "loop-1", "--fail-on", "saturated>1s", capture])
            #expect(gate.status == 1 && gate.err.contains("saturated 5 on loop-1 (busy, 2.000 s"), "\(gate.err)")
            #expect(try CLI.run(["report", "--target", "main", "--fail-on", "saturated>1s", capture]).status == 0)
        }
    }

    @Test func exportKeepsTheNamedTargetsAndNamesThem() throws {
        try withCapture { capture in
            let result = try CLI.run(["export", "--format", "speedscope", "--target", "db-queue", "--target", "loop-1", capture])
            #expect(result.status == 0, "\(result.err)")
            let profiles = try #require(try CLI.json(result.bytes)["profiles"] as? [[String: Any]])
            #expect(profiles.compactMap { $0["name"] as? String } == [
                "stall 2 on loop-1 (busy) at 2500 ms", "stall 3 on db-queue (blocked) at 4000 ms",
                "saturated 5 on loop-1 (busy) at 12000 ms",
            ])
            let trace = try CLI.run(["export", "--format", "chrome-trace", "--target", "main", capture])
            let events = try #require(try CLI.json(trace.bytes)["traceEvents"] as? [[String: Any]])
            let stalls = events.filter { $0["cat"] as? String == "stall" }.compactMap { $0["args"] as? [String: Any] }
            #expect(stalls.compactMap { $0["stall"] as? Int } == [1, 4])
            #expect(stalls.allSatisfy { $0["target"] == nil }, "the main queue alone: no target argument")
        }
    }

    /// A target no episode has selects nothing, as `--stall 99` does: every command exits 0 (fold prints nothing,
    /// flamegraph warns naming `--target`); an empty name is a usage error.
    @Test func anUnknownTargetSelectsNothingAndAnEmptyOneIsAUsageError() throws {
        try withCapture { capture in
            for command in [["fold"], ["report"], ["report", "--json"], ["export", "--format", "speedscope"],
                            ["flamegraph"], ["diff", capture]] {
                let result = try CLI.run(command + ["--target", "lop-1", capture])
                #expect(result.status == 0, "\(command): \(result.err)")
                let usual = try CLI.run(command + ["--stall", "99", capture])
                #expect(result.status == usual.status && (command[0] == "flamegraph" || result.bytes == usual.bytes),
                        "\(command) behaves as --stall 99")
            }
            #expect(try CLI.run(["fold", "--target", "lop-1", capture]).out.isEmpty)
            let graph = try CLI.run(["flamegraph", "--target", "lop-1", capture])
            #expect(graph.err.contains("no samples selected") && graph.err.contains("--target"), "\(graph.err)")
            let report = try CLI.run(["report", "--target", "lop-1", capture]).out
            #expect(report.contains("0 episodes: 0 stalls"), "\(report)")
            let empty = try CLI.run(["fold", "--target", "", capture])
            #expect(empty.status == 64 && empty.err.hasPrefix("stallprof: error: --target takes a target"), "\(empty.err)")
        }
    }

    @Test func checkAndBisectTakeTargetsWithTheWatchdogMeasureOnly() throws {
        for command in [["check"], ["bisect", "--flags", "a"]] {
            let cpu = try CLI.run(command + ["--target", "main", "--", "/bin/true"])
            #expect(cpu.status == 64 && cpu.err.contains("--target needs --measure watchdog"), "\(command): \(cpu.err)")
            let empty = try CLI.run(command + ["--measure", "watchdog", "--target", "", "--", "/bin/true"])
            #expect(empty.status == 64, "\(command): \(empty.err)")
        }
    }

    /// stall-demo-async stalls its main actor for 1.5 s (the main queue's target), then exits 0: counted with
    /// `--target main` (frozen, 1), not with another target alone (the run ends cleanly: good, 0).
    @Test func checkCountsTheEpisodesOfTheNamedTargetsOnly() throws {
        let app = ["--sustain", "0.5", "--window", "5", "--", CLI.product("stall-demo-async"), "--stall-ms", "1500"]
        #expect(try CLI.run(["check", "--measure", "watchdog", "--target", "main"] + app).status == 1)
        #expect(try CLI.run(["check", "--measure", "watchdog", "--target", "loop-0"] + app).status == 0)
    }
}
