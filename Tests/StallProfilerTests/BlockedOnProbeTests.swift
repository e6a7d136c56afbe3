import CStallCapture
import Foundation
import StallAnalysis
import StallFormat
import StallSamples
import Synchronization
import Testing

@testable import StallProfiler

/// The pieces of the blocked-on probe in this process: the /proc syscall parser, the mutex owner, the stack
/// read from memory and the probe itself on threads of the test's own.
@Suite struct BlockedOnProbeTests {
    @Test func parsesASyscallLine() {
        let state = SyscallState(parsing: "202 0x7f00aa10 0x80 0x2 0x0 0x0 0x0 0x7ffd1230 0x7f00bb45\n")
        #expect(state.kind == .inCall)
        #expect(state.number == 202)
        #expect(state.arguments == [0x7f00aa10, 0x80, 2, 0, 0, 0])
        #expect(state.stackPointer == 0x7ffd1230 && state.programCounter == 0x7f00bb45)
    }

    @Test func parsesRunningAndUserModeLines() {
        #expect(SyscallState(parsing: "running\n").kind == .running)
        let user = SyscallState(parsing: "-1 0x7ffd1230 0x55aa10\n")
        #expect(user.kind == .user && user.number == -1)
        #expect(user.stackPointer == 0x7ffd1230 && user.programCounter == 0x55aa10)
    }

    @Test(arguments: [
        "", "\n", "runningx\n", "202 0x1 0x2\n", "202 0x1 0x2 0x3 0x4 0x5 0x6 0x7\n",
        "202 0x1 0x2 0x3 0x4 0x5 0x6 0x7 0x8 0x9\n", "202 0x1 0x2 0x3 0x4 0x5 0x6 0x7 zz\n",
        "-2 0x1 0x2\n", "202 0x1 -0x2 0x3 0x4 0x5 0x6 0x7 0x8\n", "202 0x11111111111111111 0 0 0 0 0 0 0\n",
        "0x 1 2 3 4 5 6 7 8\n", "99999999999 0 0 0 0 0 0 0 0\n",
    ])
    func rejectsMalformedLines(_ text: String) {
        #expect(SyscallState(parsing: text).kind == .unknown, "\(text.debugDescription)")
    }

    @Test func glibcMutexLayoutHoldsHere() {
        #expect(stallcap_mutex_layout_ok() == 1)
    }

    @Test func aThreadWaitingForAMutexNamesItsOwnerAndTheOwnersStack() throws {
        let holder = SleepingHolder(milliseconds: 1500)
        let waiter = try #require(holder.startWaiter())
        let probe = BlockedOnProbe(configuration: .init(outputPath: "/dev/null"))
        // The waiter first waits on a semaphore (a futex without an owner) until the holder has the lock.
        var record = probe.probe(stallID: 1, threadID: waiter)
        for _ in 0..<1000 where record.waitKind != .mutex {
            usleep(1000)
            record = probe.probe(stallID: 1, threadID: waiter)
        }
        // Probed once more while the holder still sleeps: symbolizing first could outlast its 1.5 s (under TSan).
        let first = probe.probeOnce(stallID: 2, threadID: waiter), second = probe.probeOnce(stallID: 2, threadID: waiter)
        let names = symbolize(record.ownerFrames)
        #expect(record.waitKind == .mutex, "\(record)")
        #expect(record.ownerTID > 0 && record.ownerTID != waiter)
        #expect(record.ownerName == "lock-holder")
        #expect(record.ownerFlags.contains(.fromStackMemory))
        #expect(names.contains { $0.contains("BlockedWork.holdLock") }, "\(names)")
        #expect(first != nil)
        #expect(second == nil)
        holder.finish()
    }

