import CStallCapture
import Dispatch
import StallFormat
#if canImport(Glibc)
import Glibc
#endif

/// The body of the watchdog thread: steps the ``StallDetector``, sends pings, drives the ``StallSampler`` and
/// flushes the capture file. Everything here runs on that one thread. Presampling and saturated episodes are in
/// WatchdogLoop+Episodes.swift.
final class WatchdogLoop {
    let configuration: Configuration
    let writer: CaptureWriter
    let shared: WatchdogShared
    var detector: StallDetector
    var sampler: StallSampler? = nil
    var mainQueueThreads = MainQueueThreads()
    /// Answers due pings without waking a main thread that sleeps in its run loop (RunLoopWait.swift).
    var runLoopWait = RunLoopWait(mainThread: getpid())
    /// An answer found that way, for the detector's next step.
    private var quietAnswer: StallDetector.Answer? = nil
    /// True when this step answered quietly with the main thread still in its wait since the check before.
    var stillThisStep = false
    /// The CPU clock of the thread servicing the main queue, read once at the start of this step (nil when it
    /// is unknown or gone): the quiet check and the saturation check share it.
    var tickCPU: (thread: Int32, ns: UInt64)? = nil
    /// Finds what a blocked stall's thread waits for, once per stall.
    let blockedProbe: BlockedOnProbe
    /// Samples taken before the stall was declared, and the sampler taking them.
    var presampler: StallSampler? = nil
    var presamples: [SampleRecord] = []
    /// Saturation detection (nil when off) and the sampler of the saturated episode in progress.
    var saturation: SaturationDetector?
    var saturatedSampler: StallSampler? = nil
    var imageGeneration: UInt64 = 0
    /// Paths of the images written so far.
    var knownImagePaths = Set<String>()
    private var writeFailedAtNs: UInt64? = nil
    private var reportedWriteFailure = false
    private var reportedResume = false
    private var warnedHandlerLost = false
    /// Kinds of problems already told (``reportOnce(_:_:)``).
    private var reportedKinds = Set<String>()
    /// The capture descriptor a forked child would close (stallcap_track_capture).
    private var trackedCapture: Int32? = nil

    typealias Configuration = StallWatchdog.Configuration

