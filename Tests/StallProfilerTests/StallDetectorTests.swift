import Testing

@testable import StallProfiler

/// The detector is a pure state machine: these tests feed it made-up times.
@Suite struct StallDetectorTests {
    let ms: UInt64 = 1_000_000

    func detector() -> StallDetector { StallDetector(thresholdNs: 250 * ms, sampleIntervalNs: 10 * ms) }

    /// Runs the detector in 1 ms steps, answering each ping `delay(pingID)` after it was sent (nil: never), on
    /// thread 7. Returns every action with its time.
    func simulate(
        _ detector: inout StallDetector, until end: UInt64, delay: (UInt64) -> UInt64?
    ) -> [(UInt64, StallDetector.Action)] {
        var log: [(UInt64, StallDetector.Action)] = []
        var pending: [(id: UInt64, at: UInt64)] = []
        var now: UInt64 = 0
        while now <= end {
            var answer: StallDetector.Answer? = nil
            if let first = pending.first, first.at <= now {
                answer = .init(pingID: first.id, atNs: first.at, threadID: 7)
                pending.removeFirst()
            }
            for action in detector.step(nowNs: now, answer: answer) {
                log.append((now, action))
                if case .sendPing(let id) = action, let d = delay(id) { pending.append((id, now + d)) }
            }
            now += ms
        }
        return log
    }

    @Test func pingsAtAQuarterOfTheThresholdWhileTheMainQueueAnswers() {
        var d = detector()
        let log = simulate(&d, until: 1000 * ms) { _ in 1 * ms }
        let pings = log.filter { if case .sendPing = $0.1 { return true } else { return false } }
        #expect(pings.count == 16)  // every 62.5 ms, rounded up to the 1 ms step: 0, 63, 126, ...
        #expect(!log.contains { if case .beginStall = $0.1 { return true } else { return false } })
        #expect(d.mainQueueThread == 7)
    }

    @Test func aStallBeginsAtItsPingAndIsSampledUntilTheAnswer() {
        var d = detector()
        // Ping 3 is answered only after 600 ms: a stall from its send time to its answer.
        let log = simulate(&d, until: 1500 * ms) { id in id == 3 ? 600 * ms : 1 * ms }
        let begins = log.compactMap { entry -> (UInt64, UInt64, Int32)? in
            if case .beginStall(_, let start, let thread) = entry.1 { return (entry.0, start, thread) }
            return nil
        }
        #expect(begins.count == 1)
        let (detectedAt, start, thread) = begins[0]
        #expect(thread == 7)
        #expect(detectedAt == start + 250 * ms)
        let ends = log.compactMap { entry -> UInt64? in
            if case .endStall(_, let endNs) = entry.1 { return endNs }
            return nil
        }
        #expect(ends == [start + 600 * ms])
        let samples = log.filter { if case .sample = $0.1 { return true } else { return false } }
        // From detection (start + 250 ms) to the answer (start + 600 ms) every 10 ms: 35 or 36 samples.
        #expect((35...36).contains(samples.count))
        #expect(samples.allSatisfy { $0.0 >= detectedAt && $0.0 <= start + 600 * ms })
    }

    @Test func nothingServicingTheQueueIsNoRunLoopNotAStall() {
        var d = detector()
        let log = simulate(&d, until: 2000 * ms) { _ in nil }
        #expect(log.filter { $0.1 == .noRunLoop }.count == 1)
        #expect(!log.contains { if case .beginStall = $0.1 { return true } else { return false } })
        #expect(!log.contains { if case .sample = $0.1 { return true } else { return false } })
        // Nor a reason to wake at once: the watchdog sleeps a ping period (before: 0, a loop spinning a CPU).
        #expect(d.nextWakeNs(nowNs: 2000 * ms) == 2000 * ms + d.pingPeriodNs)
    }

    @Test func aSuspendedWatchdogDoesNotReportTheGapAsAStall() {
        var d = detector()
        var actions = d.step(nowNs: 0, answer: nil)
        #expect(actions == [.sendPing(id: 1)])
        actions = d.step(nowNs: 1 * ms, answer: .init(pingID: 1, atNs: 1 * ms, threadID: 7))
        actions = d.step(nowNs: 63 * ms, answer: nil)
        #expect(actions == [.sendPing(id: 2)])
        // The process is stopped for 10 s right after sending ping 2; on waking, the ping is stale.
        actions = d.step(nowNs: 10_063 * ms, answer: nil, pausedNs: 10_000 * ms)
        #expect(actions == [.sendPing(id: 3)])
        actions = d.step(nowNs: 10_064 * ms, answer: .init(pingID: 3, atNs: 10_064 * ms, threadID: 7))
        #expect(actions.isEmpty)
        #expect(!d.isStalled)
    }

