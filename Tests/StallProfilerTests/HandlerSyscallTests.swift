import Foundation
import StallAnalysis
import StallFormat
import Testing

/// The capture handler makes exactly the system calls docs/WATCHDOG.md lists: `watchdog-trials handler-syscalls`
/// runs the sampled thread under a seccomp filter that kills the process (SIGSYS) on any other call, from before
/// the first handler on that thread until the process ends.
@Suite struct HandlerSyscallTests {
    static var trials: URL { TestSupport.productsDirectory.appendingPathComponent("watchdog-trials") }

    func trial(_ mode: String) throws -> (status: Int32, stderr: String, capture: Capture?) {
        let path = TestSupport.temporaryPath("handler-syscalls-\(mode).stalls")
        defer { unlink(path) }
        let result = try TestSupport.run(
            Self.trials, ["handler-syscalls", mode],
            environment: [EnvironmentName.output: path, EnvironmentName.threshold: "150", EnvironmentName.interval: "5"])
        return (result.status, result.stderr, try? CaptureReader.read(path: path))
    }

    /// The main thread, warmed up by answering pings, in a busy stall: every sample under the filter.
    @Test(.enabled(if: !MarkerNoopTests.sanitized, "a sanitizer's runtime makes system calls of its own"))
    func theMainThreadsHandlerRunsUnderAFilterOfTheListedCalls() throws {
        let run = try trial("main")
        // A forbidden call ends the process with SIGSYS (the signal number in terminationStatus).
        #expect(run.status == 0, "\(run.status): \(run.stderr)")
        #expect(run.stderr.contains("confined thread alive"), "\(run.stderr)")
        let capture = try #require(run.capture)
        let stall = try #require(capture.stalls.first)
        #expect(stall.samples.count >= 40)
        // Taken by the handler (not read from stack memory), and walked through the whole recursion.
        #expect(stall.samples.allSatisfy { !$0.flags.contains(.fromStackMemory) })
        #expect(TestSupport.stacks(of: capture).filter { TestSupport.longestRun(of: "BusyWork.descend", in: $0) >= 25 }.count >= 20)
    }

    /// A mutex's owner that never answered a ping (no alternate stack, stack bounds unknown): its one sample, a
    /// handler's first run on that thread, under the filter.
    @Test(.enabled(if: !MarkerNoopTests.sanitized, "a sanitizer's runtime makes system calls of its own"))
    func anUnpreparedOwnersHandlerRunsUnderAFilterOfTheListedCalls() throws {
        let run = try trial("owner")
        #expect(run.status == 0, "\(run.status): \(run.stderr)")
        let capture = try #require(run.capture)
        let record = try #require(capture.stalls.first?.blockedOn, "no blockedOn record")
        #expect(record.ownerFlags.contains(.signalled), "\(record)")
        let names = Symbolizer(images: capture.images).rootFirstNames(leafFirst: record.ownerFrames)
        #expect(names.filter { $0.contains("BusyWork.descend") }.count >= 25, "\(names)")
    }
}
