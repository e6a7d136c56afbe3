import CStallCapture
import Dispatch
import Foundation
import StallAnalysis
import StallFormat
import StallSamples
import Testing

@testable import StallProfiler

/// Targets watched besides the main queue (``StallTarget``): an event-loop-like executor thread and a serial
/// `DispatchQueue`, stalled at the same time, each recorded as its own episode on its own thread, busy or blocked,
/// while the main queue stays quiet. One watchdog (and one deep-sleep state) runs per process at a time, so these
/// run one after another with the other in-process watchdog tests.
extension WatchdogTests {
    static let targetLoop = SerialThread(name: "target-loop")

    /// The kernel thread id of the thread that runs `post`'s blocks.
    static func threadID(of post: (@escaping @Sendable () -> Void) -> Void) -> Int32 {
        let tid = Locked<Int32>(0), done = DispatchSemaphore(value: 0)
        post {
            tid.withLock { $0 = stallcap_gettid() }
            done.signal()
        }
        done.wait()
        return tid.withLock { $0 }
    }

    /// A configuration watching the stand-in main thread, writing to `path`.
    static func targetsConfiguration(_ path: String) -> StallWatchdog.Configuration {
        var configuration = StallWatchdog.Configuration(
            threshold: .milliseconds(100), sampleInterval: .milliseconds(5), outputPath: path)
        let main = Self.standIn
        configuration.post = { main.post($0) }
        return configuration
    }

    /// Waits until every episode in the capture at `path` has ended and `count` have begun, at most 10 s.
    static func waitForEpisodes(_ count: Int, path: String, watchdog: StallWatchdog) throws {
        for _ in 0..<200 {
            let capture = try CaptureReader.read(path: path)
            if capture.stalls.count >= count, capture.stalls.allSatisfy(\.isFinished) { return }
            usleep(50_000)
        }
    }

    @Test func anExecutorAndASerialQueueStalledAtOnceAreEachTheirOwnEpisode() throws {
        let path = TestSupport.temporaryPath("targets.stalls")
        defer { unlink(path) }
        let loop = Self.targetLoop, queue = DispatchQueue(label: "stallprof.test.db")
        var configuration = Self.targetsConfiguration(path)
        configuration.targets = [
            .executor("loop-0", threshold: .milliseconds(60)) { loop.post($0) },
            .queue("db", queue, threshold: .milliseconds(60)),
        ]
        let watchdog = try StallWatchdog.start(configuration)
        defer { watchdog.stop() }
        while !watchdog.statistics.mainQueueAnswered { usleep(1000) }
        let loopThread = Self.threadID { loop.post($0) }
        usleep(200_000)  // both targets answered a ping
        let done = DispatchGroup()
        done.enter()
        loop.post {
            _ = BusyWork.spin(milliseconds: 600)
            done.leave()
        }
        done.enter()
        queue.async {
            BlockedWork.waitForWorkerLock(milliseconds: 600)
            done.leave()
        }
        done.wait()
        try Self.waitForEpisodes(2, path: path, watchdog: watchdog)
        watchdog.stop()
        let capture = try CaptureReader.read(path: path)
        #expect(capture.closedCleanly)
        #expect(!capture.stalls.contains { $0.target == "main" }, "the main queue stayed quiet")
        let busy = try #require(capture.stalls.first { $0.target == "loop-0" && $0.kind == .stall })
        #expect(busy.begin.threadID == loopThread)
        #expect(busy.state == .busy)
        #expect(busy.samples.count >= 10)
        let blocked = try #require(capture.stalls.first { $0.target == "db" })
        #expect(blocked.state == .blocked)
        #expect(blocked.blockedOn?.waitKind == .mutex, "the wait is named: \(String(describing: blocked.blockedOn))")
        #expect(Set(capture.stalls.map(\.id)).count == capture.stalls.count, "one numbering for every target")
        let stacks = try Self.stacksByEpisode(of: capture)
        #expect(stacks[busy.id, default: []].contains { $0.contains { $0.contains("BusyWork.spin") } })
        #expect(stacks[blocked.id, default: []].contains { $0.contains { $0.contains("BlockedWork.lockContended") } })
        // Two threads sampled at once, neither starved of samples by the other's requests: at least half the rate
        // asked (seen: 81-99 samples of some 117 in 590 ms).
        for episode in [busy, blocked] {
            #expect(episode.samples.count * 2 >= Int(episode.durationNs / 5_000_000), "\(episode.samples.count) samples")
        }
    }