    /// On a loaded machine the watchdog can wait for a CPU longer than the threshold between two steps. That is
    /// no pause: the ping it sent before stays outstanding, and the stall starts when it was sent. (Before, every
    /// gap over the threshold discarded the ping, and a 2x-threshold busy stall could go unrecorded.)
    @Test func aWatchdogThatWaitedForACPUKeepsItsPing() {
        var d = detector()
        _ = d.step(nowNs: 0, answer: nil)
        _ = d.step(nowNs: 1 * ms, answer: .init(pingID: 1, atNs: 1 * ms, threadID: 7))
        #expect(d.step(nowNs: 63 * ms, answer: nil) == [.sendPing(id: 2)])
        // The next step comes 400 ms late (run-queue wait, no pause): the ping has been unanswered for 400 ms.
        let actions = d.step(nowNs: 463 * ms, answer: nil)
        #expect(actions.contains(.beginStall(stallID: 1, startNs: 63 * ms, threadID: 7)))
        #expect(d.isStalled)
    }

    @Test func eachStallGetsTheNextNumberAndTheLatestThread() {
        var d = detector()
        var stalls: [(UInt32, Int32)] = []
        var now: UInt64 = 0
        var thread: Int32 = 1
        var outstanding: UInt64? = nil
        // Alternate: answer promptly for a while, then leave a ping unanswered for 400 ms; switch threads.
        for round in 0..<3 {
            let roundStart = now
            while now < roundStart + 500 * ms {
                var answer: StallDetector.Answer? = nil
                if let id = outstanding, now >= roundStart + (d.isStalled ? 400 : 0) * ms, round == 0 || now < roundStart + 100 * ms || now >= roundStart + 450 * ms {
                    answer = .init(pingID: id, atNs: now, threadID: thread)
                    outstanding = nil
                }
                for action in d.step(nowNs: now, answer: answer) {
                    if case .sendPing(let id) = action { outstanding = id }
                    if case .beginStall(let id, _, let t) = action { stalls.append((id, t)) }
                }
                now += ms
            }
            thread += 1
        }
        #expect(stalls.map(\.0) == [1, 2])
        #expect(stalls.map(\.1) == [2, 3])
    }

    @Test func nextWakeNeverLiesInThePastAndIsBoundedByTheSampleInterval() {
        var d = detector()
        _ = d.step(nowNs: 0, answer: nil)
        // Waiting for ping 1: look again a ping period later (before the threshold).
        #expect(d.nextWakeNs(nowNs: 1 * ms) == 63 * ms + 500_000)
        _ = d.step(nowNs: 63 * ms, answer: nil)  // ping 1 still outstanding: no new ping
        #expect(d.nextWakeNs(nowNs: 63 * ms) <= 250 * ms)
        _ = d.step(nowNs: 251 * ms, answer: .init(pingID: 99, atNs: 0, threadID: 7))  // an unrelated answer
        _ = d.step(nowNs: 300 * ms, answer: nil)
        #expect(d.isStalled)
        #expect(d.nextWakeNs(nowNs: 300 * ms) <= 310 * ms)
        #expect(d.nextWakeNs(nowNs: 300 * ms) >= 300 * ms)
    }

    func times(_ log: [(UInt64, StallDetector.Action)], _ match: (StallDetector.Action) -> Bool) -> [UInt64] {
        log.filter { match($0.1) }.map(\.0)
    }

    @Test func samplingStartsWithinOnePingIntervalOfTheUnansweredPing() {
        var d = detector()
        // Ping 3 is answered only after 1000 ms.
        let log = simulate(&d, until: 1500 * ms) { id in id == 3 ? 1000 * ms : 1 * ms }
        let sent = try! #require(log.first { $0.1 == .sendPing(id: 3) }?.0)
        let presamples = times(log) { $0 == .presample }
        let begin = try! #require(times(log) { if case .beginStall = $0 { return true } else { return false } }.first)
        let samples = times(log) { if case .sample = $0 { return true } else { return false } }
        let first = try! #require(presamples.first)
        #expect(first >= sent && first <= sent + d.pingPeriodNs)
        #expect(presamples.allSatisfy { $0 < begin })
        #expect(presamples.count <= d.presampleCapacity)
        #expect(!log.contains { $0.1 == .discardPresamples })
        // Presamples and samples together: every 10 ms from half a ping period to the answer, about 96.
        #expect(presamples.count + samples.count >= 90)
        let all = presamples + samples
        #expect(zip(all, all.dropFirst()).allSatisfy { $1 - $0 >= 5 * ms && $1 - $0 <= 11 * ms })
    }

