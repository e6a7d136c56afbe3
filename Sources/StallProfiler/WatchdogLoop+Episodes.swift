import CStallCapture
import StallFormat

/// Presampling (samples taken before a stall is declared) and saturated episodes, on the watchdog thread.
extension WatchdogLoop {
    /// The saturation detector for `configuration`, nil when saturation detection is off. It checks once per
    /// ping period (a quarter of the threshold), or four times per saturation period when that is shorter.
    static func saturationDetector(_ configuration: Configuration, pingPeriodNs: UInt64) -> SaturationDetector? {
        guard let period = configuration.saturationPeriod else { return nil }
        let periodNs = UInt64(period.nanoseconds)
        return SaturationDetector(
            periodNs: periodNs, checkIntervalNs: min(pingPeriodNs, periodNs / 4),
            sampleIntervalNs: UInt64(configuration.sampleInterval.nanoseconds))
    }

    /// When the loop must wake next: for the stall detector, and for saturation checks and samples.
    func nextWakeNs(nowNs: UInt64) -> UInt64 {
        let wake = detector.nextWakeNs(nowNs: nowNs)
        guard let saturation, !detector.isStalled else { return wake }
        return min(wake, saturation.nextWakeNs(nowNs: nowNs))
    }

    /// Takes one presample into the bounded buffer (the oldest goes when it is full). Nothing while a saturated
    /// episode is sampled: its samples already cover the time.
    func presample() {
        guard saturatedSampler == nil, let thread = detector.mainQueueThread else { return }
        if presampler == nil {
            presampler = StallSampler(
                stallID: 0, threadID: mainQueueThreads.threadToSample(latest: thread), configuration: configuration,
                presampling: true)
        }
        guard let presampler, let record = takeSample(presampler, watchAnswers: true) else { return }
        presamples.append(record)
        if presamples.count > detector.presampleCapacity {
            presamples.removeFirst()
            presampler.retractLastSample()  // uncounts the dropped one: the end record counts what was written
        }
    }

