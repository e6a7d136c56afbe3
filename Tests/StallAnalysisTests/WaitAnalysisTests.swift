import Foundation
import StallFormat
import Testing

@testable import StallAnalysis

/// The rules that name waits from stacks, follow owner chains and rank candidates (docs/REPORT.md).
@Suite struct WaitAnalysisTests {
    @Test func theLeafMostWaitPrimitiveNamesTheWait() {
        #expect(WaitFrames.kind(leafFirst: ["syscall", "_dispatch_sync_f_slow", "main"]) == "dispatch-sync")
        #expect(WaitFrames.kind(leafFirst: ["__futex_abstimed_wait_common", "__new_sem_wait_slow64", "sem_wait"]) == "semaphore")
        #expect(WaitFrames.kind(leafFirst: ["_dispatch_futex_wait", "_dispatch_group_wait_slow", "Dispatch.DispatchGroup.wait() -> ()"]) == "group")
        #expect(WaitFrames.kind(leafFirst: ["__futex_abstimed_wait_common", "___pthread_cond_wait", "app.f()"]) == "condition")
        // A semaphore wait inside a block run by dispatch_sync on this thread is a semaphore wait.
        #expect(WaitFrames.kind(leafFirst: ["_dispatch_semaphore_wait_slow", "closure", "_dispatch_sync_invoke_and_complete", "DispatchQueue.sync"]) == "semaphore")
        #expect(WaitFrames.kind(leafFirst: ["read", "app.f()"]) == nil)
    }

    @Test func theWatchdogsKindWinsWhereItKnewTheOwnerOrTheCall() {
        let semaphoreStack = ["_dispatch_semaphore_wait_slow"]
        #expect(WaitFrames.refine(.futex, leafFirst: semaphoreStack) == "semaphore")
        #expect(WaitFrames.refine(.mutex, leafFirst: semaphoreStack) == "mutex")
        #expect(WaitFrames.refine(.io, leafFirst: semaphoreStack) == "io")
        #expect(WaitFrames.refine(.futex, leafFirst: ["f"]) == "futex")
        // A mutex wait inside pthread_cond_wait is the condition's waiter re-taking its mutex: the owner stays.
        let retake = ["__lll_lock_wait", "__pthread_mutex_cond_lock", "__pthread_cond_wait_common", "app.f()"]
        #expect(WaitFrames.refine(.mutex, leafFirst: retake) == "condition")
        #expect(WaitFrames.keepsOwner(.mutex, refined: "condition"))
        #expect(!WaitFrames.keepsOwner(.join, refined: "condition") && !WaitFrames.keepsOwner(.futex, refined: "futex"))
    }

