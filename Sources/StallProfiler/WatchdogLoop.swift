import CStallCapture
import Dispatch
import StallFormat
#if canImport(Glibc)
import Glibc
#endif

/// The body of the watchdog thread: steps each watched target's ``StallDetector`` (the main queue's, and those of
/// the ``StallTarget``s: WatchdogLoop+Targets.swift), sends pings, drives the episodes (``EpisodeState``,
/// WatchdogLoop+Episodes.swift) and writes through its ``CaptureOutput``. Everything here runs on that one thread.
final class WatchdogLoop {
    let configuration: Configuration
    /// The configuration's durations, resolved once.
    let timing: WatchdogTiming
    /// The capture file, its images and flushes, and the problems told to the developer.
    let output: CaptureOutput
    let shared: WatchdogShared
    /// The main queue.
    let main: WatchedTarget
    /// The other targets watched (``StallTarget``), in the order they were added.
    var others: [WatchedTarget] = []
    /// The episode numbers every target's detector takes.
    let episodeIDs = EpisodeIDs()
    /// Answers due pings without waking a main thread that sleeps in its run loop (RunLoopWait.swift).
    var runLoopWait = RunLoopWait(mainThread: getpid())
    /// Answers due pings without posting them when libdispatch's main queue is idle under `dispatchMain()`.
    var dispatchIdle = DispatchQueueIdle(layoutKnown: stallcap_main_queue_layout() == 1)
    /// True when this step answered quietly with the main thread still in its wait since the check before.
    var stillThisStep = false
    /// True when this step's check was answered by libdispatch's main queue reading idle (DispatchQueueIdle).
    var queueQuietThisStep = false
    /// What the deep sleep left armed after a sleep that nothing ended (the next deep sleep may then rest on it:
    /// WatchdogLoop+DeepSleep), nil when nothing is.
    var deepArmed: DeepArming? = nil
    /// The process's and this thread's CPU clocks at the last look, to tell an idle process (DispatchQueueIdle).
    var lastProcessCPU: (process: UInt64, own: UInt64)? = nil
    /// libdispatch's event set once found (-1 until then), when it was last looked for and how many looks found
    /// none (``watchDispatchEvents()``).
    var dispatchEvents: (fd: Int32, lookedNs: UInt64?, misses: Int) = (-1, nil, 0)
    /// True when that set woke the last deep sleep on the queue: the next sleep is one check interval.
    var dispatchEventsWoke = false
    /// When that set last woke a deep sleep (nil: never): it is watched again only half a threshold later.
    var dispatchEventsWokeNs: UInt64? = nil
    /// True when this process has no AIO: libdispatch's set is never watched (nor looked for) again.
    var dispatchEventsUnwatchable = false
    /// The rate each episode is sampled at, and the tick that may hold it back.
    let rates = SampleRateMeter()

    typealias Configuration = StallWatchdog.Configuration

    /// The capture's writer.
    var writer: CaptureWriter { output.writer }

    init(configuration: Configuration, writer: CaptureWriter, shared: WatchdogShared) {
        let timing = WatchdogTiming(configuration)
        self.configuration = configuration
        self.timing = timing
        output = CaptureOutput(writer: writer, shared: shared)
        self.shared = shared
        main = WatchedTarget(
            name: StallBeginRecord.mainTarget, timing: timing, maxFrames: configuration.maxFrames,
            answers: shared.main, episodeIDs: episodeIDs, post: configuration.post)
        for target in configuration.targets { add(target) }
    }

    /// The main queue's detector.
    var detector: StallDetector {
        get { main.detector }
        _modify { yield &main.detector }
    }

    /// The main queue's episode.
    var episode: EpisodeState {
        get { main.episode }
        set { main.episode = newValue }
    }

