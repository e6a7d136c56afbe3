import CStallCapture
import Dispatch
import Foundation
import StallAnalysis
import StallFormat
import StallSamples
import Testing

@testable import StallProfiler

/// The watchdog in this process, watching a thread of the test's own that stands in for the main thread.
/// One watchdog runs per process at a time, so these tests run one after another.
@Suite(.serialized) struct WatchdogTests {
    static let standIn = StandInMainThread()

    /// Starts a watchdog on the stand-in thread, waits until it has answered a ping, runs `stall` on it, waits
    /// for it to end and for the watchdog to see the answer, stops, and reads the capture.
    func capture(stall: @escaping @Sendable () -> Void, threshold: Duration = .milliseconds(100)) throws -> Capture {
        let path = TestSupport.temporaryPath("watchdog.stalls")
        defer { unlink(path) }
        let queue = Self.standIn
        var configuration = StallWatchdog.Configuration(
            threshold: threshold, sampleInterval: .milliseconds(5), outputPath: path)
        configuration.post = { queue.post($0) }
        let watchdog = try StallWatchdog.start(configuration)
        defer { watchdog.stop() }
        while !watchdog.statistics.mainQueueAnswered { usleep(1000) }
        let done = DispatchSemaphore(value: 0)
        queue.post {
            stall()
            done.signal()
        }
        done.wait()
        // The stall ends when the watchdog sees the queue answer again.
        let before = watchdog.statistics.stalls
        for _ in 0..<100 {
            let answeredAgain = DispatchSemaphore(value: 0)
            queue.post { answeredAgain.signal() }
            answeredAgain.wait()
            usleep(50_000)
            let capture = try CaptureReader.read(path: path)
            if before > 0, capture.stalls.allSatisfy(\.isFinished) { break }
        }
        watchdog.stop()
        return try CaptureReader.read(path: path)
    }

    @Test func busyStallShowsTheRecursionInOrder() throws {
        let capture = try capture(stall: { _ = BusyWork.spin(milliseconds: 600) })
        #expect(capture.closedCleanly)
        let stall = try #require(capture.stalls.first)
        #expect(capture.stalls.count == 1)
        #expect(stall.isFinished)
        #expect(stall.state == .busy)
        #expect(stall.begin.threadID != 0)
        let stacks = TestSupport.stacks(of: capture)
        #expect(stacks.count >= 10)
        // Most samples are inside the spin, under all 30 levels of the recursion, root first.
        let deep = stacks.filter { TestSupport.longestRun(of: "BusyWork.descend", in: $0) >= BusyWork.depth }
        #expect(deep.count * 2 >= stacks.count)
        var outsideBurn = 0
        for stack in deep {
            let firstDescend = try #require(stack.firstIndex { $0.contains("BusyWork.descend") })
            #expect(stack[..<firstDescend].contains { $0.contains("BusyWork.spin") })
            if !stack[firstDescend...].contains(where: { $0.contains("BusyWork.burn") }) { outsideBurn += 1 }
        }
        // The deepest level is in `burn` but for a sample taken as the recursion goes down or unwinds (each a few
        // microseconds of the 600 ms: seen once, in a suite run beside the unwinder's CPU-heavy harness).
        #expect(outsideBurn <= 1, "\(outsideBurn) of \(deep.count) deep samples outside BusyWork.burn")
    }

    @Test func blockedStallShowsTheLockWaitAndItsSwiftCaller() throws {
        let capture = try capture(stall: { BlockedWork.waitForWorkerLock(milliseconds: 600) })
        let stall = try #require(capture.stalls.first)
        #expect(stall.state == .blocked)
        #expect((stall.activeRatio ?? 1) < 0.05)
        let stacks = TestSupport.stacks(of: capture)
        #expect(!stacks.isEmpty)
        for stack in stacks {
            let caller = try #require(stack.firstIndex { $0.contains("BlockedWork.lockContended") })
            #expect(stack[caller...].contains { $0.contains("pthread_mutex_lock") || $0.contains("lll_lock_wait") })
        }
        // A waiting thread is not kept awake by signals: after the first real sample its stack is reused.
        let real = stall.samples.filter { !$0.flags.contains(.repeated) }
        #expect(real.count <= 2)
        #expect(stall.samples.count > real.count * 5)
    }

    @Test func busyAndBlockedStallsAreToldApartByCPU() throws {
        let busy = try #require(try capture(stall: { _ = BusyWork.spin(milliseconds: 400) }).stalls.first)
        let blocked = try #require(try capture(stall: { BlockedWork.waitForWorkerLock(milliseconds: 400) }).stalls.first)
        let busyActive = try #require(busy.activeRatio), blockedActive = try #require(blocked.activeRatio)
        #expect(busyActive > 5 * blockedActive)
        #expect(blockedActive < 0.05)
        #expect(busy.state == .busy && blocked.state == .blocked)
    }

    @Test func aThreadThatBlocksTheSignalCostsMissedSamplesNotAHang() throws {
        let capture = try capture(stall: {
            var blocked = sigset_t(), previous = sigset_t()
            sigemptyset(&blocked)
            sigaddset(&blocked, SIGPROF)
            pthread_sigmask(SIG_BLOCK, &blocked, &previous)
            _ = BusyWork.spin(milliseconds: 500)
            pthread_sigmask(SIG_SETMASK, &previous, nil)
        })
        let stall = try #require(capture.stalls.first)
        let end = try #require(stall.end)
        #expect(end.missedCount >= 3)
        #expect(stall.state == .busy)
        #expect(capture.closedCleanly)
        // Nothing was captured while the signal was blocked: no sample carries the spin.
        #expect(!TestSupport.stacks(of: capture).contains { $0.contains { $0.contains("BusyWork.burn") } })
    }

