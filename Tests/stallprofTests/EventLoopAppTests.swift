import Foundation
import StallFormat
import Testing

/// Watched targets end to end: `event-loop` serves a loopback port on three epoll-based loop threads, each a
/// watchdog target (`.executor`, threshold 50 ms); loop 1 blocks in a read of a slow pipe, loop 2 burns the CPU.
/// The capture must hold one episode on each, on that loop's thread, blocked and busy, the wait named, the handler
/// on the stack, and nothing on loop 0 or the main queue.
@Suite struct EventLoopAppTests {
    @Test func aBlockedAndABusyLoopAreEachTheirOwnTargetsEpisode() throws {
        let path = CLI.temporary("event-loop.stalls")
        defer { unlink(path) }
        let app = try CLI.run(
            ["--read-ms", "400", "--burn-ms", "400"], environment: [EnvironmentName.output: path],
            executable: CLI.product("event-loop"))
        let (printed, said) = (app.out, app.err)
        #expect(app.status == 0, "\(said)")
        #expect(!said.contains("EINTR"), "no read or wait of a loop failed: \(said)")
        // "loop-N tid T" for each loop.
        var loopThreads: [String: Int] = [:]
        for line in printed.split(separator: "\n") {
            let words = line.split(separator: " ")
            if words.count == 3, words[1] == "tid", let tid = Int(words[2]) { loopThreads[String(words[0])] = tid }
        }
        #expect(loopThreads.count == 3, "\(printed)")

        let (status, json, stderr) = try CLI.run(["report", "--json", path], input: "")
        try #require(status == 0, "\(stderr)")
        let episodes = try #require(try CLI.json(json)["episodes"] as? [[String: Any]])
        let targets = episodes.map { $0["target"] as? String ?? "?" }
        let others = episodes.filter { !["loop-1", "loop-2"].contains($0["target"] as? String ?? "?") }.map {
            "\($0["target"] ?? "?") \($0["state"] ?? "?") \($0["durationMs"] ?? "?") ms, \($0["samples"] ?? "?") samples"
        }
        #expect(Set(targets) == ["loop-1", "loop-2"], "only the stalled loops: \(targets); others: \(others)")
        let blocked = try #require(episodes.first { $0["target"] as? String == "loop-1" })
        #expect(blocked["state"] as? String == "blocked")
        #expect(blocked["thresholdMs"] as? Double == 50, "the loop's own threshold: \(blocked)")
        #expect(blocked["tid"] as? Int == loopThreads["loop-1"])
        let wait = try #require(blocked["blockedOn"] as? [String: Any], "\(blocked)")
        #expect(wait["kind"] as? String == "io" && wait["syscall"] as? String == "read", "\(wait)")
        #expect((wait["detail"] as? String ?? "").contains("pipe:"), "\(wait)")
        let busy = try #require(episodes.first { $0["target"] as? String == "loop-2" })
        #expect(busy["state"] as? String == "busy")
        #expect(busy["tid"] as? Int == loopThreads["loop-2"])
        #expect(busy["queueTurns"] == nil, "a loop runs no main-queue blocks")

        // Each loop's stacks, by target: the handler that stalled it, and nothing for the quiet loop.
        let slow = try CLI.run(["fold", "--target", "loop-1", path], input: "")
        #expect(slow.0 == 0 && slow.1.contains("Handlers.slowRead") && !slow.1.contains("Handlers.burn"), "\(slow)")
        let burn = try CLI.run(["fold", "--target", "loop-2", path], input: "")
        #expect(burn.0 == 0 && burn.1.contains("Handlers.burn") && !burn.1.contains("Handlers.slowRead"), "\(burn)")
        let quiet = try CLI.run(["fold", "--target", "loop-0", "--target", "main", path], input: "")
        #expect(quiet.0 == 0 && quiet.1.isEmpty, "\(quiet)")
    }

    /// An idle server: every loop sits in its epoll_wait, and the watchdog sleeps deeply over all of them (no check
    /// every interval: WatchdogLoop+DeepTargets.swift). The request that then blocks loop 1 at once (a read of a slow
    /// pipe: the loop runs too little for a CPU timer) wakes the watchdog through the AIO poll of that loop's set, and
    /// its episode is caught whole, the wait named; the burn on loop 2 after it too. With the main thread in its run
    /// loop, or parked in dispatchMain() as a server's async `@main` is (the deep sleep on libdispatch's main queue).
    @Test(arguments: [false, true])
    func anIdleServersNextStallIsCaughtAfterTheWatchdogSleptDeeply(dispatchMain: Bool) throws {
        let path = CLI.temporary("event-loop-idle.stalls")
        defer { unlink(path) }
        let app = try CLI.run(
            ["--read-ms", "600", "--burn-ms", "400", "--idle-ms", "15000"] + (dispatchMain ? ["--dispatch-main"] : []),
            environment: [EnvironmentName.output: path], executable: CLI.product("event-loop"))
        #expect(app.status == 0, "\(app.err)")
        #expect(app.out.contains("deep sleep seen: true"), "the watchdog never slept deeply over the idle loops: \(app.out)")
        let (status, json, stderr) = try CLI.run(["report", "--json", path], input: "")
        try #require(status == 0, "\(stderr)")
        let episodes = try #require(try CLI.json(json)["episodes"] as? [[String: Any]])
        #expect(Set(episodes.map { $0["target"] as? String ?? "?" }) == ["loop-1", "loop-2"], "\(episodes)")
        let blocked = try #require(episodes.first { $0["target"] as? String == "loop-1" })
        #expect(blocked["state"] as? String == "blocked")
        let wait = try #require(blocked["blockedOn"] as? [String: Any], "\(blocked)")
        #expect(wait["kind"] as? String == "io" && wait["syscall"] as? String == "read", "\(wait)")
        // Seen when the loop woke, not a sleep's timeout later: most of the 600 ms read is in the episode.
        #expect((blocked["durationMs"] as? Double ?? 0) >= 400, "\(blocked)")
        let busy = try #require(episodes.first { $0["target"] as? String == "loop-2" })
        #expect(busy["state"] as? String == "busy")
    }
}
