import Testing

@testable import StallProfiler

/// The saturation detector is a pure state machine: these tests feed it made-up clocks.
@Suite struct SaturationDetectorTests {
    let ms: UInt64 = 1_000_000

    /// A thread model: per 1 ms step, how much CPU it gets, how long it waits for a CPU, and whether it sleeps
    /// voluntarily in that step.
    struct Thread {
        var cpuPerMs: (UInt64) -> Double
        var waitPerMs: (UInt64) -> Double = { _ in 0 }
        var sleeps: (UInt64) -> Bool = { _ in false }
    }

    struct Log {
        var actions: [(UInt64, SaturationDetector.Action)] = []
        var procReads = 0
        var begins: [(at: UInt64, start: UInt64)] {
            actions.compactMap { if case .begin(let start, _) = $0.1 { return ($0.0, start) } else { return nil } }
        }
        var ends: [UInt64] { actions.compactMap { if case .end(let end) = $0.1 { return end } else { return nil } } }
        var samples: Int { actions.filter { $0.1 == .sample }.count }
    }

    func detector(periodMs: UInt64 = 1000) -> SaturationDetector {
        SaturationDetector(periodNs: periodMs * ms, checkIntervalNs: 62_500_000, sampleIntervalNs: 10 * ms)
    }

    /// Steps the detector every `stepMs` for `durationMs` against `thread` (thread id 7).
    func simulate(_ d: inout SaturationDetector, _ thread: Thread, durationMs: UInt64, stepMs: UInt64 = 5) -> Log {
        var log = Log()
        var cpu = 0.0, wait = 0.0
        var switches: UInt64 = 0
        var now: UInt64 = 0
        for t in 0...durationMs {
            if t > 0 {
                cpu += thread.cpuPerMs(t) * Double(ms)
                wait += thread.waitPerMs(t) * Double(ms)
                if thread.sleeps(t) { switches += 1 }
            }
            now = t * ms
            guard t % stepMs == 0 else { continue }
            let (c, w, s) = (UInt64(cpu), UInt64(wait), switches)
            for action in d.step(nowNs: now, threadID: 7, cpu: { c }, detail: {
                log.procReads += 1
                return .init(waitNs: w, voluntarySwitches: s)
            }) {
                log.actions.append((now, action))
            }
        }
        return log
    }

    @Test func aThreadNotYetKnownIsLookedForOncePerCheckInterval() {
        // Nothing has serviced the main queue yet (an app whose main thread sleeps, or runs its own loop, after
        // starting the watchdog): no thread to check. Before: the next step was due at once, every time, and the
        // watchdog thread spun on a core until the queue was first serviced.
        var d = detector()
        var now: UInt64 = 0
        for _ in 0..<20 {
            #expect(d.step(nowNs: now, threadID: nil, cpu: { nil }, detail: { nil }).isEmpty)
            let wake = d.nextWakeNs(nowNs: now)
            #expect(wake >= now + 62 * ms)
            now = max(wake, now + 1)
        }
        // Once the thread is known, it is checked at the next step due.
        #expect(d.step(nowNs: now, threadID: 7, cpu: { 1 }, detail: { .init(waitNs: 0, voluntarySwitches: 0) }).isEmpty)
        #expect(d.nextWakeNs(nowNs: now) == now + 62_500_000)
    }

    @Test func aSpinningThreadIsSaturatedAfterThePeriodAndSampled() {
        var d = detector()
        let log = simulate(&d, Thread(cpuPerMs: { _ in 1 }), durationMs: 3000)
        let begin = try! #require(log.begins.first)
        #expect(log.begins.count == 1)
        #expect(begin.at - begin.start >= 990 * ms)
        #expect(begin.at <= 1200 * ms, "detected within two check intervals after the period")
        #expect(log.ends.isEmpty)
        // Samples every 10 ms from detection to the end: about 180-200.
        #expect((150...210).contains(log.samples))
        #expect(d.isSaturated)
    }

    @Test func theNextSampleIsDueHalfAnIntervalAfterTheLastEnded() {
        var d = SaturationDetector(periodNs: 1000 * ms, checkIntervalNs: 62_500_000, sampleIntervalNs: 1 * ms)
        let log = simulate(&d, Thread(cpuPerMs: { _ in 1 }), durationMs: 1500, stepMs: 1)
        #expect(d.isSaturated && log.samples > 0)
        // The last sample waited 4 ms for its tick: nothing is due until half an interval after it ended.
        let ended = 1504 * ms
        d.sampleEnded(atNs: ended)
        #expect(d.nextWakeNs(nowNs: ended) >= ended + 500_000)
        let early = d.step(nowNs: ended + 100_000, threadID: 7, cpu: { 1504 * ms }, detail: { .init(waitNs: 0, voluntarySwitches: 0) })
        #expect(!early.contains(.sample))
        let due = d.step(nowNs: ended + 500_000, threadID: 7, cpu: { 1504 * ms }, detail: { .init(waitNs: 0, voluntarySwitches: 0) })
        #expect(due.contains(.sample))
    }

