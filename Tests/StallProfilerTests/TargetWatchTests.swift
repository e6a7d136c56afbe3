import CStallCapture
import Dispatch
import Foundation
import StallAnalysis
import StallFormat
import StallSamples
import Testing

@testable import StallProfiler

/// Targets watched besides the main queue (``StallTarget``): two event-loop-like executor threads and a serial
/// `DispatchQueue`, stalled at the same time, each recorded as its own episode on its own thread, busy or blocked,
/// while the main queue stays quiet. One watchdog (and one deep-sleep state) runs per process at a time, so these
/// run one after another with the other in-process watchdog tests.
extension WatchdogTests {
    static let targetLoop = SerialThread(name: "target-loop")
    static let secondLoop = SerialThread(name: "second-loop")

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
        // 10 ms: at least two scheduler ticks, so that a sampler alone pipelines its requests.
        var configuration = StallWatchdog.Configuration(
            threshold: .milliseconds(100), sampleInterval: .milliseconds(10), outputPath: path)
        let main = Self.standIn
        configuration.post = { main.post($0) }
        return configuration
    }

    /// Waits until `count` episodes in the capture at `path` have begun and every one has ended (at most 10 s),
    /// then stops the watchdog and reads the capture.
    static func finishedCapture(episodes count: Int, path: String, watchdog: StallWatchdog) throws -> Capture {
        for _ in 0..<200 {
            let capture = try CaptureReader.read(path: path)
            if capture.stalls.count >= count, capture.stalls.allSatisfy(\.isFinished) { break }
            usleep(50_000)
        }
        watchdog.stop()
        return try CaptureReader.read(path: path)
    }

    @Test func executorsAndASerialQueueStalledAtOnceAreEachTheirOwnEpisode() throws {
        let path = TestSupport.temporaryPath("targets.stalls")
        defer { unlink(path) }
        let loop = Self.targetLoop, second = Self.secondLoop, queue = DispatchQueue(label: "stallprof.test.db")
        var configuration = Self.targetsConfiguration(path)
        configuration.targets = [
            .executor("loop-0", threshold: .milliseconds(60)) { loop.post($0) },
            .executor("loop-1", threshold: .milliseconds(60)) { second.post($0) },
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
        second.post {
            _ = BusyWork.spin(milliseconds: 600)
            done.leave()
        }
        done.enter()
        queue.async {
            BlockedWork.waitForWorkerLock(milliseconds: 600)
            done.leave()
        }
        done.wait()
        let capture = try Self.finishedCapture(episodes: 3, path: path, watchdog: watchdog)
        #expect(capture.closedCleanly)
        #expect(!capture.stalls.contains { $0.target == "main" }, "the main queue stayed quiet")
        let busy = try #require(capture.stalls.first { $0.target == "loop-0" && $0.kind == .stall })
        #expect(busy.begin.threadID == loopThread)
        #expect(busy.state == .busy)
        let busyToo = try #require(capture.stalls.first { $0.target == "loop-1" && $0.kind == .stall })
        #expect(busyToo.state == .busy && busyToo.begin.threadID != busy.begin.threadID)
        let blocked = try #require(capture.stalls.first { $0.target == "db" })
        #expect(blocked.state == .blocked)
        #expect(blocked.blockedOn?.waitKind == .mutex, "the wait is named: \(String(describing: blocked.blockedOn))")
        #expect(Set(capture.stalls.map(\.id)).count == capture.stalls.count, "one numbering for every target")
        let stacks = try Self.stacksByEpisode(of: capture)
        #expect(stacks[busy.id, default: []].contains { $0.contains { $0.contains("BusyWork.spin") } })
        #expect(stacks[blocked.id, default: []].contains { $0.contains { $0.contains("BlockedWork.lockContended") } })
        // Three threads sampled at once, neither busy one starved of samples by the other's requests. Pipelined,
        // each would take the other's one request slot before it is answered: 0-1 samples each when tried, against
        // 54-55 of 60 asked on a quiet machine. Under eight CPU hogs each busy loop runs about 105 ms of the 600 and
        // got 8-14 samples (each needs a tick that finds its thread running, and the slot): so not a rate.
        for episode in [busy, busyToo, blocked] {
            let times = episode.samples.map(\.timestampNs)
            #expect(times.count >= 4, "\(episode.target): \(times.count) samples")
            let span = (times.max() ?? 0) &- (times.min() ?? 0)
            #expect(span * 3 >= episode.durationNs, "\(episode.target): samples span \(span) ns of \(episode.durationNs)")
        }
    }

    /// An idle executor is not woken to answer: once its wait is learned (three prompt answers whose post readied
    /// it), its checks are answered by its thread sleeping still in that wait, and a stall after that is caught all
    /// the same, on the thread that runs it. A serial queue's checks stay pings (its own state reads idle while the
    /// serial queue it targets runs a blocked block, or while it is suspended): an idle one is pinged every check.
    @Test(arguments: [false, true])
    func anIdleTargetIsCheckedWithoutPingsAndItsStallIsStillCaught(queue isQueue: Bool) throws {
        let path = TestSupport.temporaryPath("quiet-target.stalls")
        defer { unlink(path) }
        let loop = Self.secondLoop, queue = DispatchQueue(label: "quiet-queue")
        let run: @Sendable (@escaping @Sendable () -> Void) -> Void = { block in
            if isQueue { queue.async(execute: block) } else { loop.post(block) }
        }
        let pings = Locked<Int>(0)
        var configuration = Self.targetsConfiguration(path)
        // `.executor("quiet") { loop.post($0) }` or `.queue("quiet", queue)`, its pings counted.
        configuration.targets = [
            StallTarget(name: "quiet", threshold: .milliseconds(100), post: { block in
                pings.withLock { $0 += 1 }
                run(block)
            }, hasOwnThread: !isQueue, pool: nil)
        ]
        let watchdog = try StallWatchdog.start(configuration)
        defer { watchdog.stop() }
        usleep(2_000_000)  // 80 checks, 25 ms apart
        let idlePings = pings.withLock { $0 }
        if isQueue {
            #expect(idlePings >= 30, "\(idlePings) pings in 80 checks of an idle queue")
        } else {
            #expect(idlePings >= 3 && idlePings <= 20, "\(idlePings) pings in 80 checks of an idle loop")
        }
        let done = DispatchSemaphore(value: 0)
        let worker = Locked<Int32>(0)
        run {
            worker.withLock { $0 = stallcap_gettid() }
            BlockedWork.waitForWorkerLock(milliseconds: 400)
            done.signal()
        }
        done.wait()
        let capture = try Self.finishedCapture(episodes: 1, path: path, watchdog: watchdog)
        let stall = try #require(capture.stalls.first { $0.target == "quiet" })
        #expect(stall.state == .blocked && stall.blockedOn?.waitKind == .mutex)
        #expect(stall.begin.threadID == worker.withLock { $0 }, "sampled on the thread that runs the block")
        #expect(stall.durationNs >= 300_000_000, "\(stall.durationNs) ns")
    }

    /// A handler's own wait that answers pings promptly while it is short (a synchronous query polling a socket)
    /// is deeper on the stack than the executor's idle wait, and never trusted once the loop was seen idle; on a
    /// loop never seen idle (each request posts the next) it is the shallowest wait seen, yet a ping's post never
    /// readies it (RunLoopWait.postStirred), so it is never learned either, and the same wait blocking for 700 ms
    /// is caught (a reviewer's test: learned from prompt answers alone, with a real ping every 40 checks, no episode
    /// at all in two runs of three).
    @Test(arguments: [false, true])
    func aHandlersOwnShortWaitDoesNotHideItsLongOne(neverIdle: Bool) throws {
        let path = TestSupport.temporaryPath("handler-wait.stalls")
        defer { unlink(path) }
        let loop = Self.secondLoop
        var configuration = Self.targetsConfiguration(path)
        configuration.targets = [.executor("queries", threshold: .milliseconds(100)) { loop.post($0) }]
        let watchdog = try StallWatchdog.start(configuration)
        defer { watchdog.stop() }
        usleep(300_000)
        let done = DispatchSemaphore(value: 0)
        let end = DispatchTime.now().uptimeNanoseconds + 1_000_000_000
        // Fast queries for a second (3 ms each), then one slow query of 700 ms at the same place.
        @Sendable func request() {
            let slow = DispatchTime.now().uptimeNanoseconds >= end
            _ = poll(nil, 0, slow ? 700 : 3)
            if slow { done.signal() } else if neverIdle { loop.post(request) }
        }
        if neverIdle {
            loop.post(request)
        } else {
            while DispatchTime.now().uptimeNanoseconds < end - 5_000_000 {
                loop.post(request)
                usleep(4_000)
            }
            usleep(10_000)
            loop.post(request)  // the slow one
        }
        done.wait()
        let capture = try Self.finishedCapture(episodes: 1, path: path, watchdog: watchdog)
        let stall = try #require(capture.stalls.first { $0.target == "queries" && $0.durationNs >= 450_000_000 },
            "\(capture.stalls.map { ($0.target, $0.durationNs) })")
        #expect(stall.state == .blocked)
    }

    /// A busy executor thread that blocks the capture signal never answers a request: sharing the slot, it must
    /// not keep it, or the main thread's busy stall at the same time goes unsampled (a reviewer's test: 0-2 of 87).
    @Test func aTargetThatBlocksTheSignalDoesNotStarveTheMainThreadsSamples() throws {
        let path = TestSupport.temporaryPath("signal-blocking-target.stalls")
        defer { unlink(path) }
        let loop = Self.secondLoop
        var configuration = Self.targetsConfiguration(path)
        configuration.targets = [.executor("masked", threshold: .milliseconds(100)) { loop.post($0) }]
        let watchdog = try StallWatchdog.start(configuration)
        defer { watchdog.stop() }
        while !watchdog.statistics.mainQueueAnswered { usleep(1000) }
        usleep(300_000)
        let done = DispatchGroup()
        done.enter()
        Self.standIn.post {
            _ = BusyWork.spin(milliseconds: 900)
            done.leave()
        }
        done.enter()
        loop.post {
            var blocked = sigset_t(), old = sigset_t()
            sigemptyset(&blocked)
            sigaddset(&blocked, SIGPROF)
            pthread_sigmask(SIG_BLOCK, &blocked, &old)
            _ = BusyWork.spin(milliseconds: 900)
            pthread_sigmask(SIG_SETMASK, &old, nil)
            done.leave()
        }
        done.wait()
        let capture = try Self.finishedCapture(episodes: 2, path: path, watchdog: watchdog)
        let main = try #require(capture.stalls.first { $0.target == "main" && $0.kind == .stall })
        let stacks = main.samples.filter { !$0.frames.isEmpty }.count
        #expect(stacks >= 10, "main's busy stall: \(stacks) samples with a stack of \(main.samples.count)")
        let masked = try #require(capture.stalls.first { $0.target == "masked" && $0.kind == .stall })
        #expect(masked.signalMask != nil, "the target's blocked signal is recorded")
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
        // Its first answer prepared the loop thread for the handler: an alternate signal stack of its own.
        let altStack = Locked<[Int]>([]), looked = DispatchSemaphore(value: 0)
        loop.post {
            var current = stack_t()
            sigaltstack(nil, &current)
            altStack.withLock { $0 = [Int(current.ss_flags), current.ss_size] }
            looked.signal()
        }
        looked.wait()
        let stack = altStack.withLock { $0 }
        #expect(stack.count == 2 && stack[0] & Int(SS_DISABLE) == 0 && stack[1] >= 64 * 1024, "flags, size: \(stack)")
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
            (.executor("pool") { _ in }, "'pool' is the cooperative pool's"),
            (.cooperativePool(threshold: .milliseconds(5)), "between 10 ms and 1 hour"),
        ] {
            configuration.targets = [target]
            let error = try #require(throws: StallWatchdogError.self) { try configuration.validate() }
            #expect("\(error)".contains(words), "\(error)")
        }
        configuration.targets = [.cooperativePool()]
        try configuration.validate()
        let code = try #require(configuration.targets[0].pool)
        #expect(configuration.targets[0].name == "pool" && code.dispatch != nil && code.libc != nil,
                "libdispatch's and the C library's code are found")
        #expect(code.rootQueue == "com.apple.root.default-qos")
        #expect(code.isWorker(name: "oot.default-qos") && !code.isWorker(name: "-qos.overcommit")
                && !code.isWorker(name: "r-initiated-qos") && !code.isWorker(name: "xctest"))
        #expect(StallTarget.cooperativePool(priority: .high).pool?.rootQueue == "com.apple.root.user-initiated-qos")
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