    /// Starts the thread; the thread keeps the loop alive until it ends.
    func startThread() throws -> pthread_t {
        let context = Unmanaged.passRetained(self).toOpaque()
        var handle = pthread_t()
        let result = pthread_create(&handle, nil, { context in
            let loop = Unmanaged<WatchdogLoop>.fromOpaque(context!).takeRetainedValue()
            // The sampling signal is deliberately not blocked here: threads this one causes to be created (the
            // Dispatch workers that drain the main queue after `dispatchMain()`) inherit its signal mask.
            stallcap_name_thread("stallprof-wd")
            loop.run()
            return nil
        }, context)
        guard result == 0 else {
            Unmanaged<WatchdogLoop>.fromOpaque(context).release()
            throw StallWatchdogError.system("cannot start the watchdog thread: \(String(cString: strerror(result)))")
        }
        return handle
    }

    private func run() {
        // The capture starts where markers start counting (`StallWatchdog.start`, before this thread ran), so no
        // marker the app makes right after `start()` returns lies before the capture's origin.
        let now = stallcap_monotonic_ns(), wall = stallcap_realtime_ns()
        let start = min(now, MarkerRing.shared.startedAtNs == 0 ? now : MarkerRing.shared.startedAtNs)
        writer.append(.process(ProcessRecord(
            pid: getpid(), startMonotonicNs: start, startWallNs: wall &- min(wall, now - start),
            thresholdNs: timing.thresholdNs, sampleIntervalNs: timing.sampleIntervalNs,
            executable: (try? String(contentsOfSymlink: "/proc/self/exe")) ?? CommandLine.arguments.first ?? "")))
        writer.onReopen = { [unowned self] reason in
            let kind = switch reason { case .descriptorTaken: "taken"; case .deleted: "deleted"; case .replaced: "replaced" }
            output.reportOnce("capture-" + kind, "\(writer.path): \(reason)")
        }
        output.appendImagesIfChanged(force: true)
        if let vdso = VDSOImage.current() { writer.append(.imageContents(vdso)) }
        output.flush()
        var pauses = PauseDetector(threadID: stallcap_gettid(), timing: timing)
        var sequence = stallcap_wd_sequence()
        var actions: [StallDetector.Action] = []
        actions.reserveCapacity(8)
        // True when the previous step ended with a ping outstanding or an episode in progress: then the time since
        // is judged for a pause (the process stopped), which neither an episode nor an outstanding ping must count.
        var watching = false
        while !shared.stopRequested.load(ordering: .acquiring) {
            var paused = pauses.step(watching: watching)
            creditPause(paused)
            takeTargetChanges()
            main.readTickCPU()
            // The main thread ran since the timer was armed: its expiry may be queued, and this step may post.
            if case .runLoop(let thread, let ns) = deepArmed, main.tickCPU.map({ $0 != (thread, ns) }) ?? true {
                releaseDeepSleep()
            }
            // An event loop's thread ran since the deep sleep armed: every target is checked at once.
            if deepArmed != nil, !othersStill() {
                releaseDeepSleep()
                othersStirred(setReady: false)
            }
            let now = stallcap_monotonic_ns()
            let answer = main.takeAnswer()
            if let answer {
                runLoopWait.answered(pingID: answer.pingID, by: answer.threadID, atNs: answer.atNs)
                let owner = shared.main.answeredOwner.load(ordering: .relaxed)
                dispatchIdle.answered(
                    by: answer.threadID, owner: owner >= 0 ? owner : nil, mainThread: runLoopWait.mainThread)
            }
            if !others.isEmpty { alignVerifications() }
            step(main, nowNs: now, answer: answer, pausedNs: paused, actions: &actions)
            stepOthers(pausedNs: paused, actions: &actions)
            paused = 0
            output.appendUnknownImagesIfDue()  // after this step's samples
            output.drainMarkers(sinceNs: MarkerRing.shared.startedAtNs)
            output.flush()
            watching = anyTarget { !$0.episode.isIdle || !$0.detector.isIdle }
            if watching { pauses.markIfUnmarked() }
            if sleepDeeply(sequence: sequence) {
                pauses.willSleep(0)
            } else {
                // After the deep sleep's look: a main thread seen leaving its wait there makes a check due at once.
                let wake = nextWakeNs(nowNs: stallcap_monotonic_ns())
                let now2 = stallcap_monotonic_ns()
                pauses.willSleep(wake > now2 ? wake - now2 : 0)
                if wake > now2 { stallcap_wd_sleep(sequence, Int64(wake - now2)) }
            }
            stillThisStep = false
            queueQuietThisStep = false
            sequence = stallcap_wd_sequence()
        }
        releaseDeepSleep()
        // Stopped during an episode: close it where the watchdog stopped, so it is not read as unfinished.
        endEpisodesAtStop(endNs: stallcap_monotonic_ns())
        output.appendUnknownImagesIfDue()
        MarkerRing.shared.stop()
        output.drainMarkers(sinceNs: MarkerRing.shared.startedAtNs)
        writer.append(.close(timestampNs: stallcap_monotonic_ns()))
        output.flush(force: true)
        try? writer.close()
        stallcap_track_capture(-1, 0, 0)
    }