    @Test func onALoadedMachineCPUPlusRunQueueWaitCounts() {
        // Four CPU hogs on two cores: the spinning thread gets 40 % and waits the rest.
        var d = detector()
        let log = simulate(&d, Thread(cpuPerMs: { _ in 0.4 }, waitPerMs: { _ in 0.6 }), durationMs: 2000)
        #expect(log.begins.count == 1)
    }

    @Test func aHealthyPeriodicThreadSleepsAndIsNeverSaturated() {
        // 60 % work every 10 ms, sleeping between bursts; under load its wait fills the rest.
        var d = detector()
        let thread = Thread(cpuPerMs: { $0 % 10 < 6 ? 1 : 0 }, waitPerMs: { $0 % 10 < 6 ? 0 : 0.9 }, sleeps: { $0 % 10 == 6 })
        let log = simulate(&d, thread, durationMs: 5000)
        #expect(log.begins.isEmpty)
    }

    @Test func aStoppedOrStarvedThreadIsNotSaturated() {
        // No voluntary switch, but only 30 % active (CPU + wait): not saturated.
        var d = detector()
        let log = simulate(&d, Thread(cpuPerMs: { _ in 0.2 }, waitPerMs: { _ in 0.1 }), durationMs: 4000)
        #expect(log.begins.isEmpty)
    }

    @Test func anIdleThreadCostsNoProcReads() {
        var d = detector()
        let log = simulate(&d, Thread(cpuPerMs: { _ in 0.002 }, sleeps: { $0 % 50 == 0 }), durationMs: 5000)
        #expect(log.begins.isEmpty)
        #expect(log.procReads == 0)
    }

    @Test func theEpisodeEndsWhenTheThreadSleepsAgain() {
        var d = detector()
        // Spins for 2.5 s, then idles (sleeping voluntarily).
        let log = simulate(&d, Thread(cpuPerMs: { $0 <= 2500 ? 1 : 0 }, sleeps: { $0 > 2500 }), durationMs: 4000)
        #expect(log.begins.count == 1)
        let end = try! #require(log.ends.first)
        #expect(log.ends.count == 1)
        #expect(end > 2500 * ms && end <= 2700 * ms)
        #expect(!d.isSaturated)
        #expect(log.actions.filter { $0.1 == .sample }.allSatisfy { $0.0 <= end })
    }

    @Test func theEpisodeEndsWhenTheThreadStopsBeingActive() {
        var d = detector()
        // Spins, then is stopped (no CPU, no wait, no switch counted): not active any more.
        let log = simulate(&d, Thread(cpuPerMs: { $0 <= 2000 ? 1 : 0 }), durationMs: 3500)
        #expect(log.begins.count == 1)
        let end = try! #require(log.ends.first)
        #expect(end > 2000 * ms && end <= 2500 * ms)
    }

    @Test func aThreadWaitingInARunQueueStaysSaturated() {
        // Under heavy load the thread waits 400 ms for a CPU; schedstat credits the wait only when it runs again.
        var d = detector()
        var now: UInt64 = 0, cpu: UInt64 = 0, wait: UInt64 = 0
        var actions: [SaturationDetector.Action] = []
        while now <= 3000 * ms {
            let waiting = now > 2000 * ms && now < 2400 * ms
            let (c, w) = (cpu, wait)
            actions += d.step(nowNs: now, threadID: 7, cpu: { c }, detail: { .init(waitNs: w, voluntarySwitches: 0, isRunnable: true) })
            now += 10 * ms
            if !waiting { cpu += 5 * ms; wait += 5 * ms }
            if now == 2400 * ms { wait += 400 * ms }
        }
        #expect(actions.filter { if case .begin = $0 { return true } else { return false } }.count == 1)
        #expect(!actions.contains { if case .end = $0 { return true } else { return false } })
    }

    @Test func anIsolatedBurstOfSwitchesDuringAnEpisodeDoesNotEndIt() {
        var d = detector()
        // Spins; sleeps once at 2 s and five times around 2.5 s (page faults on a loaded machine), then every
        // 40 ms from 3 s on (a run loop that sleeps between turns again).
        let sleeps: (UInt64) -> Bool = { $0 == 2000 || (2500..<2505).contains($0) || ($0 >= 3000 && $0 % 40 == 0) }
        let log = simulate(&d, Thread(cpuPerMs: { _ in 1 }, sleeps: sleeps), durationMs: 4000)
        #expect(log.begins.count == 1)
        let end = try! #require(log.ends.first)
        #expect(log.ends.count == 1)
        #expect(end > 3000 * ms && end <= 3200 * ms)
    }

