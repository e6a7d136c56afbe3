import CStallCapture
import Foundation
import StallFormat
import Testing

/// What a host app can do to its own process that must not turn the watchdog against it: run its main thread
/// with little stack left, fork. Each runs `watchdog-trials` as a separate process.
@Suite struct HostSurvivalTests {
    static var trials: String { TestSupport.productsDirectory.appendingPathComponent("watchdog-trials").path }
    static let environment = [EnvironmentName.threshold: "150", EnvironmentName.interval: "5"]

    @Test func aMainThreadWithEightKiBOfStackLeftIsSampledWithoutCrashing() throws {
        let path = TestSupport.temporaryPath("small-stack.stalls")
        defer { unlink(path) }
        // A 256 KiB main stack; the stall recurses until less than 8 KiB is left and spins there. With libunwind the
        // handler needed more than that: on the thread's own stack it overflowed it (SIGSEGV, exit 139).
        let result = try TestSupport.run(
            URL(fileURLWithPath: "/bin/sh"), ["-c", "ulimit -s 256 && exec \"$0\" small-stack", Self.trials],
            environment: Self.environment.merging([EnvironmentName.output: path]) { $1 })
        #expect(result.status == 0, "\(result.stderr)")
        let capture = try CaptureReader.read(path: path)
        let stall = try #require(capture.stalls.first)
        #expect(stall.state == .busy)
        // The samples were taken at the bottom of the recursion, and unwound through it.
        let deep = TestSupport.stacks(of: capture).filter {
            TestSupport.longestRun(of: "descendToHeadroom", in: $0) >= 100
        }
        #expect(deep.count >= 5)
    }

    @Test func aForkedChildStartsItsOwnWatchdog() throws {
        let parentPath = TestSupport.temporaryPath("parent.stalls"), childPath = TestSupport.temporaryPath("child.stalls")
        defer {
            unlink(parentPath)
            unlink(childPath)
        }
        // Before: the child's start() threw alreadyRunning (exit 3), the parent's watchdog being "running" there.
        let result = try TestSupport.run(
            URL(fileURLWithPath: Self.trials), ["fork", childPath],
            environment: Self.environment.merging([EnvironmentName.output: parentPath]) { $1 })
        #expect(result.status == 0, "\(result.stderr)")
        let parent = try CaptureReader.read(path: parentPath), child = try CaptureReader.read(path: childPath)
        #expect(parent.closedCleanly && child.closedCleanly)
        #expect(child.process?.pid != parent.process?.pid)
        let stall = try #require(child.stalls.first)
        #expect(stall.state == .busy)
        #expect(TestSupport.stacks(of: child).contains { TestSupport.longestRun(of: "BusyWork.descend", in: $0) >= 20 })
        // The child's marker rings start empty and free: its 40 markers (32 in its ring, 8 in the shared ring), none
        // of the parent's, whatever the parent's flooding thread was doing when the process forked.
        #expect(child.markers.map(\.name) == (0..<40).map { "child \($0)" })
        #expect(child.droppedMarkers == 0)
        #expect(parent.markers.contains { $0.name == "parent" })
    }

    /// On a fresh thread: the alternate stack before and after `stallcap_warm_thread`, with or without one of the
    /// app's own installed first.
    static func altStacks(appHasOne: Bool) -> (before: stack_t, after: stack_t) {
        nonisolated(unsafe) var result = (stack_t(), stack_t())
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            let own = UnsafeMutableRawPointer.allocate(byteCount: 32 * 1024, alignment: 16)
            if appHasOne {
                var mine = stack_t(ss_sp: own, ss_flags: 0, ss_size: 32 * 1024)
                sigaltstack(&mine, nil)
            }
            sigaltstack(nil, &result.0)
            stallcap_warm_thread()
            sigaltstack(nil, &result.1)
            var off = stack_t(ss_sp: nil, ss_flags: Int32(SS_DISABLE), ss_size: 0)
            if appHasOne { sigaltstack(&off, nil) }
            own.deallocate()
            done.signal()
        }
        thread.start()
        done.wait()
        return result
    }

    @Test func aThreadThatAnswersGetsAnAlternateStackButAnAppsOwnIsKept() {
        let fresh = Self.altStacks(appHasOne: false)
        #expect(fresh.before.ss_flags & Int32(SS_DISABLE) != 0)
        #expect(fresh.after.ss_flags & Int32(SS_DISABLE) == 0)
        #expect(fresh.after.ss_size == 64 * 1024)
        let apps = Self.altStacks(appHasOne: true)
        #expect(apps.before.ss_sp != nil)
        #expect(apps.after.ss_sp == apps.before.ss_sp)
        #expect(apps.after.ss_size == 32 * 1024)
    }
}