    /// The thread to sample for an episode of `target` that begins now: for the main queue or a serial queue, its
    /// drain-lock owner when libdispatch's queue can be read (DispatchQueueIdle, ``WatchedTarget/drainingThread()``);
    /// else the best guess among the threads that
    /// answered pings (MainQueueThreads; `latest` answered last).
    func threadToSample(_ target: WatchedTarget, latest: Int32) -> Int32 {
        if target === main, let owner = dispatchIdle.drainingThread(), stallcap_thread_cpu_ns(owner) >= 0 {
            return owner
        }
        if let owner = target.drainingThread() { return owner }
        return target.threads.threadToSample(latest: latest)
    }

    /// When the loop must wake next: for every target's stall detector, and for saturation checks and samples.
    func nextWakeNs(nowNs: UInt64) -> UInt64 {
        func wake(_ target: WatchedTarget) -> UInt64 {
            let wake = target.detector.nextWakeNs(nowNs: nowNs)
            guard let saturation = target.saturation, !target.detector.isStalled else { return wake }
            return min(wake, saturation.nextWakeNs(nowNs: nowNs))
        }
        return others.reduce(wake(main)) { min($0, wake($1)) }
    }

    /// Does what `target`'s detector asked.
    func perform(_ action: StallDetector.Action, _ target: WatchedTarget) {
        switch action {
        case .sendPing(let id) where target !== main:
            // Another target: its thread asleep still in its loop's wait answers; else a ping.
            if target.answersQuietly(pingID: id) { return }
            target.detector.pingIsRoutine()
            releaseDeepSleep()  // the app's closure never runs with the capture signal blocked
            target.sendPing(id)
        case .sendPing(let id):
            let thread = detector.mainQueueThread
            if let thread, runLoopWait.answersQuietly(
                pingID: id, nowNs: stallcap_monotonic_ns(), thread: thread,
                cpuNs: main.tickCPU.flatMap { $0.thread == thread ? $0.ns : nil },
                includesMainQueue: { state in
                    withUnsafePointer(to: state.raw) { stallcap_wait_includes_fd($0, stallcap_main_queue_fd()) == 1 }
                },
                read: { SyscallState(thread: thread) })
            {
                main.quietAnswer = .init(pingID: id, atNs: stallcap_monotonic_ns(), threadID: thread)
                stillThisStep = runLoopWait.isStill
                return
            }
            // Not the process's first thread (dispatchMain(), async @main): the queue's own state, or a ping.
            if let thread, thread != runLoopWait.mainThread, dispatchIdle.answersQuietly(DispatchQueueIdle.read()) {
                main.quietAnswer = .init(pingID: id, atNs: stallcap_monotonic_ns(), threadID: thread)
                queueQuietThisStep = true
                return
            }
            if thread != runLoopWait.mainThread { detector.pingIsRoutine() }
            releaseDeepSleep()
            let answers = shared.main
            main.post { answers.answer(ping: id) }
        case .beginStall(let stallID, let startNs, let latestThread):
            if let code = target.pool {
                beginStarvation(target, code: code, stallID: stallID, startNs: startNs, latestThread: latestThread)
            } else {
                beginStall(target, stallID: stallID, startNs: startNs, latestThread: latestThread)
            }
        case .sample:
            if target.pool != nil { sampleStarvation(target) } else { sampleStall(target) }
        case .presample:
            presample(target)
        case .discardPresamples:
            if case .presampling = target.episode { target.episode = .idle }
        case .endStall(_, let endNs):
            if case .stall = target.episode { endEpisode(target, endNs: endNs) }
            endStarvation(target, endNs: endNs)
            target.saturation?.reset()
            output.appendImagesIfChanged(force: false)
        case .noRunLoop:
            break  // Nothing services the watched queue yet: there is no thread to sample and no stall to report.
        }
    }