    /// Steps the saturation detector (not during a stall) and acts on what it says.
    func stepSaturation() {
        guard saturation != nil, !self.detector.isStalled else { return }
        let thread = self.detector.mainQueueThread
        let tick = tickCPU  // read at this step's start
        // Stepped in place (not copied out and back: that retained and copied its window on every step).
        let actions = saturation!.step(
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
            case .begin(let startNs, let threadID): beginSaturatedEpisode(startNs: startNs, threadID: threadID)
            case .sample:
                guard let saturatedSampler else { break }
                if let record = takeSample(saturatedSampler, watchAnswers: false) {
                    writer.append(.sample(record))
                    shared.samples.add(1, ordering: .relaxed)
                }
            case .end(let endNs): endSaturatedEpisode(endNs: endNs)
            }
        }
    }

    private func beginSaturatedEpisode(startNs: UInt64, threadID: Int32) {
        presampler = nil
        presamples.removeAll()
        let id = detector.takeEpisodeID()
        shared.saturated.add(1, ordering: .relaxed)
        writer.append(.stallBegin(StallBeginRecord(
            stallID: id, startNs: startNs, detectedNs: stallcap_monotonic_ns(), threadID: threadID, kind: .saturated)))
        appendUnknownImages()
        saturatedSampler = StallSampler(
            stallID: id, threadID: threadID, configuration: configuration, signalsOnlyRunnable: true)
    }

    /// Writes the end record of the saturated episode in progress, if any (also when the watchdog stops).
    /// Libraries loaded during the episode are found in /proc/self/maps, not by asking the loader: the episode
    /// ends when a stall begins or the thread sleeps, and then the main thread may hold the loader's lock.
    func endSaturatedEpisode(endNs: UInt64) {
        guard let saturatedSampler else { return }
        writer.append(.stallEnd(saturatedSampler.finish(endNs: endNs)))
        self.saturatedSampler = nil
        appendUnknownImages()
    }

    /// Ends the stall and the saturated episode in progress, if any, at `endNs` (the watchdog is stopping).
    /// Presamples of a stall not declared yet are dropped.
    func endEpisodesAtStop(endNs: UInt64) {
        if let sampler {
            if let threads = blockedProbe.endReading(stallID: sampler.stallID) { writer.append(.threads(threads)) }
            writer.append(.stallEnd(sampler.finish(endNs: endNs)))
            self.sampler = nil
        }
        presampler = nil
        presamples.removeAll()
        endSaturatedEpisode(endNs: endNs)
        stallcap_sample_end()  // no timer of ours stays armed, or exists, after stop()
    }

    /// The process was stopped for `ns` (see ``PauseDetector``): not part of the episodes in progress.
    func creditPause(_ ns: UInt64) {
        guard ns > 0 else { return }
        sampler?.pausedNs += ns
        presampler?.pausedNs += ns
        saturatedSampler?.pausedNs += ns
    }

    /// Sleeps until the main thread leaves its run loop's wait, or for a threshold, instead of one check interval,
    /// when nothing is going on: the main thread slept in its trusted wait since the check before, no ping is
    /// outstanding and no episode is sampled (deep sleep, wddeep.c). False when it did not sleep: the caller sleeps
    /// as usual.
    ///
    /// The wait must be on the run loop's epoll set alone, without a timeout: then the main thread leaves it only
    /// when that set becomes ready (or a signal interrupts it), and the same readiness wakes the watchdog, unless
    /// the main thread drains the set first (a loaded machine: wddeep.c). So the main thread's CPU clock wakes it
    /// too: a timer that expires at the first scheduler tick that finds the main thread running. Both are armed
    /// before the main thread's CPU clock is read again: a thread that left the wait before the arming has a moved
    /// clock, and one that leaves it after makes the armed set ready or runs into the timer.
    ///
    /// A thread that wakes and at once blocks elsewhere (a blocked stall) may run too little for the timer, and its
    /// wake can still be lost: its stall is then seen up to a threshold late.
    func sleepDeeply(sequence: UInt32) -> Bool {
        guard detector.isIdle, sampler == nil, presampler == nil, saturatedSampler == nil,
            let tick = tickCPU, tick.thread == runLoopWait.mainThread, let wait = runLoopWait.trustedWait
        else { return false }
        let fd = withUnsafePointer(to: wait.raw) { stallcap_wait_single_epoll($0) }
        // The set's readiness alone can be lost (the main thread drains it before this thread collects it: wddeep.c),
        // so the main thread's CPU time wakes the sleep too; without that wake there is no deep sleep.
        let armed = fd >= 0 && stallcap_wd_watch(fd) == 0 && stallcap_wd_arm() == 0
            && stallcap_wd_arm_cpu(tick.thread, configuration.signal) == 0
        reportLostDescriptors()
        guard armed else { return false }
        defer { stallcap_wd_disarm_cpu() }
        guard stallcap_thread_cpu_ns(tick.thread) == Int64(tick.ns) else { return false }
        _ = stallcap_wd_deep_sleep(sequence, Int64(detector.thresholdNs))
        return true
    }

    /// Says once which of the deep sleep's descriptors someone else closed (they are left alone from then on).
    func reportLostDescriptors() {
        let lost = stallcap_wd_take_lost()
        if lost & STALLCAP_LOST_DEEP_SET != 0 {
            reportOnce("deep-set", "the watchdog's epoll set and stop pipe were closed by someone else (and perhaps "
                + "reused); they are left alone, and the watchdog checks every interval instead of sleeping deeply")
        }
        if lost & STALLCAP_LOST_WATCHED != 0 {
            reportOnce("deep-watched", "the watchdog's duplicate of the run loop's epoll descriptor was closed by "
                + "someone else (and perhaps reused); it is left alone, and a new duplicate is made")
        }
    }
}
