import StallBisect
import StallFormat
import Testing

/// The classifier on synthetic measurements: no processes, no clocks.
@Suite struct RunClassifierTests {
    func options() -> RunClassifierOptions {
        var options = RunClassifierOptions()
        options.windowSeconds = 3
        options.sustainedSeconds = 1
        options.intervalSeconds = 0.1
        return options
    }

    /// Feeds `use(t)` (main-thread CPU per second of wall time) every 0.1 s; returns the verdict and when.
    /// `sleeps(t)` is voluntary switches per second (nil: unknown, as without /proc status).
    func classify(
        cpu use: (Double) -> Double, wait: (Double) -> Double = { _ in 0 }, sleeps: ((Double) -> Double)? = nil
    ) -> (RunVerdict?, Double) {
        var classifier = RunClassifier(options: options())
        var cpu = 0.0
        var waited = 0.0
        var slept = 0.0
        for step in 1...150 {
            let t = Double(step) / 10
            cpu += use(t) * 0.1
            waited += wait(t) * 0.1
            slept += (sleeps?(t) ?? 0) * 0.1
            let switches = sleeps == nil ? nil : Int(slept.rounded(.down))
            if let verdict = classifier.record(
                seconds: t, cpuSeconds: cpu, waitSeconds: waited, voluntarySwitches: switches)
            {
                return (verdict, t)
            }
        }
        return (nil, 15)
    }

    @Test func spinningIsFrozenAfterTheSustainedPeriod() {
        let (verdict, at) = classify(cpu: { _ in 1 })
        #expect(verdict == .frozen)
        #expect(at >= 1 && at < 1.25)
    }

    @Test func spinningOnALoadedMachineCountsRunQueueWait() {
        let (verdict, _) = classify(cpu: { _ in 0.5 }, wait: { _ in 0.48 })
        #expect(verdict == .frozen)
    }

    @Test func lightPeriodicWorkOnALoadedMachineIsNotFrozen() {
        // 60 % of every 10 ms with four hogs on two cores: CPU 0.4, run-queue wait 0.55, but 100 sleeps a second.
        let (verdict, _) = classify(cpu: { _ in 0.4 }, wait: { _ in 0.55 }, sleeps: { _ in 100 })
        #expect(verdict == .inconclusive)
    }

    @Test func aSpinThatNeverSleepsIsFrozenUnderLoad() {
        let (verdict, at) = classify(cpu: { _ in 0.4 }, wait: { _ in 0.6 }, sleeps: { $0 < 0.5 ? 200 : 0 })
        #expect(verdict == .frozen)
        #expect(at >= 1.35, "frozen one sustained period after the last sleep (0.4 s)")
    }

    @Test func rareSleepsBelowTheThresholdStillFreeze() {
        let (verdict, _) = classify(cpu: { _ in 1 }, sleeps: { _ in 2 })
        #expect(verdict == .frozen)
    }

    @Test func idleIsGoodAtTheEndOfTheWindow() {
        let (verdict, at) = classify(cpu: { _ in 0.01 })
        #expect(verdict == .good)
        #expect(at >= 3)
    }

    @Test func startupWorkThenIdleIsGood() {
        let (verdict, _) = classify(cpu: { $0 < 0.8 ? 1 : 0 })
        #expect(verdict == .good)
    }

    @Test func halfBusyUntilTheEndIsInconclusive() {
        let (verdict, _) = classify(cpu: { _ in 0.5 })
        #expect(verdict == .inconclusive)
    }

    @Test func burstsShorterThanTheSustainedPeriodAreNotFrozen() {
        let (verdict, _) = classify(cpu: { Int($0 * 10) % 10 < 7 ? 1 : 0 })
        #expect(verdict != .frozen)
    }

    @Test func exitStatusDecidesARunThatEnded() {
        let classifier = RunClassifier(options: options())
        #expect(classifier.verdictAtExit(status: 0) == .good)
        #expect(classifier.verdictAtExit(status: 2) == .inconclusive)
        #expect(classifier.verdictAtExit(status: nil) == .inconclusive)
    }