    @Test func stacksFromMemoryAreCountedByHowTheWalkEnded() throws {
        let frames: [UInt64] = [1, 2]
        let sample = { (flags: SampleFlags) in Sample(timestampNs: 0, threadCPUNs: 0, flags: flags, frames: frames) }
        #expect(MemoryStackCounts([sample([]), sample(.repeated)]) == nil)  // signalled, or no stack: not counted
        let counts = try #require(MemoryStackCounts([
            sample(.fromStackMemory), sample([.fromStackMemory, .scannedFrames]),
            sample([.fromStackMemory, .walkStoppedNoUnwindInfo, .scannedFrames]),
            sample([.fromStackMemory, .walkStoppedFramePointer]), sample([.fromStackMemory, .walkStoppedUnusable]),
            sample([]),
        ]))
        #expect(counts.samples == 5 && counts.scanned == 2 && counts.stopped == 3)
        #expect((counts.noUnwindInfo, counts.framePointer, counts.unusable) == (1, 1, 1))
        let line = try #require(counts.line)
        #expect(line.contains("3 stopped before the outermost frame (1 no unwind information, 1 frame pointer not known"))
        #expect(MemoryStackCounts([sample(.fromStackMemory)])?.line == nil)  // all walked to the end: nothing to say
    }

    @Test func aWaitGuessedFromMemoryGivesWayToTheStack() {
        // A semaphore word that happened to look like a join or an rwlock to the watchdog.
        #expect(WaitFrames.refine(.join, leafFirst: ["__new_sem_wait_slow64", "sem_wait"]) == "semaphore")
        #expect(WaitFrames.refine(.rwlock, leafFirst: ["_IO_flockfile"]) == "rwlock")
        #expect(WaitFrames.refine(.dispatchSync, leafFirst: ["_dispatch_semaphore_wait_slow"]) == "semaphore")
        #expect(WaitFrames.refine(.join, leafFirst: ["__pthread_clockjoin_ex", "pthread_join"]) == "join")
    }

    @Test func theSelfWaitHintNeedsEveryThreadSeenAndNoCandidate() {
        var blocked = BlockedOnSummary(
            kind: "semaphore", syscall: "futex", syscallNumber: 202, argument: 0x10, detail: "", ownerTid: nil,
            ownerName: "", ownerState: nil, ownerSyscall: nil, ownerStack: [], ownerFrame: nil, ownerStackSource: nil,
            ownerStackTruncated: false)
        let thread = ThreadSummary(tid: 1, name: "main", state: "S", syscall: "futex", detail: "", waitKind: "semaphore",
                                   cpuMs: 0, stack: [], frame: nil, why: "waiting")
        blocked.threads = [thread, thread]
        blocked.threadsTotal = 2
        blocked.othersRan = false
        #expect(blocked.selfWaitHint?.kind == "self-wait")
        blocked.threadsTotal = 300  // the snapshot's budget left threads out: nothing can be said
        #expect(blocked.selfWaitHint == nil)
        blocked.threadsTotal = 2
        blocked.waitsFor = [WaitedThread(tid: 2, name: "io", state: "in read", certain: false, stack: [], frame: nil)]
        #expect(blocked.selfWaitHint == nil)
        blocked.waitsFor = []
        blocked.othersRan = nil  // a single reading
        #expect(blocked.selfWaitHint == nil)
        blocked.othersRan = false
        blocked.kind = "mutex"
        #expect(blocked.selfWaitHint == nil)
    }

    @Test func ownerChainsFindCyclesAndStopWhereTheChainEnds() throws {
        let wait = { (object: UInt64, owner: Int32) in OwnerChain.Wait(object: object, owner: owner) }
        // 1 waits for 2, 2 for 3, 3 for 1: a three-thread deadlock.
        let cycle = try #require(OwnerChain.cycle(from: 1, first: wait(0xa, 2), waits: [2: wait(0xb, 3), 3: wait(0xc, 1)]))
        #expect(cycle.map(\.tid) == [1, 2, 3])
        // 2 runs: no deadlock.
        #expect(OwnerChain.cycle(from: 1, first: wait(0xa, 2), waits: [3: wait(0xc, 1)]) == nil)
        // 1 waits behind a deadlock of 2 and 3: the cycle is theirs.
        let behind = try #require(OwnerChain.cycle(from: 1, first: wait(0xa, 2), waits: [2: wait(0xb, 3), 3: wait(0xc, 2)]))
        #expect(behind.map(\.tid) == [2, 3])
        // A long chain without a cycle stops.
        var long: [Int32: OwnerChain.Wait] = [:]
        for tid in Int32(2)...100 { long[tid] = wait(UInt64(tid), tid + 1) }
        #expect(OwnerChain.cycle(from: 1, first: wait(1, 2), waits: long) == nil)
    }

    @Test func candidatesRankThreadsThatRanThenIOThenSleepers() {
        func thread(_ tid: Int, _ kind: String, _ call: String?, cpu: Double?) -> ThreadSummary {
            ThreadSummary(tid: tid, name: "t\(tid)", state: "S", syscall: call, detail: call ?? "running", waitKind: kind,
                          cpuMs: cpu, stack: [], frame: nil, why: "")
        }
        let threads = [
            thread(1, "sleep", "clock_nanosleep", cpu: 0), thread(2, "io", "epoll_wait", cpu: 0),
            thread(3, "io", "read", cpu: 0), thread(4, "futex", "futex", cpu: 0), thread(5, "unknown", nil, cpu: nil),
            thread(6, "futex", "futex", cpu: 40), thread(7, "futex", "futex", cpu: 3),
        ]
        let ran: (ThreadSummary) -> Bool = { $0.cpuMs.map { $0 >= 1 } ?? ($0.detail == "running") }
        #expect(BlockedOnSummary.candidates(threads, ran: ran).map(\.tid) == [6, 7, 5, 3, 1])
        // A thread on the waiter's own pipe comes first.
        var writer = thread(8, "io", "write", cpu: 0)
        writer.detail = "write fd 9 (pipe:[77])"
        #expect(BlockedOnSummary.candidates(threads + [writer], ran: ran, channel: ["pipe:[77]"]).first?.tid == 8)
        // So does one on the other end of its socketpair.
        var peer = thread(9, "io", "read", cpu: 0)
        peer.detail = "read fd 4 (socket:[10], peer socket:[9])"
        let waiter = BlockedOnSummary.kernelObjects("read fd 3 (socket:[9], peer socket:[10])")
        #expect(waiter == ["socket:[9]", "socket:[10]"])
        #expect(BlockedOnSummary.candidates(threads + [peer], ran: ran, channel: waiter).first?.tid == 9)
        #expect(BlockedOnSummary.kernelObjects("read fd 5 (pipe:[77])") == ["pipe:[77]"])
        #expect(BlockedOnSummary.kernelObjects("poll 2 fds: 5 (pipe:[1]), 7 (socket:[2])") == ["pipe:[1]", "socket:[2]"])
        #expect(BlockedOnSummary.kernelObjects("clock_nanosleep 1.000 s").isEmpty)
    }
}