    @Test func aVoluntarySwitchRestartsTheWindow() {
        var d = detector()
        // Spins but sleeps once every 800 ms: never a whole second without a voluntary switch.
        let log = simulate(&d, Thread(cpuPerMs: { _ in 1 }, sleeps: { $0 % 800 == 0 }), durationMs: 5000)
        #expect(log.begins.isEmpty)
    }

    @Test func anotherThreadServicingTheQueueEndsTheEpisode() {
        var d = detector()
        var now: UInt64 = 0
        var cpu: UInt64 = 0
        var actions: [SaturationDetector.Action] = []
        while now <= 2000 * ms {
            let c = cpu
            actions += d.step(nowNs: now, threadID: now < 1500 * ms ? 7 : 8, cpu: { c }, detail: { .init(waitNs: 0, voluntarySwitches: 3) })
            now += 10 * ms
            cpu += 10 * ms
        }
        #expect(actions.filter { if case .begin = $0 { return true } else { return false } }.count == 1)
        #expect(actions.filter { if case .end = $0 { return true } else { return false } }.count == 1)
        #expect(!d.isSaturated, "thread 8 has not been watched for a whole period yet")
    }

    @Test func activeShareNeverExceedsOne() {
        let a = SaturationDetector.Reading(timeNs: 0, cpuNs: 0, waitNs: 0, voluntarySwitches: 0)
        let b = SaturationDetector.Reading(timeNs: 10 * ms, cpuNs: 9 * ms, waitNs: 40 * ms, voluntarySwitches: 0)
        #expect(SaturationDetector.activeShare(from: a, to: b) == 1)
        #expect(SaturationDetector.activeShare(from: b, to: a) == 0)
    }

    @Test func nextWakeIsTheNextCheckOrSample() {
        var d = detector()
        _ = d.step(nowNs: 0, threadID: 7, cpu: { 0 }, detail: { nil })
        #expect(d.nextWakeNs(nowNs: 1 * ms) == 62_500_000)
        #expect(d.nextWakeNs(nowNs: 100 * ms) == 100 * ms)
    }
}

/// Saturation on an overloaded machine (issue 17): with eight CPU hogs on two cores a saturated thread gets a few
/// percent of a core, in lumps.
extension SaturationDetectorTests {
    @Test func aStarvedSaturatedThreadIsSaturated() {
        // Runs 4 ms in every 100 ms and waits for a CPU the rest, a wait schedstat credits when it runs again. Over
        // one check interval it made 0-6 % progress: below the old 10 % gate, so no window ever opened.
        // It is always runnable (it spins), as /proc says.
        var d = detector()
        var cpu: UInt64 = 0, wait: UInt64 = 0
        var actions: [SaturationDetector.Action] = []
        for t: UInt64 in 0...3000 {
            if t > 0, t % 100 < 4 { cpu += ms }
            if t > 0, t % 100 == 0 { wait += 96 * ms }
            guard t % 5 == 0 else { continue }
            let (c, w) = (cpu, wait)
            actions += d.step(nowNs: t * ms, threadID: 7, cpu: { c }, detail: {
                .init(waitNs: w, voluntarySwitches: 0, isRunnable: true)
            })
        }
        #expect(actions.filter { if case .begin = $0 { return true } else { return false } }.count == 1)
        #expect(!actions.contains { if case .end = $0 { return true } else { return false } })
    }

    @Test func aThreadWaitingForACPUNowCountsItsUncreditedWait() {
        // Period 200 ms. The thread runs until 200 ms, then waits for a CPU (runnable, no switch): a wait credited
        // only later. The check at 275 ms sees it runnable without CPU progress since the check before (220 ms):
        // that interval counts as wait (active 0.91, not 0.66), and the episode begins.
        var d = detector(periodMs: 200)
        var now: UInt64 = 0, cpu: UInt64 = 0
        var begins = 0
        while now <= 300 * ms {
            let (c, runnable) = (cpu, now >= 200 * ms)
            for action in d.step(nowNs: now, threadID: 7, cpu: { c }, detail: {
                .init(waitNs: 0, voluntarySwitches: 0, isRunnable: runnable)
            }) {
                if case .begin = action { begins += 1 }
            }
            now += 5 * ms
            if now <= 200 * ms { cpu += 5 * ms }
        }
        #expect(begins == 1)
    }
}
