import Foundation
import StallFormat
import Testing

/// A valid capture from which nothing is selected (a run without a stall, or `--state` keeping none) is not bad
/// data: `flamegraph` draws the empty graph and exits 0, as `fold`, `report` and `export` do.
@Suite struct EmptySelectionCLITests {
    /// A capture of a stall-demo run whose 10 ms stall is below the 200 ms threshold: no episode.
    func stallFreeCapture() throws -> String {
        let path = CLI.temporary("stall-free.stalls")
        let env = [EnvironmentName.threshold: "200", EnvironmentName.interval: "5"]
        let run = try CLI.run(["--stall", "busy", "--stall-ms", "10", "--output", path], environment: env,
                              executable: CLI.product("stall-demo"))
        #expect(run.status == 0, "\(run.err)")
        return path
    }

    @Test func flameGraphOfAStallFreeCaptureExitsZero() throws {
        let capture = try stallFreeCapture()
        defer { unlink(capture) }
        for command in [["fold"], ["report"], ["export", "--format", "speedscope"], ["flamegraph"],
                        ["flamegraph", "--flamechart"]] {
            let result = try CLI.run(command + [capture])
            #expect(result.status == 0, "\(command): \(result.err)")
        }
        let graph = try CLI.run(["flamegraph", capture])
        #expect(graph.out.contains("<svg") && graph.err.contains(capture))
        // Data without any stack count is still bad data.
        let text = try CLI.temporary(Array("no counts here\n".utf8), suffix: ".txt")
        defer { unlink(text) }
        #expect(try CLI.run(["flamegraph", text]).status == 65)
    }

    @Test func flameGraphOfAnEmptySelectionExitsZero() throws {
        let busy = CLI.temporary("busy-only.stalls")
        defer { unlink(busy) }
        // A busy stall of 10 thresholds: it has samples in BusyWork also under ThreadSanitizer on a loaded machine
        // (a 300 ms one had none there once: TSan delivers the signal late).
        let env = [EnvironmentName.threshold: "100", EnvironmentName.interval: "5"]
        _ = try CLI.run(["--stall", "busy", "--stall-ms", "1000", "--output", busy], environment: env,
                        executable: CLI.product("stall-demo"))
        #expect(try CLI.run(["fold", busy]).out.contains("BusyWork"))
        let blocked = try CLI.run(["flamegraph", "--state", "blocked", busy])
        #expect(blocked.status == 0, "\(blocked.err)")
        #expect(blocked.err.contains("no samples selected"))
    }
}

/// `diff - -`: standard input cannot be both BEFORE and AFTER (the second read is empty, so every stack would read
/// as removed); a usage error, as GNU diff's `- -` would compare a stream with itself.
@Suite struct DiffStandardInputTwiceTests {
    @Test func diffRefusesStandardInputTwice() throws {
        let result = try CLI.run(["diff", "-", "-"], input: Array("a;b 3\n".utf8))
        #expect(result.status == 64 && result.out.isEmpty)
        #expect(result.err.split(separator: "\n").count == 2 && result.err.contains("standard input"), "\(result.err)")
    }
}
