import Foundation
import StallFormat
import Testing

/// What the main thread waits for, end to end: `wait-shapes` freezes its main thread in one shape, under the
/// watchdog; `stallprof report --json` must name the wait, the thread it waits for (or candidates), deadlocks and
/// self-waits, with every thread of the process in view.
@Suite(.serialized)
struct WaitShapesReportTests {
    /// Runs `wait-shapes SHAPE` under the watchdog and returns the report's first blocked episode.
    func episode(_ shape: String, ms: Int = 900) throws -> [String: Any] { try reports(shape, ms: ms).episode }

    /// Runs `wait-shapes SHAPE` under the watchdog: the JSON report's first blocked episode and the text report.
    func reports(_ shape: String, ms: Int = 900) throws -> (episode: [String: Any], text: String) {
        let path = CLI.temporary("wait-\(shape).stalls")
        defer { unlink(path) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: CLI.product("wait-shapes"))
        process.arguments = [shape, "--ms", String(ms)]
        process.environment = [EnvironmentName.output: path, EnvironmentName.threshold: "200", EnvironmentName.interval: "10"]
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "wait-shapes \(shape) exited \(process.terminationStatus)")
        // The host-impact rule: no thread's sleep cut short, no EINTR, snapshots included.
        #expect(!said.contains("cut short") && !said.contains("EINTR"), "\(said)")
        let (status, json, stderr) = try CLI.run(["report", "--json", path], input: "")
        try #require(status == 0, "\(stderr)")
        let root = try CLI.json(json)
        let episodes = try #require(root["episodes"] as? [[String: Any]])
        let text = try CLI.run(["report", path], input: "").1
        return (try #require(episodes.first { $0["state"] as? String == "blocked" }, "no blocked episode: \(episodes)"), text)
    }

    func blockedOn(_ episode: [String: Any]) throws -> [String: Any] {
        try #require(episode["blockedOn"] as? [String: Any], "no blockedOn: \(episode)")
    }

    func waitsFor(_ blocked: [String: Any]) -> [[String: Any]] { blocked["waitsFor"] as? [[String: Any]] ?? [] }

    func threads(_ episode: [String: Any]) -> [[String: Any]] { episode["threads"] as? [[String: Any]] ?? [] }

    /// The stack's functions joined, for `contains` checks.
    func stack(_ object: [String: Any]) -> String { (object["stack"] as? [String] ?? []).joined(separator: " | ") }

    @Test func dispatchSyncNamesTheQueueAndTheThreadRunningItsBlock() throws {
        let episode = try episode("sync")
        let blocked = try blockedOn(episode)
        #expect(blocked["kind"] as? String == "dispatch-sync", "\(blocked)")
        #expect(blocked["queueLabel"] as? String == "com.example.db", "\(blocked)")
        let owner = try #require(waitsFor(blocked).first, "\(blocked)")
        #expect(owner["certain"] as? Bool == true)
        #expect(owner["tid"] as? Int == blocked["ownerTid"] as? Int)
        #expect(stack(owner).contains("syncOntoBusyQueue"), "\(stack(owner))")
        #expect((blocked["sentence"] as? String ?? "").contains("queue 'com.example.db'"))
        #expect(threads(episode).contains { $0["tid"] as? Int == owner["tid"] as? Int && $0["why"] as? String == "owner" })
    }

    @Test func aSemaphoreForIOListsTheReaderAsACandidateNotACertainty() throws {
        let episode = try episode("semaphore")
        let blocked = try blockedOn(episode)
        #expect(blocked["kind"] as? String == "semaphore", "\(blocked)")
        let candidates = waitsFor(blocked)
        #expect(!candidates.isEmpty && candidates.allSatisfy { $0["certain"] as? Bool == false }, "\(candidates)")
        let reader = try #require(candidates.first { $0["name"] as? String == "io-reader" }, "\(candidates)")
        #expect(reader["state"] as? String == "in read")
        #expect(stack(reader).contains("waitForReply"), "\(stack(reader))")
        #expect((blocked["sentence"] as? String ?? "").contains("not known for certain"))
        let snapshot = threads(episode)
        let readerThread = try #require(snapshot.first { $0["name"] as? String == "io-reader" })
        #expect((readerThread["detail"] as? String ?? "").contains("socket:["), "\(readerThread)")
    }

    @Test func aLockOrderDeadlockIsFoundWithBothThreadsAndTheirFrames() throws {
        let episode = try episode("deadlock")
        let blocked = try blockedOn(episode)
        #expect(blocked["kind"] as? String == "mutex")
        let deadlock = try #require(blocked["deadlock"] as? [String: Any], "\(blocked)")
        let cycle = try #require(deadlock["cycle"] as? [[String: Any]])
        #expect(cycle.count == 2)
        #expect(cycle.first?["tid"] as? Int == episode["tid"] as? Int && cycle.first?["name"] as? String == "main")
        #expect(cycle.last?["name"] as? String == "db-worker")
        let frames = cycle.map { ($0["frame"] as? String) ?? "" }
        #expect(frames.first?.contains("lockInOrderAB") == true, "\(cycle)")
        #expect(frames.last?.contains("lockInOrderBA") == true, "\(cycle)")
        // Each holds what the other wants.
        #expect(cycle[0]["holds"] as? String == cycle[1]["wants"] as? String)
        #expect(cycle[1]["holds"] as? String == cycle[0]["wants"] as? String)
        #expect((deadlock["sentence"] as? String ?? "").hasPrefix("deadlock: main"))
    }

