import Foundation
import StallFormat
import Testing

/// The cooperative pool end to end: `pool-starvation` starts more `async` handlers than the pool has threads, each
/// blocking in `DispatchSemaphore.wait` under `Handler.fetch()` for 1.2 s, with the pool a watchdog target
/// (threshold 100 ms). The capture must hold one starvation: an episode on every thread that ran a handler while
/// the pool starved, each blocked on the semaphore, and the report's sentence naming the wait and the handler.
@Suite struct PoolStarvationAppTests {
    /// What one run printed and reported.
    struct Run {
        /// The threads of each kind of work (`fetch`, `compute`, `global`), with when each began (ms after start).
        var began: [String: [(tid: Int, atMs: Int)]] = [:]
        /// How long the request task waited for the pool.
        var requestWaitedMs = 0
        /// The report's JSON, and its text.
        var json: [String: Any] = [:], text = ""
        /// `fold --target pool` and `fold --target main`.
        var poolFold = "", mainFold = ""

        /// The threads of `kind` that began before the handlers were released (1.2 s).
        func threads(_ kind: String, beforeMs: Int = 1_100) -> Set<Int> {
            Set((began[kind] ?? []).filter { $0.atMs < beforeMs }.map(\.tid))
        }
    }

    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> Run {
        let path = CLI.temporary("pool-starvation.stalls")
        defer { unlink(path) }
        let app = try CLI.run(
            ["--hold-ms", "1200"] + arguments,
            environment: environment.merging([EnvironmentName.output: path]) { $1 },
            executable: CLI.product("pool-starvation"))
        #expect(app.status == 0, "\(app.err)")
        let printed = app.out
        var run = Run()
        for line in printed.split(separator: "\n") {
            let words = line.split(separator: " ")
            if words.count == 6, words[1] == "tid", let tid = Int(words[2]), let at = Int(words[4]) {
                run.began[String(words[0]), default: []].append((tid, at))
            }
            if words.count == 4, words[0] == "request", let ms = Int(words[2]) { run.requestWaitedMs = ms }
        }
        let (status, json, stderr) = try CLI.run(["report", "--json", path], input: "")
        try #require(status == 0, "\(stderr)")
        run.json = try CLI.json(json)
        run.text = try CLI.run(["report", path], input: "").1
        run.poolFold = try CLI.run(["fold", "--target", "pool", path], input: "").1
        run.mainFold = try CLI.run(["fold", "--target", "main", path], input: "").1
        return run
    }

    /// Checks that the episodes are the pool's threads: every thread that began work at once (within 50 ms, well
    /// before the 100 ms threshold), no thread that ran no work before the release, and one episode per thread in
    /// each starvation. (The pool may answer once in between: libdispatch adds a worker when its queue stays full,
    /// about 700 ms in, which may run the queued ping; then a second starvation follows.)
    static func checkThreads(_ run: Run, of kinds: [String]) throws -> [[String: Any]] {
        let episodes = try #require(run.json["episodes"] as? [[String: Any]])
        #expect(episodes.allSatisfy { $0["target"] as? String == "pool" }, "only the pool: \(episodes.map { $0["target"] ?? "?" })")
        let sampled = episodes.compactMap { $0["tid"] as? Int }
        let starvations = try #require(run.json["starvations"] as? [[String: Any]])
        #expect(!starvations.isEmpty && starvations.count <= 3, "\(starvations)")
        let ids = episodes.map { $0["id"] as? Int ?? 0 }
        for starvation in starvations {
            let tids = (starvation["episodes"] as? [Int] ?? []).compactMap { id in ids.firstIndex(of: id).map { sampled[$0] } }
            #expect(Set(tids).count == tids.count, "one episode per thread: \(starvation)")
        }
        let atOnce = kinds.reduce(into: Set<Int>()) { $0.formUnion(run.threads($1, beforeMs: 50)) }
        let working = kinds.reduce(into: Set<Int>()) { $0.formUnion(run.threads($1)) }
        #expect(!atOnce.isEmpty && atOnce.isSubset(of: Set(sampled)), "every thread that began at once: \(run.began) \(sampled)")
        #expect(Set(sampled).isSubset(of: working), "only threads that ran work: \(run.began) \(sampled)")
        #expect(run.mainFold.isEmpty, "the main queue stayed quiet: \(run.mainFold)")
        return episodes
    }