    @Test func presamplesAreDroppedWhenThePingIsAnsweredInTime() {
        var d = detector()
        // Ping 3 is answered after 150 ms: presampled, then dropped; no stall.
        let log = simulate(&d, until: 1000 * ms) { id in id == 3 ? 150 * ms : 1 * ms }
        let presamples = times(log) { $0 == .presample }
        #expect(!presamples.isEmpty)
        let discard = times(log) { $0 == .discardPresamples }
        #expect(discard.count == 1)
        #expect(presamples.allSatisfy { $0 < discard[0] })
        #expect(!log.contains { if case .beginStall = $0.1 { return true } else { return false } })
        #expect(!log.contains { if case .sample = $0.1 { return true } else { return false } })
    }

    @Test func nothingIsPresampledBeforeAnyThreadAnswered() {
        var d = detector()
        let log = simulate(&d, until: 1000 * ms) { _ in nil }
        #expect(!log.contains { $0.1 == .presample })
    }

    @Test func stallsAndSaturatedEpisodesShareOneSequence() {
        var d = detector()
        #expect(d.takeEpisodeID() == 1)
        let log = simulate(&d, until: 1000 * ms) { id in id == 3 ? 600 * ms : 1 * ms }
        let ids = log.compactMap { if case .beginStall(let id, _, _) = $0.1 { return id } else { return nil } }
        #expect(ids == [2])
        #expect(d.takeEpisodeID() == 3)
    }
}

extension StallDetectorTests {
    @Test func aRoutinePingWakesTheLoopOncePerPeriod() {
        var d = detector()
        var now: UInt64 = 0
        var wakes = 0
        var pending: StallDetector.Answer? = nil
        // Step only when the detector asks to be woken; every ping is routine and answered at once.
        while now < 1000 * ms {
            for action in d.step(nowNs: now, answer: pending) {
                if case .sendPing(let id) = action {
                    d.pingIsRoutine()
                    pending = .init(pingID: id, atNs: now + 10_000, threadID: 7)
                } else {
                    #expect(Bool(false), "\(action)")
                }
            }
            now = d.nextWakeNs(nowNs: now)
            wakes += 1
        }
        #expect(wakes <= 17, "\(wakes) wakes in one second, one per 62.5 ms ping period")
    }

    @Test func aRoutinePingThatStallsIsPresampledAfterOnePeriod() {
        var d = detector()
        var log: [(UInt64, StallDetector.Action)] = []
        var now: UInt64 = 0
        var answered = false
        while now <= 600 * ms {
            let answer: StallDetector.Answer? = answered ? nil : (now == 0 ? nil : .init(pingID: 1, atNs: 1, threadID: 7))
            answered = answered || answer != nil
            for action in d.step(nowNs: now, answer: answer) {
                log.append((now, action))
                if case .sendPing = action { d.pingIsRoutine() }
            }
            now += ms
        }
        let sent = try! #require(log.first { $0.1 == .sendPing(id: 2) }?.0)
        let first = try! #require(log.first { $0.1 == .presample }?.0)
        #expect(first >= sent + d.pingPeriodNs && first <= sent + d.pingPeriodNs + ms, "\(first) \(sent)")
        #expect(log.contains { if case .beginStall = $0.1 { return true } else { return false } })
    }

    /// Asked for a sample every millisecond, each sample waiting 4 ms for its tick: the next one comes half an
    /// interval after the last ended, not the moment it ends (when the thread has barely run since the answer).
    @Test func theNextSampleIsDueHalfAnIntervalAfterTheLastEnded() {
        var d = StallDetector(thresholdNs: 250 * ms, sampleIntervalNs: 1 * ms)
        _ = d.step(nowNs: 0, answer: nil)  // ping 1, never answered
        _ = d.step(nowNs: 1 * ms, answer: .init(pingID: 99, atNs: 0, threadID: 7))  // a thread to sample
        var now: UInt64 = 251 * ms
        var sampled: [UInt64] = []
        while now < 300 * ms {
            if d.step(nowNs: now, answer: nil).contains(where: { if case .sample = $0 { true } else { false } }) {
                sampled.append(now)
                now += 4 * ms  // the sample waited for its tick
                d.sampleEnded(atNs: now)
            }
            now = max(now + 100_000, d.nextWakeNs(nowNs: now))
        }
        #expect(d.isStalled)
        #expect(sampled.count >= 5)
        let gaps = zip(sampled.dropFirst(), sampled).map { $0 - $1 }
        #expect(gaps.allSatisfy { $0 >= 4 * ms + 500_000 }, "\(gaps)")
    }
}
