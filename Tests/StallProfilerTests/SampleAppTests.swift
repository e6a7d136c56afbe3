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
        if launcher == .runloop { #expect(stall.begin.threadID == capture.process?.pid) }
        let stacks = TestSupport.stacks(of: capture)
        #expect(stacks.contains { TestSupport.longestRun(of: "BusyWork.descend", in: $0) >= BusyWork.depth })
    }

    @Test(arguments: Launcher.allCases)
    func blockedStallUnder(_ launcher: Launcher) throws {
        let capture = try run(launcher, .blocked)
        let stall = try #require(capture.stalls.first)
        #expect(stall.state == .blocked)
        let stacks = TestSupport.stacks(of: capture)
        #expect(!stacks.isEmpty)
        #expect(stacks.allSatisfy { stack in stack.contains { $0.contains("BlockedWork.lockContended") } })
    }

    @Test func sigkillMidStallLosesNothingFlushed() throws {
        let path = TestSupport.temporaryPath("killed.stalls")
        defer { unlink(path) }
        let process = Process()
        process.executableURL = Launcher.runloop.executable
        process.arguments = ["--stall", "busy", "--stall-ms", "60000"]
        process.environment = [EnvironmentName.output: path, EnvironmentName.threshold: "100", EnvironmentName.interval: "5"]
        try process.run()
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
}
