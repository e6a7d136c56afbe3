import CStallCapture
import StallFormat

/// Every thread in view during a blocked episode: snapshots of the process's threads, on the watchdog thread.
///
/// A snapshot lists each thread (at most ``maxThreads``, within ``budgetNs`` of the watchdog's CPU and of signalled
/// samples' waits, and ``wallBudgetNs``) with its name, state letter, CPU time (schedstat), what it waits for
/// (``WaitClassifier``) and its stack: read from stack memory when it sleeps in a system call, taken with the
/// capture signal only when it runs. The watchdog's own thread is left out.
extension BlockedOnProbe {
    /// Most threads a snapshot looks at; a process with more says how many there were.
    static let maxThreads = 512
    /// CPU time of the watchdog thread a snapshot may use before it stops looking at more threads, nanoseconds.
    static let budgetNs: UInt64 = 50_000_000
    /// Wall time a snapshot may take, nanoseconds: its CPU budget stretched by a loaded machine (the watchdog waits
    /// for a CPU meanwhile, which the pause detector reads from schedstat).
    static let wallBudgetNs: UInt64 = 4 * budgetNs
    /// Least time between two snapshots of one episode, nanoseconds.
    static let snapshotIntervalNs: UInt64 = 1_000_000_000

    /// A stall was detected: starts learning the dispatch_sync layout if it is not known (off this thread), and
    /// reads every thread's CPU time (kept, written only if the stall turns out blocked) now, or once the
    /// experiment ended (its threads' CPU is not the app's).
    /// With `baseline` false (a pool member that takes no snapshots), no CPU reading is taken.
    func stallBegan(stallID: UInt32, baseline takesBaseline: Bool = true) {
        classifier.learning.start()
        stallBeganNs = stallcap_monotonic_ns()
        baseline = nil
        pendingBaseline = takesBaseline ? stallID : nil
        takeBaselineIfDue()
    }

    /// Most time after a stall's detection that its probe and CPU reading wait for the dispatch_sync experiment,
    /// nanoseconds: a short stall keeps its record and snapshot even when the experiment is slow.
    static let learningWaitNs: UInt64 = 100_000_000

    /// True while the experiment runs, for at most ``learningWaitNs`` after the stall's detection.
    var learningHoldsBack: Bool {
        classifier.learning.isRunning && stallcap_monotonic_ns() &- stallBeganNs < Self.learningWaitNs
    }

    /// Takes the pending CPU reading of ``stallBegan(stallID:)`` unless the experiment holds it back. Called at
    /// each sample of the episode.
    func takeBaselineIfDue() {
        guard let stallID = pendingBaseline, !learningHoldsBack else { return }
        pendingBaseline = nil
        baseline = snapshot(stallID: stallID, phase: .cpu)
    }

    /// When the episode `stallID`'s wait was found (``probeOnce(stallID:threadID:)`` returned a record for it): the
    /// CPU reading taken at its detection, if any, and a snapshot of every thread; again a snapshot when the last one
    /// is a second old; nothing otherwise.
    func snapshotIfDue(stallID: UInt32) -> [ThreadsRecord] {
        guard probedStallID == stallID else { return [] }
        let now = stallcap_monotonic_ns()
        if snapshotStall == stallID && now &- lastSnapshotNs < Self.snapshotIntervalNs { return [] }
        if pendingBaseline == stallID { return [] }  // the experiment still runs: its CPU would count as the app's
        let first = snapshotStall != stallID ? baseline.flatMap { $0.stallID == stallID ? $0 : nil } : nil
        snapshotStall = stallID
        lastSnapshotNs = now
        baseline = nil
        return (first.map { [$0] } ?? []) + [snapshot(stallID: stallID, phase: .snapshot)]
    }

    /// The CPU-only reading at the end of episode `stallID` when a snapshot was taken for it; nil otherwise.
    func endReading(stallID: UInt32) -> ThreadsRecord? {
        guard snapshotStall == stallID else { return nil }
        snapshotStall = nil
        return snapshot(stallID: stallID, phase: .cpu)
    }

    /// Looks at every thread of the process (but this one).
    func snapshot(stallID: UInt32, phase: ThreadsRecord.Phase) -> ThreadsRecord {
        let start = stallcap_monotonic_ns()
        var tids = [Int32](repeating: 0, count: Self.maxThreads + 1)
        var total: Int32 = 0
        let listed = tids.withUnsafeMutableBufferPointer {
            stallcap_list_threads($0.baseAddress, Int32($0.count), &total)
        }
        let me = stallcap_gettid()
        let startCPU = stallcap_thread_cpu_ns(me)
        var threads: [ThreadState] = []
        var vanished: Int32 = 0
        var signalWaitNs: UInt64 = 0
        if phase == .snapshot { stallcap_maps_hold() }  // one reading of /proc/self/maps for every stack
        defer { stallcap_maps_release() }
        for tid in tids.prefix(Int(max(0, listed))) where tid != me {
            let spent = stallcap_monotonic_ns() &- start
            let used = startCPU < 0 ? 0 : UInt64(max(0, stallcap_thread_cpu_ns(me) - startCPU))  // no clock: wall only
            guard threads.count < Self.maxThreads, used < Self.budgetNs, spent < Self.wallBudgetNs else { break }
            var run: UInt64 = 0, wait: UInt64 = 0
            guard stallcap_thread_schedstat(tid, &run, &wait) == 0 else {  // it exited: not a thread of the process
                vanished += 1
                continue
            }
            var thread = ThreadState(tid: tid, cpuNs: run)
            if phase == .snapshot {
                // Signal requests wait for their threads' handlers (answered or not): at most ``budgetNs`` in all,
                // and never past the wall budget.
                let before = stallcap_monotonic_ns()
                let left = min(Self.budgetNs &- min(signalWaitNs, Self.budgetNs), Self.wallBudgetNs &- spent)
                if describe(&thread, budgetLeftNs: left) { signalWaitNs &+= stallcap_monotonic_ns() &- before }
            }
            threads.append(thread)
        }
        return ThreadsRecord(
            stallID: stallID, timestampNs: start, phase: phase, totalThreads: UInt32(max(0, total - 1 - vanished)),
            threads: threads)
    }

    /// Fills in a thread's name, state, wait and stack. Returns true when a signal request was made for the stack.
    private func describe(_ thread: inout ThreadState, budgetLeftNs: UInt64) -> Bool {
        thread.name = Self.threadName(thread.tid)
        thread.state = UInt8(bitPattern: stallcap_thread_state(thread.tid))
        let state = SyscallState(thread: thread.tid)
        if state.kind == .inCall {
            thread.syscall = state.number
            let wait = classifier.classify(state, thread: thread.tid)
            thread.waitKind = wait.kind
            thread.object = wait.object
            thread.ownerTID = wait.owner
            thread.queueLabel = wait.queueLabel
            thread.detail = wait.detail
        } else {
            thread.detail = state.kind == .unknown ? "" : "running"
        }
        let stack = takeStack(
            thread.tid, state: thread.state, known: state, timeoutNs: min(timeoutNs, Int64(clamping: budgetLeftNs)))
        thread.frames = stack.frames
        thread.flags = stack.flags
        return stack.requested
    }
}