    @Test func aReadFromAPipeIsNamedByItsSyscallAndTarget() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let tid = ThreadID()
        let reader = fds[0]
        let thread = Thread {
            tid.publish()
            var byte: UInt8 = 0
            _ = read(reader, &byte, 1)
        }
        thread.start()
        let waiter = try #require(waitUntilBlocked(tid))
        let record = BlockedOnProbe(configuration: .init(outputPath: "/dev/null")).probe(stallID: 1, threadID: waiter)
        #expect(record.waitKind == .io, "\(record)")
        #expect(record.detail.hasPrefix("read fd \(reader) (pipe:["), "\(record.detail)")
        #expect(record.ownerTID == 0 && record.ownerFrames.isEmpty)
        _ = write(fds[1], "x", 1)
    }

    @Test func aConditionVariableWaitIsAFutexWithoutOwner() throws {
        let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_cond_init(condition, nil)
        pthread_mutex_init(mutex, nil)
        let flag = Flag(), done = Flag()
        let tid = ThreadID()
        nonisolated(unsafe) let (c, m) = (condition, mutex)
        let thread = Thread {
            tid.publish()
            pthread_mutex_lock(m)
            while !flag.value.load(ordering: .acquiring) { pthread_cond_wait(c, m) }
            pthread_mutex_unlock(m)
            done.value.store(true, ordering: .releasing)
        }
        thread.start()
        let waiter = try #require(waitUntilBlocked(tid))
        let record = BlockedOnProbe(configuration: .init(outputPath: "/dev/null")).probe(stallID: 1, threadID: waiter)
        #expect(record.waitKind == .futex, "\(record)")
        #expect(record.ownerTID == 0 && record.ownerFrames.isEmpty)
        #expect(record.detail.hasPrefix("futex"), "\(record.detail)")
        pthread_mutex_lock(mutex)
        flag.value.store(true, ordering: .releasing)
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
        while !done.value.load(ordering: .acquiring) { usleep(1000) }
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    private func symbolize(_ frames: [UInt64]) -> [String] {
        var images: [ImageRecord] = []
        _ = ImageMap.current().0.map { images.append($0) }
        return Symbolizer(images: images).rootFirstNames(leafFirst: frames)
    }
}

/// A flag shared between threads.
final class Flag: Sendable {
    /// The flag.
    let value = Atomic<Bool>(false)
}

/// A thread's kernel tid, published by the thread itself.
final class ThreadID: Sendable {
    private let value = Atomic<Int32>(0)
    /// Publishes the calling thread's tid.
    func publish() { value.store(stallcap_gettid(), ordering: .releasing) }
    /// The tid, 0 until published.
    var tid: Int32 { value.load(ordering: .acquiring) }
}

/// Waits until the thread whose tid `tid` publishes sleeps in a system call; its tid, or nil after 5 s.
func waitUntilBlocked(_ tid: ThreadID) -> Int32? {
    for _ in 0..<5000 {
        let value = tid.tid
        if value != 0, SyscallState(thread: value).kind == .inCall, stallcap_thread_state(value) == CChar(UInt8(ascii: "S")) {
            return value
        }
        usleep(1000)
    }
    return nil
}

/// `BlockedWork` in this process: a waiter thread asks for a mutex that a `lock-holder` thread holds while it
/// sleeps.
final class SleepingHolder: Sendable {
    let milliseconds: Int
    private let done = Atomic<Bool>(false)

    init(milliseconds: Int) { self.milliseconds = milliseconds }

    /// Starts `BlockedWork.waitForWorkerLock` on a thread of its own; returns that thread's tid once it waits.
    func startWaiter() -> Int32? {
        let tid = ThreadID()
        let ms = milliseconds
        Thread { [self] in
            tid.publish()
            BlockedWork.waitForWorkerLock(milliseconds: ms)
            self.done.store(true, ordering: .releasing)
        }.start()
        return waitUntilBlocked(tid)
    }

    /// Waits for the waiter to get its lock.
    func finish() {
        while !done.load(ordering: .acquiring) { usleep(5000) }
    }
}
