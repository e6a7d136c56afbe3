import Foundation
import StallTestSupport
import Testing

/// The shared option groups reach every command that reads profiles: --format (export: --input-format), the perf
/// options and the capture selection, each with an effect checked.
@Suite struct SharedOptionsTests {
    static let perf = """
        app 100/100 [000] 1.000000: 250000 cpu-clock:
        \t    1000 work (/bin/app)
        \t    2000 main (/bin/app)

        app 100/101 [000] 1.000100: 250000 cpu-clock:
        \t    1000 work (/bin/app)
        \t    2000 main (/bin/app)

        """

    @Test func perfOptionsShapeTheStacksOfFlamegraphDiffAndExport() throws {
        let path = try CLI.temporary(Array(Self.perf.utf8), suffix: ".perf")
        defer { try? FileManager.default.removeItem(atPath: path) }
        // fold is the reference: --pid adds comm-PID, --count samples counts each sample once.
        #expect(try CLI.run(["fold", "--pid", "--count", "samples", path]).out == "app-100;main;work 2\n")

        let plain = try #require(SVGFrames(try CLI.run(["flamegraph", path]).out))
        let graph = try #require(SVGFrames(try CLI.run(["flamegraph", "--tid", "--count=samples", path]).out))
        #expect(plain.frame("app") != nil && plain.frame("app-100/100") == nil)
        #expect(graph.frame("app-100/100") != nil && graph.frame("app-100/101") != nil && graph.frame("app") == nil)

        let diff = try CLI.run(["diff", "--pid", "--count", "samples", path, path])
        #expect(diff.status == 0 && diff.out == "app-100;main;work 2 2\n")

        let export = try CLI.run(["export", "--format", "speedscope", "--pid", "--count", "samples", path])
        #expect(export.status == 0)
        let frames = try #require((try CLI.json(export.bytes)["shared"] as? [String: Any])?["frames"] as? [[String: Any]])
        #expect(frames.compactMap { $0["name"] as? String } == ["app-100", "main", "work"])
        // Timed (a profile per thread): with --count samples a sample weighs the time to its thread's next one (1 ms
        // for a thread's only sample), not its 250000 ns cpu-clock period.
        let profile = try #require((try CLI.json(export.bytes)["profiles"] as? [[String: Any]])?.first)
        #expect(profile["weights"] as? [Double] == [1])
        let periods = try CLI.run(["export", "--format", "speedscope", path])
        #expect((try CLI.json(periods.bytes)["profiles"] as? [[String: Any]])?.first?["weights"] as? [Double] == [0.25])
    }

    @Test func formatIsHonouredByFlamegraphDiffAndExport() throws {
        let path = try CLI.temporary(Array(Self.perf.utf8), suffix: ".perf")
        defer { try? FileManager.default.removeItem(atPath: path) }
        // Detected as perf by default; forced to another format, the same input is bad data (exit 65).
        for arguments in [["flamegraph"], ["diff", path], ["export", "--format", "speedscope"], ["fold"]] {
            #expect(try CLI.run(arguments + [path]).status == 0, "\(arguments)")
            let flag = arguments[0] == "export" ? "--input-format" : "--format"
            let forced = try CLI.run(arguments + [flag, "speedscope", path])
            #expect(forced.status == 65 && forced.err.contains(path), "\(arguments): \(forced.err)")
        }
        #expect(try CLI.run(["flamegraph", "--format", "perf", path]).status == 0)
    }

    @Test func transformsAndStrictnessReachEveryReader() throws {
        let path = try CLI.temporary(Array("main;a;a;b 3\nnot a folded line\n".utf8), suffix: ".folded")
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try CLI.run(["diff", "--merge-recursion", path, path]).out == "main;a;b 3 3\n")
        #expect(try CLI.run(["diff", "--strict", path, path]).status == 65)
        #expect(try CLI.run(["export", "--format", "speedscope", "--strict", path]).status == 65)
        #expect(try CLI.run(["fold", "--strict", path]).status == 65)
    }

    @Test func reportSelectsEpisodesAndSampleWindows() throws {
        let capture = try ReportFixtures.write(ReportFixtures.mixedRecords(), name: "cli-select")
        defer { try? FileManager.default.removeItem(atPath: capture) }
        func episodes(_ arguments: [String]) throws -> [[String: Any]] {
            let result = try CLI.run(["report", "--json"] + arguments + [capture])
            #expect(result.status == 0, "\(result.err)")
            return try #require(try CLI.json(result.bytes)["episodes"] as? [[String: Any]])
        }
        #expect(try episodes([]).count == 6)
        let chosen = try episodes(["--stall", "1", "--stall", "4"])
        #expect(chosen.compactMap { $0["id"] as? Int } == [1, 4])
        // Episode 1's ten samples are taken 250, 260, ... 340 ms after it began.
        let window = try episodes(["--stall", "1", "--range", "250..269"])
        #expect(window.compactMap { $0["id"] as? Int } == [1] && window[0]["analyzedSamples"] as? Int == 2)
        let dashed = try episodes(["--stall", "1", "--range", "250-269"])
        #expect(dashed[0]["analyzedSamples"] as? Int == 2)
        let openEnded = try episodes(["--stall=1", "--range", "300.."])
        #expect(openEnded[0]["analyzedSamples"] as? Int == 5)
        // The same selection folds the same samples.
        let folded = try CLI.run(["fold", "--stall", "1", "--range", "250..269", capture]).out
        let total = folded.split(separator: "\n").compactMap { $0.split(separator: " ").last.flatMap { Int($0) } }.reduce(0, +)
        #expect(total == 2)
        let text = try CLI.run(["report", "--stall", "2", capture]).out
        #expect(text.contains("1 episode: 0 stalls, 1 saturated"), "\(text)")
        #expect(try CLI.run(["report", "--stall", "0", capture]).status == 64)
        #expect(try CLI.run(["report", "--range", "a..b", capture]).status == 64)
    }
}
