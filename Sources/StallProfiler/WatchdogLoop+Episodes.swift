import CStallCapture
import StallFormat

/// The episodes, on the watchdog thread: presamples taken before a stall is declared, stalls, and saturated
/// episodes. Each moves a watched target's ``WatchedTarget/episode`` from one ``EpisodeState`` to the next.
extension WatchdogLoop {
    /// Takes one presample into the bounded buffer. Nothing while a saturated episode is sampled: its samples
    /// already cover the time.
    func presample(_ target: WatchedTarget) {
        // The pool's threads are found when its starvation is declared: none is presampled.
        guard target.pool == nil, let thread = target.detector.mainQueueThread else { return }
        let presamples: Presamples
        switch target.episode {
        case .presampling(let current): presamples = current
        case .idle:
            presamples = Presamples(
                sampler: EpisodeSampler(
                    episodeID: 0, threadID: threadToSample(target, latest: thread), timing: target.timing,
                    maxFrames: configuration.maxFrames, presampling: true),
                capacity: target.detector.presampleCapacity)
            target.episode = .presampling(presamples)
        case .stall, .saturated: return
        }
        if let record = takeSample(presamples.sampler, of: target, watchAnswers: true) { presamples.keep(record) }
    }

    /// Declares stall `stallID` of `target`, begun at `startNs`: writes its begin record and its presamples, and
    /// samples it with the presampler when there is one. A saturated episode in progress ends where the stall is
    /// declared.
    /// Counted (``StallWatchdog/stalls``) unless `counted` is false: a starved pool's threads after its first.
    func beginStall(_ target: WatchedTarget, stallID: UInt32, startNs: UInt64, latestThread: Int32, counted: Bool = true) {
        endSaturatedEpisode(target, endNs: stallcap_monotonic_ns())
        target.saturation?.reset()
        if target === main { runLoopWait.stallBegan() } else { target.loopWait?.stallBegan() }
        if counted { shared.stalls.add(1, ordering: .relaxed) }
        let kept = target.episode.presamples
        let threadID = kept?.sampler.threadID ?? threadToSample(target, latest: latestThread)
        let detected = stallcap_monotonic_ns()
        writer.append(.stallBegin(StallBeginRecord(
            stallID: stallID, startNs: startNs, detectedNs: detected, threadID: threadID, target: target.name,
            thresholdNs: target.timing.thresholdNs)))
        // Libraries loaded before the stall go to disk with its presamples (flushed below): one look, that of a
        // saturated episode ended just now included.
        output.unknownImagesDue = true
        output.appendUnknownImagesIfDue()
        // The presamples belong to the stall: they follow its begin record (their times precede detection).
        for var record in kept?.records ?? [] {
            record.stallID = stallID
            writeSample(record)
        }
        if let sampler = kept?.sampler {
            sampler.episodeID = stallID
            sampler.presampling = false
            appendSignalMask(of: sampler)
            target.episode = .stall(sampler)
        } else {
            target.episode = .stall(EpisodeSampler(
                episodeID: stallID, threadID: threadID, timing: target.timing, maxFrames: configuration.maxFrames))
        }
        target.blockedProbe.stallBegan(stallID: stallID, baseline: target.takesSnapshots)
        // The stall is on disk as soon as it is detected, not only with its first sample (which may wait for a
        // slow signal delivery): a process killed now still shows it.
        output.flush()
    }

    /// Takes a sample of the stall in progress; when its thread waits (a repeated sample), finds on what, once per
    /// stall, and takes the snapshots of every thread.
    func sampleStall(_ target: WatchedTarget) {
        guard let sampler = target.episode.stall, let record = takeSample(sampler, of: target, watchAnswers: true)
        else { return }
        writeSample(record)
        let blockedProbe = target.blockedProbe
        if target.takesSnapshots { blockedProbe.takeBaselineIfDue() }
        // No CPU progress since the previous sample: the thread waits. Find on what, once per stall.
        guard record.flags.contains(.repeated) else { return }
        if let blocked = blockedProbe.probeOnce(stallID: sampler.episodeID, threadID: sampler.threadID) {
            writer.append(.blockedOn(blocked))
        }
        // Every thread in view: when the wait is found, then each second it lasts.
        guard target.takesSnapshots else { return }
        for threads in blockedProbe.snapshotIfDue(stallID: sampler.episodeID) { writer.append(.threads(threads)) }
    }

    /// Ends whatever episode is in progress at `endNs`, writing its end record; presamples of a stall never
    /// declared are dropped. Libraries loaded during a saturated episode are found in /proc/self/maps, not by
    /// asking the loader: that episode ends when a stall begins or the thread sleeps, and then the main thread may
    /// hold the loader's lock.
    func endEpisode(_ target: WatchedTarget, endNs: UInt64) {
        let ended = target.episode
        target.episode = .idle
        switch ended {
        case .idle, .presampling: break
        case .stall(let sampler):
            // Before the probe's last reading, which may sample another thread (that would cancel the request).
            if let record = lastSample(of: sampler, endNs: endNs) { writeSample(record) }
            if let threads = target.blockedProbe.endReading(stallID: sampler.episodeID) {
                writer.append(.threads(threads))
            }
            writeEnd(sampler.finish(endNs: endNs), timing: target.timing)
        case .saturated(let sampler):
            if let record = lastSample(of: sampler, endNs: endNs) { writeSample(record) }
            writeEnd(sampler.finish(endNs: endNs), timing: target.timing)
            output.unknownImagesDue = true
        }
    }