    @Test func targetsAreAddedAndRemovedOnARunningWatchdog() throws {
        let path = TestSupport.temporaryPath("targets-added.stalls")
        defer { unlink(path) }
        let loop = Self.targetLoop
        let watchdog = try StallWatchdog.start(Self.targetsConfiguration(path))
        defer { watchdog.stop() }
        while !watchdog.statistics.mainQueueAnswered { usleep(1000) }
        try watchdog.add(.executor("late", threshold: .milliseconds(50)) { loop.post($0) })
        #expect(throws: StallWatchdogError.invalidConfiguration("a target named 'late' is already watched")) {
            try watchdog.add(.executor("late") { loop.post($0) })
        }
        usleep(150_000)
        let stalled = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        loop.post {
            stalled.signal()
            release.wait()
        }
        stalled.wait()
        usleep(300_000)
        // Removed while it stalls: its episode ends there.
        #expect(watchdog.remove(named: "late"))
        #expect(!watchdog.remove(named: "late"))
        #expect(!watchdog.remove(named: "main"))
        usleep(100_000)
        release.signal()
        watchdog.stop()
        #expect(throws: StallWatchdogError.stopped) { try watchdog.add(.executor("after") { loop.post($0) }) }
        let capture = try CaptureReader.read(path: path)
        let episode = try #require(capture.stalls.first { $0.target == "late" })
        #expect(episode.isFinished)
        #expect(episode.state == .blocked)
        #expect(capture.stalls.filter { $0.target == "late" }.count == 1, "no episode after it was removed")
    }

    /// A serial queue's work runs on whichever worker is free: the thread sampled is the one holding its drain lock,
    /// read from the queue once a ping confirmed the layout (its block found its own thread there).
    @Test func aSerialQueuesDrainingThreadIsReadFromItsDrainLock() throws {
        let answers = PingAnswers(reading: .currentQueue)
        let queue = DispatchQueue(label: "stallprof.test.drain")
        let answered = DispatchSemaphore(value: 0)
        queue.async {
            answers.answer(ping: 1)
            answered.signal()
        }
        answered.wait()
        #expect(answers.answeredQueue.load(ordering: .relaxed) != 0)
        #expect(answers.answeredOwner.load(ordering: .relaxed) == answers.answeredThread.load(ordering: .relaxed))
        let target = WatchedTarget(
            name: "drain", timing: WatchdogTiming(StallWatchdog.Configuration(outputPath: "/tmp/unused.stalls")),
            maxFrames: 64, answers: answers, episodeIDs: EpisodeIDs(), post: { queue.async(execute: $0) })
        #expect(target.drainingThread() == nil, "not confirmed before an answer is taken")
        _ = try #require(target.takeAnswer())
        #expect(target.confirmedQueue != nil)
        // The worker lets go of the queue once the block has returned (it signalled from inside).
        for _ in 0..<1000 where target.drainingThread() != nil { usleep(1000) }
        #expect(target.drainingThread() == nil, "nothing runs on the queue")
        let running = Locked<Int32>(0), started = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        queue.async {
            running.withLock { $0 = stallcap_gettid() }
            started.signal()
            release.wait()
        }
        started.wait()
        #expect(target.drainingThread() == running.withLock { $0 })
        release.signal()
    }

    @Test func badTargetsAreRefusedNamingThem() throws {
        let queue = DispatchQueue(label: "stallprof.test.bad")
        var configuration = StallWatchdog.Configuration(outputPath: "/tmp/never.stalls")
        for (target, words) in [
            (StallTarget.queue("main", queue), "'main' is the main queue's"),
            (.queue("", queue), "1 to 64 bytes"),
            (.queue(String(repeating: "x", count: 65), queue), "1 to 64 bytes"),
            (.queue("tab\there", queue), "control characters"),
            (.queue("fast", queue, threshold: .milliseconds(5)), "between 10 ms and 1 hour"),
        ] {
            configuration.targets = [target]
            let error = try #require(throws: StallWatchdogError.self) { try configuration.validate() }
            #expect("\(error)".contains(words), "\(error)")
        }
        configuration.targets = [.queue("a", queue), .queue("a", queue)]
        #expect(throws: StallWatchdogError.invalidConfiguration("two targets are named 'a'")) {
            try configuration.validate()
        }
        configuration.sampleInterval = .milliseconds(20)
        configuration.targets = [.queue("slow-samples", queue, threshold: .milliseconds(15))]
        #expect(throws: StallWatchdogError.self) { try configuration.validate() }
    }

    /// The symbolized stacks of each episode, root first.
    static func stacksByEpisode(of capture: Capture) throws -> [UInt32: [[String]]] {
        let symbolizer = Symbolizer(images: capture.images)
        var stacks: [UInt32: [[String]]] = [:]
        for stall in capture.stalls {
            stacks[stall.id] = stall.samples.filter { !$0.frames.isEmpty }.map {
                symbolizer.rootFirstNames(leafFirst: $0.frames)
            }
        }
        return stacks
    }
}
