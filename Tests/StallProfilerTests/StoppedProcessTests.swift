import Foundation
import StallAnalysis
import StallFormat
import Testing

@testable import StallProfiler

/// Time the process spends stopped inside a stall is not stall time.
@Suite struct StoppedProcessTests {
    @Test func aBusyStallPausedByStopStaysBusyAndItsDurationExcludesThePause() throws {
        let path = TestSupport.temporaryPath("stopped.stalls")
        defer { unlink(path) }
        let process = Process()
        process.executableURL = TestSupport.productsDirectory.appendingPathComponent("stall-demo")
        // The spin ends 4 s (wall clock) after it started: paused 3 s of it, it runs about 1 s.
        process.arguments = ["--stall", "busy", "--stall-ms", "4000"]
        process.environment = [EnvironmentName.output: path, EnvironmentName.threshold: "100", EnvironmentName.interval: "5"]
        process.standardError = FileHandle.nullDevice
        try process.run()
        var started = false
        for _ in 0..<200 where !started {
            usleep(20_000)
            started = ((try? CaptureReader.read(path: path))?.stalls.first?.samples.count ?? 0) >= 5
        }
        kill(process.processIdentifier, SIGSTOP)
        sleep(3)
        kill(process.processIdentifier, SIGCONT)
        process.waitUntilExit()
        #expect(started)
        #expect(process.terminationStatus == 0)
        let capture = try CaptureReader.read(path: path)
        let stall = try #require(capture.stalls.first)
        let end = try #require(stall.end)
        // Before: blocked, 25 % active, 4.0 s. The pause is 3 s; generous margins for a loaded machine.
        #expect(stall.state == .busy)
        #expect(stall.pausedNs >= 1_500_000_000)
        #expect(stall.pausedNs <= 3_500_000_000)
        #expect(stall.durationNs + stall.pausedNs == end.endNs - stall.begin.startNs)
        // The report shows the pause apart from the duration.
        let report = StallReport(captures: [capture])
        let episode = try #require(report.episodes.first)
        #expect(episode.pausedMs == Double(stall.pausedNs) / 1e6)
        #expect(report.text().contains("the process stopped"))
        #expect(report.json().contains("\"pausedMs\": "))
    }

    @Test func onlyTimeBeyondSleepCPUWaitAndToleranceIsAPause() {
        let ms: UInt64 = 1_000_000
        // A step that slept, ran and waited for a CPU as long as the clock says: no pause.
        #expect(PauseDetector.unexplained(
            elapsedNs: 30 * ms, sleptNs: 10 * ms, cpuNs: 5 * ms, waitNs: 15 * ms, toleranceNs: 60 * ms) == 0)
        // A loaded machine: 2 s of run-queue wait is not a pause.
        #expect(PauseDetector.unexplained(
            elapsedNs: 2_010 * ms, sleptNs: 10 * ms, cpuNs: 0, waitNs: 2_000 * ms, toleranceNs: 60 * ms) == 0)
        // Unexplained, but within the tolerance (a sample waiting for its handler): no pause.
        #expect(PauseDetector.unexplained(
            elapsedNs: 60 * ms, sleptNs: 10 * ms, cpuNs: 0, waitNs: 0, toleranceNs: 60 * ms) == 0)
        // Stopped for 3 s.
        #expect(PauseDetector.unexplained(
            elapsedNs: 3_010 * ms, sleptNs: 10 * ms, cpuNs: 0, waitNs: 0, toleranceNs: 60 * ms) == 3_000 * ms)
    }
}
