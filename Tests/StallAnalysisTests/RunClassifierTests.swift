import StallAnalysis
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
    func classify(cpu use: (Double) -> Double, wait: (Double) -> Double = { _ in 0 }) -> (RunVerdict?, Double) {
        var classifier = RunClassifier(options: options())
        var cpu = 0.0
        var waited = 0.0
        for step in 1...40 {
            let t = Double(step) / 10
            cpu += use(t) * 0.1
            waited += wait(t) * 0.1
            if let verdict = classifier.record(seconds: t, cpuSeconds: cpu, waitSeconds: waited) { return (verdict, t) }
        }
        return (nil, 4)
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
}
