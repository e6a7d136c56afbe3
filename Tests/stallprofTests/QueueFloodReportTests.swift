import Foundation
import StallFormat
import Testing

/// Many short blocks versus one long one (issue 18), end to end: stall-demo floods the main queue with tiny blocks
/// from a `flood-poster` thread, or runs one long block; `stallprof report` tells them apart and names the blocks'
/// closure. Runs under CPU hogs too (tools/test-under-load.sh).
@Suite struct QueueFloodReportTests {
    static let demo = CLI.product("stall-demo")

    enum Loop: String, CaseIterable { case runloop, dispatch }

    /// Runs stall-demo with `stall` and returns the report's largest episode (JSON) and the text.
    func report(_ stall: String, loop: Loop) throws -> (episode: [String: Any], text: String) {
        let path = CLI.temporary("flood-\(stall)-\(loop).stalls")
        defer { unlink(path) }
        let run = try CLI.run(["--stall", stall, "--stall-ms", "800", "--loop", loop.rawValue, "--output", path],
                              executable: Self.demo)
        #expect(run.status == 0, "\(run.err)")
        let json = try CLI.run(["report", "--json", path])
        let root = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
        // The episode with the most samples: under load a flood may make several stalls, as pings get through.
        let episodes = try #require(root["episodes"] as? [[String: Any]], "\(json.out)")
        let episode = try #require(episodes.max { ($0["samples"] as? Int ?? 0) < ($1["samples"] as? Int ?? 0) })
        return (episode, try CLI.run(["report", path]).out)
    }

    @Test(arguments: Loop.allCases)
    func aFloodIsManyShortBlocksAndItsClosureIsNamed(_ loop: Loop) throws {
        let (episode, text) = try report("flood", loop: loop)
        let turns = try #require(episode["mainQueueTurns"] as? Int, "\(episode)")
        let samples = try #require(episode["samples"] as? Int)
        // Each block spins 0.2 ms and samples come every 10 ms: nearly every sample is in a block of its own (two in
        // a row in one block when the scheduler preempted it: then the wait for a CPU between them is not its time).
        #expect(turns >= 10 && turns <= samples, "\(turns) blocks in \(samples) samples")
        #expect(episode["medianTurnMs"] is NSNull)
        let hints = try #require(episode["hints"] as? [[String: Any]])
        let flood = try #require(hints.first { $0["kind"] as? String == "flood" }, "\(hints)")
        let sentence = try #require(flood["text"] as? String)
        #expect(sentence.contains("short blocks back to back"), "\(sentence)")
        #expect(sentence.contains("each runs closure #1 in static StallSamples.FloodWork.post(milliseconds:"), "\(sentence)")
        // The text speaks of the episode's group (a flood may make two stalls, when a ping got through).
        #expect(text.contains("main queue: at least ") && text.contains("most shorter than the"), "\(text)")
    }

    @Test(arguments: Loop.allCases)
    func aBusyStallIsOneLongBlock(_ loop: Loop) throws {
        let (episode, text) = try report("busy", loop: loop)
        // The stall's block, and perhaps a block or two after it, sampled before the watchdog saw the queue answer.
        let turns = try #require(episode["mainQueueTurns"] as? Int, "\(episode)")
        #expect(turns >= 1 && turns <= 3, "\(episode)")
        let longest = try #require(episode["longestTurnMs"] as? Double, "\(episode)")
        let median = try #require(episode["medianTurnMs"] as? Double)
        let duration = try #require(episode["durationMs"] as? Double)
        let interval = try #require(episode["turnRanIntervalMs"] as? Double)
        // Its length leaves out the thread's wait for a CPU (under CPU hogs, most of the stall), and so does the
        // interval a sample stands for: a block seen in three samples or more is at least two of them.
        #expect(longest >= 2 * interval && longest <= duration + 50 && median == longest, "\(longest) of \(duration)")
        #expect(text.contains(turns == 1 ? "main queue: 1 long block (about " : "; the longest about "), "\(text)")
        let hints = episode["hints"] as? [[String: Any]] ?? []
        #expect(!hints.contains { $0["kind"] as? String == "flood" })
    }
}