    /// The answer to the pipelined request `sampler` left outstanding when its episode ends at `endNs`, as the
    /// episode's last sample: nil when none came (the request is cancelled, not counted missed), or when it was
    /// taken after the end (a stall's end is when the main queue answered: like ``takeSample(_:watchAnswers:)``,
    /// such a sample does not belong to it).
    private func lastSample(of sampler: EpisodeSampler, endNs: UInt64) -> SampleRecord? {
        let requestedNs = stallcap_monotonic_ns()
        let record = sampler.collectOutstanding()
        rates.requested(
            threadID: sampler.threadID, requestedNs: sampler.collectedRequestNs ?? requestedNs,
            endedNs: stallcap_monotonic_ns(), record: record)
        guard let record, record.timestampNs <= endNs else {
            if record != nil { sampler.retractLastSample() }
            return nil
        }
        return record
    }

    /// Writes a sample of the episode in progress, counting it.
    private func writeSample(_ record: SampleRecord) {
        writer.append(.sample(record))
        shared.samples.add(1, ordering: .relaxed)
        rates.wrote(record)
    }

    /// Writes an episode's end record with the rate its samples came at (asked at `timing`'s interval).
    private func writeEnd(_ end: StallEndRecord, timing: WatchdogTiming) {
        var end = end
        end.sampleRate = rates.rate(of: end, askedIntervalNs: timing.sampleIntervalNs)
        writer.append(.stallEnd(end))
    }

    /// Ends `target`'s saturated episode in progress, if any, at `endNs`.
    func endSaturatedEpisode(_ target: WatchedTarget, endNs: UInt64) {
        if case .saturated = target.episode { endEpisode(target, endNs: endNs) }
    }

    /// Ends every target's episode in progress, if any, at `endNs`: the watchdog is stopping.
    func endEpisodesAtStop(endNs: UInt64) {
        endEpisode(main, endNs: endNs)
        for target in others {
            endEpisode(target, endNs: endNs)
            endStarvation(target, endNs: endNs)
        }
        stallcap_sample_end()  // no timer of ours stays armed, or exists, after stop()
    }

    /// The process was stopped for `ns` (see ``PauseDetector``): not part of any episode in progress.
    func creditPause(_ ns: UInt64) {
        guard ns > 0 else { return }
        main.episode.sampler?.pausedNs += ns
        for target in others {
            target.episode.sampler?.pausedNs += ns
            for member in target.members { member.episode.sampler?.pausedNs += ns }
        }
    }

    /// Steps `target`'s saturation detector (not during a stall) and acts on what it says.
    func stepSaturation(_ target: WatchedTarget) {
        guard target.saturation != nil, !target.detector.isStalled else { return }
        // A main queue that read idle at the latest check is serviced by no thread: the last answerer, a pool
        // worker, may run other queues' work meanwhile, which is not the main queue's saturation. (A saturated
        // queue never reads idle: its checks are pings.)
        let thread = target === main && dispatchIdle.lastWasQuiet ? nil : target.detector.mainQueueThread
        let tick = target.tickCPU  // read at this step's start
        // Stepped in place (not copied out and back: that retained and copied its window on every step).
        let actions = target.saturation!.step(
            nowNs: stallcap_monotonic_ns(), threadID: thread,
            cpu: {
                guard let thread else { return nil }
                if let tick, tick.thread == thread { return tick.ns }
                let cpu = stallcap_thread_cpu_ns(thread)
                return cpu >= 0 ? UInt64(cpu) : nil
            },
            detail: {
                guard let thread else { return nil }
                var run: UInt64 = 0, wait: UInt64 = 0, voluntary: UInt64 = 0, involuntary: UInt64 = 0
                guard stallcap_thread_schedstat(thread, &run, &wait) == 0,
                    stallcap_thread_switches(thread, &voluntary, &involuntary) == 0
                else { return nil }
                return SaturationDetector.Detail(
                    waitNs: wait, voluntarySwitches: voluntary, isRunnable: MainQueueThreads.isRunnable(thread))
            })
        for action in actions {
            switch action {
            case .begin(let startNs, let threadID):
                beginSaturatedEpisode(target, startNs: startNs, threadID: threadID)
            case .sample:
                guard let sampler = target.episode.saturated else { break }
                if let record = takeSample(sampler, of: target, watchAnswers: false) { writeSample(record) }
            case .end(let endNs): endSaturatedEpisode(target, endNs: endNs)
            }
        }
    }

    /// Begins a saturated episode of `target` at `startNs` on `threadID`, dropping the presamples of a ping not
    /// yet late enough for a stall.
    private func beginSaturatedEpisode(_ target: WatchedTarget, startNs: UInt64, threadID: Int32) {
        target.episode = .idle
        let id = target.detector.takeEpisodeID()
        shared.saturated.add(1, ordering: .relaxed)
        writer.append(.stallBegin(StallBeginRecord(
            stallID: id, startNs: startNs, detectedNs: stallcap_monotonic_ns(), threadID: threadID, kind: .saturated,
            target: target.name, thresholdNs: target.timing.thresholdNs)))
        output.unknownImagesDue = true
        target.episode = .saturated(EpisodeSampler(
            episodeID: id, threadID: threadID, timing: target.timing, maxFrames: configuration.maxFrames,
            signalsOnlyRunnable: true))
    }
}