    // MARK: --measure watchdog

    let ms: UInt64 = 1_000_000

    /// An episode of `kind` that began at 0 and was detected at `detectedMs`, with samples every 10 ms until
    /// `lastSampleMs` (CPU `cpuShare` of the wall time), ended at `endMs` when given.
    func episode(
        _ kind: EpisodeKind, id: UInt32 = 1, detectedMs: UInt64, lastSampleMs: UInt64, endMs: UInt64? = nil,
        cpuShare: Double = 1
    ) -> Stall {
        let begin = StallBeginRecord(stallID: id, startNs: 0, detectedNs: detectedMs * ms, threadID: 9, kind: kind)
        let samples = stride(from: detectedMs, through: lastSampleMs, by: 10).map {
            Sample(timestampNs: $0 * ms, threadCPUNs: UInt64(Double($0 * ms) * cpuShare), flags: [], frames: [1])
        }
        let end = endMs.map {
            StallEndRecord(stallID: id, endNs: $0 * ms, cpuNs: 0, measuredNs: 0, state: .busy, sampleCount: 0, missedCount: 0)
        }
        return Stall(begin: begin, end: end, samples: samples)
    }

    func capture(_ stalls: Stall...) -> Capture { Capture(source: "run.stalls", stalls: stalls) }

    func watchdogOptions() -> RunClassifierOptions {
        var options = options()
        options.measure = .watchdog
        return options
    }

    @Test func aSaturatedEpisodeInProgressForTheSustainedPeriodIsFrozen() {
        var classifier = RunClassifier(options: watchdogOptions())
        #expect(classifier.record(seconds: 0.5, capture: capture()) == nil)
        // Detected after a 1 s window: already the sustained period long.
        #expect(classifier.record(seconds: 1.2, capture: capture(episode(.saturated, detectedMs: 1050, lastSampleMs: 1100))) == .frozen)
    }

    @Test func aShortSaturatedEpisodeIsNotFrozenYet() {
        var options = watchdogOptions()
        options.sustainedSeconds = 2
        var classifier = RunClassifier(options: options)
        #expect(classifier.record(seconds: 1.2, capture: capture(episode(.saturated, detectedMs: 1050, lastSampleMs: 1100))) == nil)
        #expect(classifier.record(seconds: 2.2, capture: capture(episode(.saturated, detectedMs: 1050, lastSampleMs: 2050))) == .frozen)
    }

    @Test func aWindowEndingWhileSaturatedIsNeverGood() {
        var options = watchdogOptions()
        options.sustainedSeconds = 3  // longer than the episode: not frozen
        var classifier = RunClassifier(options: options)
        let verdict = classifier.record(seconds: 3, capture: capture(episode(.saturated, detectedMs: 2500, lastSampleMs: 2900)))
        #expect(verdict == .inconclusive)
    }

    @Test func aFinishedSaturatedEpisodeLeavesTheRunGood() {
        var classifier = RunClassifier(options: watchdogOptions())
        let ended = episode(.saturated, detectedMs: 600, lastSampleMs: 700, endMs: 750)
        #expect(classifier.record(seconds: 3, capture: capture(ended)) == .good)
    }

    @Test func aBlockedStallIsNotFrozenButASaturatedEpisodeAfterItIs() {
        var classifier = RunClassifier(options: watchdogOptions())
        let blocked = episode(.stall, detectedMs: 250, lastSampleMs: 1500, cpuShare: 0.01)
        #expect(classifier.record(seconds: 1.5, capture: capture(blocked)) == nil)
        var finished = blocked
        finished.end = StallEndRecord(stallID: 1, endNs: 1600 * ms, cpuNs: 0, measuredNs: 0, state: .blocked, sampleCount: 0, missedCount: 0)
        let saturated = episode(.saturated, id: 2, detectedMs: 2700, lastSampleMs: 2800)
        #expect(classifier.record(seconds: 2.8, capture: capture(finished, saturated)) == .frozen)
    }
}
