import StallFormat
import Testing

@testable import StallProfiler

/// How a worker's first sample tells work from idleness (``PoolThreads/Code/runsWork(_:)``), on synthetic stacks of
/// the shapes seen with gdb: libdispatch's code at 0x1000-0x2000, the C library's at 0x3000-0x4000, anything else the
/// app's, Swift's runtimes' or a sanitizer's.
@Suite struct PoolThreadsTests {
    let code = PoolThreads.Code(dispatch: 0x1000..<0x2000, libc: 0x3000..<0x4000, rootQueue: "com.apple.root.default-qos")
    let libc: UInt64 = 0x3100, start: UInt64 = 0x3200, clone: UInt64 = 0x3300
    let dispatch: UInt64 = 0x1100, worker: UInt64 = 0x1200
    let app: UInt64 = 0x5100, runtime: UInt64 = 0x6100, sanitizerStart: UInt64 = 0x7100, interceptor: UInt64 = 0x7200

    func sample(_ frames: [UInt64], _ flags: SampleFlags = []) -> SampleRecord {
        SampleRecord(stallID: 0, timestampNs: 0, threadCPUNs: 0, flags: flags, frames: frames)
    }

    @Test func aJobOrABlockOnAWorkerIsWork() {
        // futex <- sem_wait <- the handler <- the runtime's job <- libdispatch's drain <- worker <- start_thread <- clone
        #expect(code.runsWork(sample([libc, libc, app, runtime, dispatch, worker, start, clone])))
        // Under a sanitizer: its thread start between start_thread and the worker.
        #expect(code.runsWork(sample([libc, app, runtime, dispatch, worker, sanitizerStart, start, clone])))
        // A global block: libdispatch <- the thunk <- the closure, asleep in the C library.
        #expect(code.runsWork(sample([libc, libc, app, runtime, dispatch, worker, start, clone])))
    }

    @Test func anIdleWorkerIsNot() {
        // The wait for work: libdispatch calls the C library.
        #expect(!code.runsWork(sample([libc, libc, dispatch, dispatch, worker, start, clone])))
        // AddressSanitizer: through its interceptor of sem_timedwait (one frame).
        #expect(!code.runsWork(sample([libc, libc, interceptor, dispatch, worker, sanitizerStart, start, clone])))
        // ThreadSanitizer: its interceptor of dispatch_semaphore_wait calls libdispatch back.
        #expect(!code.runsWork(sample([libc, interceptor, dispatch, dispatch, interceptor, worker, sanitizerStart, start, clone])))
    }

    @Test func aThreadThatOnlyInheritedAWorkersNameIsNot() {
        // A Thread started in a task, asleep in a queue.sync block: Foundation's thread start, the closure, sync.
        #expect(!code.runsWork(sample([libc, app, runtime, dispatch, runtime, app, runtime, runtime, start, clone])))
        // The same with the walk ending at the sanitizer's thread start (no C library frames outermost).
        #expect(!code.runsWork(sample([libc, app, runtime, dispatch, runtime, app, runtime, sanitizerStart])))
    }

    @Test func stacksThatCannotShowTheirStart() {
        #expect(code.runsWork(sample([app, app, app], .truncated)), "deeper than the buffer: work")
        #expect(code.runsWork(sample([app, libc], .walkStoppedNoUnwindInfo)), "signalled, stopped in app code")
        #expect(!code.runsWork(sample([libc, app, runtime, runtime, sanitizerStart], [.fromStackMemory, .walkStoppedFramePointer, .scannedFrames])),
                "read from memory, no libdispatch frame (a scan that missed a stray thread's sync frame)")
        #expect(!code.runsWork(sample([libc], [.fromStackMemory, .walkStoppedUnusable])), "read from memory, stopped in the C library")
        #expect(!code.runsWork(sample([])), "no frames")
        let unknown = PoolThreads.Code(dispatch: nil, libc: nil, rootQueue: code.rootQueue)
        #expect(unknown.runsWork(sample([libc])) && !unknown.runsWork(sample([])), "code unknown: any stack is work")
    }

    @Test func thePoolsDetectorDeclaresAStallBeforeAnyAnswer() {
        var detector = StallDetector(thresholdNs: 100_000_000, sampleIntervalNs: 10_000_000, episodeIDs: EpisodeIDs())
        detector.stallsBeforeAnAnswer = true
        var actions = detector.step(nowNs: 1_000_000_000, answer: nil)
        actions += detector.step(nowNs: 1_200_000_000, answer: nil)
        #expect(actions.contains { if case .beginStall(_, _, 0) = $0 { true } else { false } }, "\(actions)")
        var other = StallDetector(thresholdNs: 100_000_000, sampleIntervalNs: 10_000_000, episodeIDs: EpisodeIDs())
        var otherActions = other.step(nowNs: 1_000_000_000, answer: nil)
        otherActions += other.step(nowNs: 1_200_000_000, answer: nil)
        #expect(!otherActions.contains { if case .beginStall = $0 { true } else { false } }, "\(otherActions)")
    }
}