    @Test func aMainActorSelfWaitGetsTheHint() throws {
        let (episode, text) = try reports("self-wait")
        #expect(text.contains("hint: nothing else is running"), "\(text)")
        let blocked = try blockedOn(episode)
        #expect(blocked["kind"] as? String == "semaphore", "\(blocked)")
        let hints = (episode["hints"] as? [[String: Any]] ?? []).compactMap { $0["kind"] as? String }
        #expect(hints.contains("self-wait"), "\(hints)")
    }

    @Test func aGroupWaitListsTheSleepingBlockAsACandidate() throws {
        let episode = try episode("group")
        let blocked = try blockedOn(episode)
        #expect(blocked["kind"] as? String == "group", "\(blocked)")
        // The group's block sleeps in nanosleep on a pool thread: a candidate, not a certainty.
        let candidate = try #require(waitsFor(blocked).first { stack($0).contains("waitForGroup") }, "\(waitsFor(blocked))")
        #expect(candidate["certain"] as? Bool == false && candidate["state"] as? String == "in clock_nanosleep")
    }

    @Test(arguments: [
        ("mutex", "mutex", "db-worker"), ("join", "join", "joined-worker"), ("rwlock", "rwlock", "db-writer"),
    ])
    func anOwnedWaitNamesItsOwner(shape: String, kind: String, owner: String) throws {
        let episode = try episode(shape)
        let blocked = try blockedOn(episode)
        #expect(blocked["kind"] as? String == kind, "\(blocked)")
        #expect(blocked["ownerName"] as? String == owner, "\(blocked)")
        let waited = try #require(waitsFor(blocked).first)
        #expect(waited["certain"] as? Bool == true && waited["name"] as? String == owner)
        #expect(stack(waited).contains("nap"), "\(stack(waited))")
        // The waiting thread's stacks were read from memory and walked to the outermost frame, as gdb does.
        let memory = try #require(episode["memoryStacks"] as? [String: Any], "\(episode)")
        #expect(memory["samples"] as? Int ?? 0 >= 1)
        #expect((memory["stopped"] as? [String: Int])?.values.allSatisfy { $0 == 0 } == true, "\(memory)")
    }

    @Test func aConditionsWaiterRetakingItsMutexNamesTheMutexOwner() throws {
        let episode = try episode("cond-retake")
        let blocked = try blockedOn(episode)
        #expect(blocked["kind"] as? String == "condition", "\(blocked)")
        #expect(blocked["ownerName"] as? String == "signaller", "\(blocked)")
        let owner = try #require(waitsFor(blocked).first, "\(blocked)")
        #expect(owner["certain"] as? Bool == true && owner["name"] as? String == "signaller")
        #expect(stack(owner).contains("retakeConditionMutex"), "\(stack(owner))")
        #expect((blocked["sentence"] as? String ?? "").contains("re-taking its mutex"), "\(blocked)")
    }

    @Test func aSocketReadNamesThePeerEndAndTheThreadOnItFirst() throws {
        let episode = try episode("socket")
        let blocked = try blockedOn(episode)
        #expect(blocked["kind"] as? String == "io", "\(blocked)")
        #expect((blocked["detail"] as? String ?? "").contains(", peer socket:["), "\(blocked)")
        // socket-peer reads the other end; log-drain, also in read (on a pipe), is not on this channel.
        let first = try #require(waitsFor(blocked).first, "\(blocked)")
        #expect(first["name"] as? String == "socket-peer" && first["certain"] as? Bool == false, "\(waitsFor(blocked))")
        #expect(first["state"] as? String == "in read")
        #expect(threads(episode).contains { $0["name"] as? String == "log-drain" && $0["why"] as? String != "same object" })
    }

    @Test(arguments: [("cond", "condition"), ("pipe", "io"), ("sleep", "sleep")])
    func otherWaitsAreNamed(shape: String, kind: String) throws {
        let episode = try episode(shape)
        let blocked = try blockedOn(episode)
        #expect(blocked["kind"] as? String == kind, "\(blocked)")
        #expect(!threads(episode).isEmpty)
        #expect(threads(episode).first?["why"] as? String == "waiting")
        if kind == "sleep" { #expect((blocked["detail"] as? String ?? "").contains("0.900 s"), "\(blocked)") }
        if kind == "io" { #expect((blocked["detail"] as? String ?? "").contains("pipe:["), "\(blocked)") }
    }
}