    @Test func aHandlerTheAppResetsMidwayIsNeverSignalledAgain() throws {
        // The app resets SIGPROF to its default (which terminates) while the watchdog runs: a sample must not
        // kill it. The stall is still detected; its samples are missed.
        let capture = try capture(stall: {
            signal(SIGPROF, SIG_DFL)
            _ = BusyWork.spin(milliseconds: 300)
        })
        let stall = try #require(capture.stalls.first)
        #expect(stall.samples.isEmpty)
        #expect((stall.end?.missedCount ?? 0) > 0)
        // A later start installs the handler again.
        let again = try self.capture(stall: { _ = BusyWork.spin(milliseconds: 300) })
        #expect(again.stalls.first?.samples.isEmpty == false)
    }

    @Test func ignoredAndCrashSignalsAreRefused() throws {
        signal(SIGUSR1, SIG_IGN)
        defer { signal(SIGUSR1, SIG_DFL) }
        var configuration = StallWatchdog.Configuration(outputPath: TestSupport.temporaryPath("ign.stalls"))
        configuration.signal = SIGUSR1
        #expect(throws: StallWatchdogError.signalInUse(SIGUSR1)) { try StallWatchdog.start(configuration) }
        for crash in [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGCHLD, SIGKILL] {
            configuration.signal = crash
            #expect(throws: StallWatchdogError.self) { try StallWatchdog.start(configuration) }
        }
    }

    @Test func aFIFOIsNotACaptureFile() throws {
        let fifo = TestSupport.temporaryPath("capture.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        // Opening a FIFO nobody reads must fail at once, never block start().
        #expect(throws: StallWatchdogError.self) { try StallWatchdog.start(.init(outputPath: fifo)) }
    }

    @Test func aLibraryLoadedBeforeAStallIsInTheFileWhileTheStallLasts() throws {
        let path = TestSupport.temporaryPath("dlopen.stalls")
        defer { unlink(path) }
        var configuration = StallWatchdog.Configuration(
            threshold: .milliseconds(100), sampleInterval: .milliseconds(5), outputPath: path)
        configuration.post = { Self.standIn.post($0) }
        let watchdog = try StallWatchdog.start(configuration)
        defer { watchdog.stop() }
        while !watchdog.statistics.mainQueueAnswered { usleep(1000) }
        let before = try CaptureReader.read(path: path)
        // A library nothing else in this test process loads (libbz2 was: libdw, which the analyzer's tests load,
        // needs it).
        #expect(!before.images.contains { $0.path.contains("libexpat") })
        let handle = try #require(dlopen("libexpat.so.1", RTLD_NOW))
        defer { dlclose(handle) }
        let done = DispatchSemaphore(value: 0)
        Self.standIn.post {
            _ = BusyWork.spin(milliseconds: 500)
            done.signal()
        }
        // Read the file while the stall is still going on: as a killed process would leave it.
        var during: Capture? = nil
        for _ in 0..<100 {
            usleep(20_000)
            if let capture = try? CaptureReader.read(path: path), capture.stalls.first?.samples.isEmpty == false {
                during = capture
                break
            }
        }
        done.wait()
        let capture = try #require(during)
        #expect(capture.stalls.first?.isFinished == false)
        let image = try #require(capture.images.first { $0.path.contains("libexpat") })
        #expect(!image.buildID.isEmpty)
        // The bias from the kernel's map agrees with the loader's: a symbol of the library resolves by name.
        let symbol = try #require(dlsym(handle, "XML_ExpatVersion"))
        let name = Symbolizer(images: capture.images).name(for: UInt64(UInt(bitPattern: symbol)), isReturnAddress: false)
        #expect(name == "XML_ExpatVersion")
    }

    @Test func onlyOneWatchdogRunsAtATime() throws {
        let path = TestSupport.temporaryPath("one.stalls")
        defer { unlink(path) }
        let first = try StallWatchdog.start(.init(outputPath: path))
        #expect(throws: StallWatchdogError.alreadyRunning) { try StallWatchdog.start(.init(outputPath: path + "2")) }
        first.stop()
        first.stop()  // idempotent
        let second = try StallWatchdog.start(.init(outputPath: path))
        second.stop()
        let capture = try CaptureReader.read(path: path)
        #expect(capture.closedCleanly)
        #expect(capture.process?.pid == getpid())
        #expect(capture.images.contains { $0.path.hasSuffix("xctest") || $0.path.contains("PackageTests") })
    }

    @Test func aSignalTheAppAlreadyHandlesIsRefused() throws {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in }
        sigemptyset(&action.sa_mask)
        sigaction(SIGUSR2, &action, nil)
        defer {
            var restore = sigaction()
            restore.__sigaction_handler.sa_handler = SIG_DFL
            sigaction(SIGUSR2, &restore, nil)
        }
        var configuration = StallWatchdog.Configuration(outputPath: TestSupport.temporaryPath("sig.stalls"))
        configuration.signal = SIGUSR2
        #expect(throws: StallWatchdogError.signalInUse(SIGUSR2)) { try StallWatchdog.start(configuration) }
    }

    @Test func anUnwritablePathIsAClearError() {
        #expect(throws: StallWatchdogError.self) {
            try StallWatchdog.start(.init(outputPath: "/nonexistent-dir/x.stalls"))
        }
    }
}
