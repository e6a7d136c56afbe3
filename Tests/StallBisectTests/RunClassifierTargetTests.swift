import StallBisect
import StallFormat
import Testing

/// `--measure watchdog` on captures of several watched targets: every target's episode in progress counts by
/// default, `--target` (``RunClassifierOptions/targets``) keeps the named ones.
@Suite struct RunClassifierTargetTests {
    static let ms: UInt64 = 1_000_000

    /// A busy episode of `target` detected at `detectedMs` with samples to `lastSampleMs`, ended at `endMs` when given.
    func episode(_ id: UInt32, _ target: String, detectedMs: UInt64, lastSampleMs: UInt64, endMs: UInt64? = nil) -> Stall {
        let begin = StallBeginRecord(
            stallID: id, startNs: detectedMs * Self.ms, detectedNs: detectedMs * Self.ms, threadID: 9, target: target)
        let samples = stride(from: detectedMs, through: lastSampleMs, by: 10).map {
            Sample(timestampNs: $0 * Self.ms, threadCPUNs: $0 * Self.ms, flags: [], frames: [1])
        }
        let end = endMs.map {
            StallEndRecord(stallID: id, endNs: $0 * Self.ms, cpuNs: 0, measuredNs: 0, state: .busy, sampleCount: 0, missedCount: 0)
        }
        return Stall(begin: begin, end: end, samples: samples)
    }

    func classifier(_ targets: Set<String> = []) -> RunClassifier {
        var options = RunClassifierOptions()
        (options.windowSeconds, options.sustainedSeconds, options.intervalSeconds) = (3, 1, 0.1)
        options.measure = .watchdog
        options.targets = targets
        return RunClassifier(options: options)
    }

    /// loop-1 has been busy since 0.2 s and still is; the main queue's stall began later and ended.
    func loopFrozenBehindAFinishedMainStall() -> Capture {
        Capture(source: "run.stalls", stalls: [
            episode(1, "loop-1", detectedMs: 200, lastSampleMs: 1_500),
            episode(2, "main", detectedMs: 400, lastSampleMs: 600, endMs: 650),
        ])
    }

    @Test func anEpisodeInProgressOfAnyTargetCountsByDefault() {
        // The last episode of the file has ended: the one in progress is an earlier target's.
        var all = classifier()
        #expect(all.record(seconds: 1.5, capture: loopFrozenBehindAFinishedMainStall()) == .frozen)
        #expect(all.recentCPU() == 1)
        var loop = classifier(["loop-1"])
        #expect(loop.record(seconds: 1.5, capture: loopFrozenBehindAFinishedMainStall()) == .frozen)
    }

    @Test func otherTargetsEpisodesDoNotCount() {
        var main = classifier(["main"])
        #expect(main.record(seconds: 1.5, capture: loopFrozenBehindAFinishedMainStall()) == nil)
        // At the end of the window the main queue's stall is over: good, loop-1 still frozen or not.
        #expect(main.record(seconds: 3, capture: loopFrozenBehindAFinishedMainStall()) == .good)
        var none = classifier(["db-queue"])
        #expect(none.record(seconds: 3, capture: loopFrozenBehindAFinishedMainStall()) == .good)
        // Without the filter the window ending while loop-1 is frozen is never good.
        var all = classifier()
        _ = all.record(seconds: 0.1, capture: Capture(source: "run.stalls", stalls: []))
        let short = Capture(source: "run.stalls", stalls: [episode(1, "loop-1", detectedMs: 2_500, lastSampleMs: 2_900)])
        #expect(all.record(seconds: 3, capture: short) == .inconclusive)
        var mainOnly = classifier(["main"])
        #expect(mainOnly.record(seconds: 3, capture: short) == .good)
    }

    @Test func targetsNeedTheWatchdogMeasure() throws {
        var options = RunClassifierOptions()
        options.targets = ["main"]
        #expect(throws: StallError.self) { try options.validate() }
        options.measure = .watchdog
        try options.validate()
    }
}