    init(configuration: Configuration, writer: CaptureWriter, shared: WatchdogShared) {
        self.configuration = configuration
        self.writer = writer
        self.shared = shared
        blockedProbe = BlockedOnProbe(configuration: configuration)  // checks the glibc mutex layout, once
        detector = StallDetector(
            thresholdNs: UInt64(configuration.threshold.nanoseconds),
            sampleIntervalNs: UInt64(configuration.sampleInterval.nanoseconds))
        saturation = Self.saturationDetector(configuration, pingPeriodNs: detector.pingPeriodNs)
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
            thresholdNs: UInt64(configuration.threshold.nanoseconds),
            sampleIntervalNs: UInt64(configuration.sampleInterval.nanoseconds),
            executable: (try? String(contentsOfSymlink: "/proc/self/exe")) ?? CommandLine.arguments.first ?? "")))
        writer.onReopen = { [unowned self] reason in
            let kind = switch reason { case .descriptorTaken: "taken"; case .deleted: "deleted"; case .replaced: "replaced" }
            reportOnce("capture-" + kind, "\(writer.path): \(reason)")
        }
        appendImagesIfChanged(force: true)
        if let vdso = VDSOImage.current() { writer.append(.imageContents(vdso)) }
        flush()
        var lastSeenPing: UInt64 = 0
        var pauses = PauseDetector(
            threadID: stallcap_gettid(), sampleTimeoutNs: configuration.effectiveSampleTimeoutNs,
            ownerSampleTimeoutNs: configuration.ownerSampleTimeoutNs)
        var sequence = stallcap_wd_sequence()
        var actions: [StallDetector.Action] = []
        actions.reserveCapacity(8)
        // True when the previous step ended with a ping outstanding or an episode in progress: then the time since
        // is judged for a pause (the process stopped), which neither an episode nor an outstanding ping must count.
        var watching = false
        while !shared.stopRequested.load(ordering: .acquiring) {
            var paused = pauses.step(watching: watching)
            creditPause(paused)
            tickCPU = detector.mainQueueThread.flatMap { thread in
                let cpu = stallcap_thread_cpu_ns(thread)
                return cpu >= 0 ? (thread, UInt64(cpu)) : nil
            }
            let now = stallcap_monotonic_ns()
            var answer: StallDetector.Answer? = nil
            let answered = shared.answeredPing.load(ordering: .acquiring)
            if answered != lastSeenPing {
                lastSeenPing = answered
                let thread = shared.answeredThread.load(ordering: .relaxed)
                mainQueueThreads.answered(by: thread, cpuNs: shared.answeredCPU.load(ordering: .relaxed))
                let atNs = shared.answeredAt.load(ordering: .relaxed)
                runLoopWait.answered(pingID: answered, by: thread, atNs: atNs)
                answer = .init(pingID: answered, atNs: atNs, threadID: thread)
            }
            // A ping answered quietly is taken at once (a second step at the same time), so the loop sleeps a
            // whole check interval, not half of one (the presampling wake of an outstanding ping).
            repeat {
                actions.removeAll(keepingCapacity: true)
                detector.step(nowNs: now, answer: answer, pausedNs: paused, into: &actions)
                paused = 0
                for action in actions { perform(action) }
                answer = quietAnswer
                quietAnswer = nil
            } while answer != nil
            stepSaturation()
            drainMarkers(sinceNs: MarkerRing.shared.startedAtNs)
            flush()
            watching = sampler != nil || saturatedSampler != nil || presampler != nil || !detector.isIdle
            if watching { pauses.markIfUnmarked() }
            let wake = nextWakeNs(nowNs: stallcap_monotonic_ns())
            let now2 = stallcap_monotonic_ns()
            if stillThisStep, sleepDeeply(sequence: sequence) {
                pauses.willSleep(0)
            } else {
                pauses.willSleep(wake > now2 ? wake - now2 : 0)
                if wake > now2 { stallcap_wd_sleep(sequence, Int64(wake - now2)) }
            }
            stillThisStep = false
            sequence = stallcap_wd_sequence()
        }
        // Stopped during an episode: close it where the watchdog stopped, so it is not read as unfinished.
        endEpisodesAtStop(endNs: stallcap_monotonic_ns())
        MarkerRing.shared.stop()
        drainMarkers(sinceNs: MarkerRing.shared.startedAtNs)
        writer.append(.close(timestampNs: stallcap_monotonic_ns()))
        flush(force: true)
        try? writer.close()
        stallcap_track_capture(-1, 0, 0)
    }

    func perform(_ action: StallDetector.Action) {
        switch action {
        case .sendPing(let id):
            let thread = detector.mainQueueThread
            if let thread, runLoopWait.answersQuietly(
                pingID: id, nowNs: stallcap_monotonic_ns(), thread: thread, cpuNs: tickCPU.flatMap { $0.thread == thread ? $0.ns : nil },
                includesMainQueue: { state in
                    withUnsafePointer(to: state.raw) { stallcap_wait_includes_fd($0, stallcap_main_queue_fd()) == 1 }
                },
                read: { SyscallState(thread: thread) })
            {
                quietAnswer = .init(pingID: id, atNs: stallcap_monotonic_ns(), threadID: thread)
                stillThisStep = runLoopWait.isStill
                return
            }
            // Not the process's first thread (dispatchMain(), async @main): a ping is the only way to know.
            if thread != runLoopWait.mainThread { detector.pingIsRoutine() }
            let shared = self.shared
            configuration.post { shared.answer(ping: id) }
        case .beginStall(let stallID, let startNs, let latestThread):
            // A saturated episode in progress ends where the stall is declared.
            endSaturatedEpisode(endNs: stallcap_monotonic_ns())
            saturation?.reset()
            runLoopWait.stallBegan()
            shared.stalls.add(1, ordering: .relaxed)
            let kept = presampler
            let threadID = kept?.threadID ?? mainQueueThreads.threadToSample(latest: latestThread)
            let detected = stallcap_monotonic_ns()
            writer.append(.stallBegin(StallBeginRecord(
                stallID: stallID, startNs: startNs, detectedNs: detected, threadID: threadID)))
            appendUnknownImages()
            // The presamples belong to the stall: they follow its begin record (their times precede detection).
            for var record in presamples {
                record.stallID = stallID
                writer.append(.sample(record))
                shared.samples.add(1, ordering: .relaxed)
            }
            kept?.stallID = stallID
            kept?.presampling = false
            if let kept { appendSignalMask(of: kept) }
            sampler = kept ?? StallSampler(stallID: stallID, threadID: threadID, configuration: configuration)
            blockedProbe.stallBegan(stallID: stallID)
            presampler = nil
            presamples.removeAll()
            // The stall is on disk as soon as it is detected, not only with its first sample (which may wait
            // for a slow signal delivery): a process killed now still shows it.
            flush()
        case .sample:
            sampleStall()
        case .presample:
            presample()
        case .discardPresamples:
            presampler = nil
            presamples.removeAll()
        case .endStall(_, let endNs):
            if let sampler {
                if let threads = blockedProbe.endReading(stallID: sampler.stallID) { writer.append(.threads(threads)) }
                writer.append(.stallEnd(sampler.finish(endNs: endNs)))
            }
            sampler = nil
            saturation?.reset()
            appendImagesIfChanged(force: false)
        case .noRunLoop:
            break  // Nothing services the watched queue yet: there is no thread to sample and no stall to report.
        }
    }

    /// Takes one sample with `sampler`, counting misses and warning once when the handler was lost. With
    /// `watchAnswers`, a sample taken after the main queue answered (the stall had ended) is dropped.
    func takeSample(_ sampler: StallSampler, watchAnswers: Bool) -> SampleRecord? {
        let before = sampler.missedCount
        let answeredBefore = shared.answeredPing.load(ordering: .acquiring)
        var result = sampler.sample()
        if let record = result, watchAnswers {
            // The main queue may have answered while the sample was taken, or since this step looked: a sample
            // from after the stall's end does not belong to it.
            let answered = shared.answeredPing.load(ordering: .acquiring)
            let ended = answered != answeredBefore || detector.outstandingPingID.map { answered >= $0 } == true
            if ended && shared.answeredAt.load(ordering: .relaxed) < record.timestampNs {
                sampler.retractLastSample()
                result = nil
            }
        }
        shared.missed.add(sampler.missedCount - before, ordering: .relaxed)
        appendSignalMask(of: sampler)
        if sampler.handlerLost && !warnedHandlerLost {
            warnedHandlerLost = true
            report("the app replaced or reset the handler of signal \(configuration.signal); stalls are detected but no longer sampled")
        }
        return result
    }

    /// Writes the sampled thread's blocked-signal mask, once per episode, once the sampler has read it (a request
    /// counted against the thread) and the episode is declared.
    func appendSignalMask(of sampler: StallSampler) {
        if let record = sampler.takeSignalMask(signal: configuration.signal) { writer.append(.signalMask(record)) }
    }

    /// Writes what is pending. After a failure (disk full, file size limit) the app keeps running: the writer
    /// keeps at most its pending limit (then drops and counts samples), and writing is tried again once a second
    /// (`force`: now, as when stopping).
    func flush(force: Bool = false) {
        guard writer.pendingByteCount > 0 else { return }
        let now = stallcap_monotonic_ns()
        if let failedAt = writeFailedAtNs, !force, now &- failedAt < 1_000_000_000 { return }
        do {
            try writer.flush()
            if writeFailedAtNs != nil, !reportedResume {
                reportedResume = true
                report("the capture file accepts writes again; \(writer.droppedSampleCount) samples were dropped")
            }
            writeFailedAtNs = nil
        } catch {
            if writeFailedAtNs == nil && !reportedWriteFailure {
                reportedWriteFailure = true
                report("\(error); samples are kept in memory (up to 4 MiB), then dropped and counted, until it can be written again")
            }
            writeFailedAtNs = now
        }
        shared.dropped.store(Int(writer.droppedSampleCount), ordering: .relaxed)
        let file = writer.openFile
        if file?.descriptor != trackedCapture {
            trackedCapture = file?.descriptor
            stallcap_track_capture(file?.descriptor ?? -1, file?.identity.device ?? 0, file?.identity.inode ?? 0)
        }
    }

    /// Tells the developer about a problem of kind `kind` the first time only.
    func reportOnce(_ kind: String, _ message: String) {
        guard reportedKinds.insert(kind).inserted else { return }
        report(message)
    }

    /// Tells the developer about a problem, once per kind, on standard error: the host app keeps running.
    func report(_ message: String) {
        let line = "stallprof: \(message)\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
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