    /// Takes one sample of `target`'s episode with `sampler`, counting misses and warning once when the handler
    /// was lost. With `watchAnswers`, a sample taken after the target answered (the stall had ended) is dropped.
    func takeSample(_ sampler: EpisodeSampler, of target: WatchedTarget, watchAnswers: Bool) -> SampleRecord? {
        let before = sampler.missedCount
        // With another target's episode sampled too, requests are not pipelined and the slot is shared.
        sampler.pipelining(alone: others.isEmpty || !anyTarget { $0 !== target && !$0.episode.isIdle })
        let answers = target.answers
        let answeredBefore = answers.answeredPing.load(ordering: .acquiring)
        let requestedNs = stallcap_monotonic_ns()
        var result = sampler.sample()
        let endedNs = stallcap_monotonic_ns()
        // A pipelined answer was requested by an earlier call: the tick meter gets that request's time.
        rates.requested(
            threadID: sampler.threadID, requestedNs: sampler.collectedRequestNs ?? requestedNs, endedNs: endedNs,
            record: result)
        if sampler === target.episode.saturated {
            target.saturation?.sampleEnded(atNs: endedNs)
        } else {
            target.detector.sampleEnded(atNs: endedNs)
        }
        if let record = result, watchAnswers {
            // The target may have answered while the sample was taken, or since this step looked: a sample from
            // after the stall's end does not belong to it.
            let answered = answers.answeredPing.load(ordering: .acquiring)
            let ended = answered != answeredBefore || target.outstandingPingID.map { answered >= $0 } == true
            if ended && answers.answeredAt.load(ordering: .relaxed) < record.timestampNs {
                sampler.retractLastSample()
                result = nil
            }
        }
        // A serial queue's thread is sampled only while it holds the queue's drain lock: a queue waiting for a
        // worker runs on no thread, and a worker that let go of it runs other queues' work.
        if result != nil, let owner = target.drainLockOwner(), owner != sampler.threadID {
            sampler.retractLastSample()
            result = nil
        }
        shared.missed.add(sampler.missedCount - before, ordering: .relaxed)
        appendSignalMask(of: sampler)
        if sampler.handlerLost {
            output.reportOnce("handler-lost", "the app replaced or reset the handler of signal \(configuration.signal); "
                + "stalls are detected but no longer sampled")
        }
        return result
    }

    /// Writes the sampled thread's blocked-signal mask, once per episode, once the sampler has read it (a request
    /// counted against the thread) and the episode is declared.
    func appendSignalMask(of sampler: EpisodeSampler) {
        if let record = sampler.takeSignalMask(signal: configuration.signal) { writer.append(.signalMask(record)) }
    }
}

extension String {
    /// The target of a symbolic link.
    init(contentsOfSymlink path: String) throws {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink(path, &buffer, buffer.count - 1)
        guard length > 0 else { throw StallWatchdogError.system("readlink \(path) failed") }
        self = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
