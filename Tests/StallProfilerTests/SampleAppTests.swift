import Foundation
import StallFormat
import StallSamples
import Testing

/// The sample apps, run as separate processes with the watchdog on, under each way of servicing the main queue.
@Suite struct SampleAppTests {
    enum Launcher: String, CaseIterable, CustomTestStringConvertible {
        case runloop, dispatch, async
        var testDescription: String { rawValue }

        var executable: URL {
            TestSupport.productsDirectory.appendingPathComponent(self == .async ? "stall-demo-async" : "stall-demo")
        }
        var arguments: [String] { self == .async ? [] : ["--loop", rawValue] }
    }

    func run(_ launcher: Launcher, _ kind: StallKind) throws -> Capture {
        let path = TestSupport.temporaryPath("\(launcher.rawValue)-\(kind.rawValue).stalls")
        defer { unlink(path) }
        let result = try TestSupport.run(
            launcher.executable, launcher.arguments + ["--stall", kind.rawValue, "--stall-ms", "600"],
            environment: [EnvironmentName.output: path, EnvironmentName.threshold: "150", EnvironmentName.interval: "5"])
        #expect(result.status == 0, "\(launcher) \(kind): \(result.stderr)")
        return try CaptureReader.read(path: path)
    }

    @Test(arguments: Launcher.allCases)
    func busyStallUnder(_ launcher: Launcher) throws {
        let capture = try run(launcher, .busy)
        #expect(capture.closedCleanly)
        let stall = try #require(capture.stalls.first)
        #expect(stall.state == .busy)
        // The wait for a CPU that cost samples is recorded (0 when none was missed), never more than all the wait.
        let end = try #require(stall.end)
        let missedWait = try #require(end.missedRunQueueNs)
        #expect(missedWait <= end.runQueueNs)
        if end.missedCount == 0 { #expect(missedWait == 0) }
        if launcher == .runloop { #expect(stall.begin.threadID == capture.process?.pid) }
        let stacks = TestSupport.stacks(of: capture)
        let runs = stacks.map { TestSupport.longestRun(of: "BusyWork.descend", in: $0) }
        #expect(runs.contains { $0 >= BusyWork.depth }, "\(stacks.count) stacks, missed \(end.missedCount); runs \(runs)")
    }

    @Test(arguments: Launcher.allCases)
    func blockedStallUnder(_ launcher: Launcher) throws {
        let capture = try run(launcher, .blocked)
        let stall = try #require(capture.stalls.first)
        #expect(stall.state == .blocked)
        let stacks = TestSupport.stacks(of: capture)
        #expect(!stacks.isEmpty)
        // In the lock's wait, or (on a loaded machine, where the holder thread can wait hundreds of milliseconds for
        // a CPU) still in the semaphore wait for the holder to take it: both are the main thread's blocked stall.
        let without = stacks.filter { stack in
            !stack.contains { $0.contains("BlockedWork.lockContended") }
                && !(stack.contains { $0.contains("BlockedWork.waitForWorkerLock") } && stack.contains { $0.contains("sem_wait") })
        }
        #expect(without.isEmpty, "\(without.prefix(2))")
    }

    /// A busy stall twice the threshold long (500 ms at 250 ms), after the app idled for 1.2 s: the watchdog sleeps
    /// deeply by then, and must wake for it. Under load the run loop's readiness was lost when the main thread
    /// drained its set first, and the watchdog slept on (1 of 15 such stalls unrecorded with eight CPU hogs, many
    /// others shortened by up to a threshold); the main thread's CPU time now wakes it too.
    @Test func aBusyStallOfTwiceTheThresholdAfterAnIdleSecondIsRecorded() throws {
        let path = TestSupport.temporaryPath("twice-threshold.stalls")
        defer { unlink(path) }
        let result = try TestSupport.run(
            Launcher.runloop.executable, ["--stall", "busy", "--stall-ms", "500", "--delay-ms", "1200"],
            environment: [EnvironmentName.output: path, EnvironmentName.threshold: "250"])
        #expect(result.status == 0, "\(result.stderr)")
        let capture = try CaptureReader.read(path: path)
        #expect(capture.stalls.count == 1, "\(capture.stalls.map(\.begin))")
        let stall = try #require(capture.stalls.first)
        #expect(stall.kind == .stall && stall.isFinished)
        #expect(stall.state == .busy)
    }

    /// Starts stall-demo on `RunLoop.main` with a busy stall that lasts a minute (the test kills it).
    func startEndlessBusyStall(environment: [String: String]) throws -> Process {
        let process = Process()
        process.executableURL = Launcher.runloop.executable
        process.arguments = ["--stall", "busy", "--stall-ms", "60000"]
        process.environment = environment
        try process.run()
        return process
    }

    @Test func sigkillMidStallLosesNothingFlushed() throws {
        let path = TestSupport.temporaryPath("killed.stalls")
        defer { unlink(path) }
        let process = try startEndlessBusyStall(
            environment: [EnvironmentName.output: path, EnvironmentName.threshold: "100", EnvironmentName.interval: "5"])
        // Wait until at least 20 samples are on disk, then kill without warning.
        var seen = 0
        for _ in 0..<600 where seen < 20 {
            usleep(50_000)
            seen = (try? CaptureReader.read(path: path))?.stalls.first?.samples.count ?? 0
        }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        let capture = try CaptureReader.read(path: path)
        #expect(!capture.closedCleanly)
        let stall = try #require(capture.stalls.first)
        #expect(!stall.isFinished)
        #expect(stall.samples.count >= seen)
        #expect(stall.state == .busy)
        let stacks = TestSupport.stacks(of: capture)
        #expect(stacks.contains { TestSupport.longestRun(of: "BusyWork.descend", in: $0) >= BusyWork.depth })
    }

    /// Killed 440 ms after its stall was detected (issue 17 saw such a stall with no samples at load 5-7, and
    /// unfinished busy stalls read "blocked" under load: their last samples found the thread waiting for a CPU, a
    /// wait schedstat had not credited yet). The stall is on disk, with samples, and busy.
    @Test func aBusyStallKilledSoonAfterItWasDetectedIsBusy() throws {
        let path = TestSupport.temporaryPath("killed-early.stalls")
        defer { unlink(path) }
        let process = try startEndlessBusyStall(environment: [EnvironmentName.output: path])
        var detected = false
        for _ in 0..<600 where !detected {
            usleep(20_000)
            detected = (try? CaptureReader.read(path: path))?.stalls.first != nil
        }
        usleep(440_000)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(detected)
        let stall = try #require(try CaptureReader.read(path: path).stalls.first)
        #expect(!stall.isFinished)
        #expect(stall.samples.count >= 2)
        #expect(stall.state == .busy)
    }
}