    @Test func aStarvedPoolHasAnEpisodeOnEveryPoolThreadAndTheWaitNamed() throws {
        let run = try Self.run([])
        #expect(run.requestWaitedMs >= 1000, "a task started with the handlers waited for the pool: \(run.requestWaitedMs)")
        let episodes = try Self.checkThreads(run, of: ["fetch"])
        for episode in episodes {
            #expect(episode["state"] as? String == "blocked", "\(episode)")
            #expect((episode["blockedOn"] as? [String: Any])?["kind"] as? String == "semaphore", "\(episode)")
        }
        let starvations = try #require(run.json["starvations"] as? [[String: Any]])
        let starvation = try #require(starvations.first), n = starvation["threads"] as? Int ?? 0
        #expect(n > 0 && starvation["blocked"] as? Int == n, "\(starvation)")
        #expect(starvation["wait"] as? String == "DispatchSemaphore.wait", "\(starvation)")
        #expect((starvation["under"] as? String ?? "").contains("Handler.fetch()"), "\(starvation)")
        #expect((starvation["under"] as? String ?? "").contains("main.swift:"), "the line: \(starvation)")
        // From the first starvation's start to the last one's end: about the 1.2 s hold.
        let last = try #require(starvations.last)
        let span = (last["startMs"] as? Double ?? 0) + (last["durationMs"] as? Double ?? 0) - (starvation["startMs"] as? Double ?? 0)
        #expect(span > 900 && span < 2_000, "about the 1.2 s hold: \(starvations)")
        #expect(run.text.contains("the cooperative pool was starved for "), "\(run.text)")
        #expect(run.text.contains("\(n) of \(n) thread\(n == 1 ? "" : "s") blocked in"), "\(run.text)")
        #expect(run.poolFold.contains("Handler.fetch()"), "\(run.poolFold)")
    }

    /// A pool starved before the watchdog's first ping ran (no thread ever answered) is seen too.
    @Test func aPoolStarvedFromTheStartIsSeen() throws {
        let run = try Self.run(["--starved-first"])
        let episodes = try Self.checkThreads(run, of: ["fetch"])
        #expect(episodes.allSatisfy { ($0["blockedOn"] as? [String: Any])?["kind"] as? String == "semaphore" }, "\(episodes)")
    }

    /// `STALLPROF_POOL_MS` watches the pool of an app started from the environment, with no code.
    @Test func thePoolIsWatchedFromTheEnvironment() throws {
        let run = try Self.run([], environment: [EnvironmentName.pool: "100"])
        _ = try Self.checkThreads(run, of: ["fetch"])
    }

    /// A busy handler and a sleeping `DispatchQueue.global()` block starve the pool too (on Linux the block holds
    /// one of the pool's threads): each is a pool thread, told busy or blocked.
    /// A plain thread started from a task carries the worker's name (Linux copies it), and inside `sync` its stack
    /// has a libdispatch frame calling app code: it is still not a pool thread.
    @Test func aBusyJobAndAGlobalBlockAreToldApart() throws {
        let run = try Self.run(["--busy", "1", "--global", "1", "--stray", "1"])
        let episodes = try Self.checkThreads(run, of: ["fetch", "compute", "global"])
        let stray = run.threads("stray")
        #expect(!stray.isEmpty && stray.isDisjoint(with: episodes.compactMap { $0["tid"] as? Int }), "\(run.began) \(episodes)")
        func state(_ tid: Int) -> String? { episodes.first { $0["tid"] as? Int == tid }?["state"] as? String }
        for tid in run.threads("compute", beforeMs: 50) { #expect(state(tid) == "busy", "\(episodes)") }
        for tid in run.threads("global", beforeMs: 50) {
            #expect(state(tid) == "blocked", "\(episodes)")
            let episode = episodes.first { $0["tid"] as? Int == tid }
            #expect((episode?["blockedOn"] as? [String: Any])?["kind"] as? String == "sleep", "\(episodes)")
        }
        let starvations = try #require(run.json["starvations"] as? [[String: Any]])
        if !run.threads("compute", beforeMs: 50).isEmpty, let first = starvations.first {
            #expect((first["busyIn"] as? String ?? "").contains("Handler.compute("), "\(first)")
            let unwrapped = run.text.replacingOccurrences(of: "\n  ", with: " ")
            #expect(unwrapped.contains(" busy in Handler.compute("), "\(run.text)")
        }
    }
}
