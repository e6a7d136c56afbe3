import CStallCapture
import Glibc
import StallFormat

/// Finds what a blocked thread waits for and, for a pthread mutex, who holds it: once per stall, on the watchdog
/// thread.
///
/// The blocked thread is never signalled: its system call and arguments come from
/// `/proc/self/task/<tid>/syscall`. For a futex wait that is a glibc mutex lock wait, the owner's tid is read from
/// the mutex (`__owner`, 8 bytes after the futex word; the layout is checked at start-up, see
/// `stallcap_mutex_layout_ok`) with process_vm_readv. The owner is sampled once: with the capture signal when it
/// is running, and from its stack memory when it sleeps in a system call, because a signal would cut its sleep
/// short (no EINTR, no early return for the app).
final class BlockedOnProbe {
    let timeoutNs: Int64
    var buffer: [UInt]
    private var probedStall: UInt32? = nil
    /// The episode whose wait was found (a record was returned for it).
    var probedStallID: UInt32? { probedStall }
    var classifier = WaitClassifier()
    /// The episode the last thread snapshot was taken for, and when (see BlockedOnProbe+Threads.swift).
    var snapshotStall: UInt32? = nil
    var lastSnapshotNs: UInt64 = 0
    /// Every thread's CPU time when the episode in progress was detected (written before its first snapshot).
    var baseline: ThreadsRecord? = nil
    /// The episode whose CPU reading waits for the dispatch_sync experiment to end, and when it was detected.
    var pendingBaseline: UInt32? = nil
    var stallBeganNs: UInt64 = 0

    /// A probe that samples owners with `timing`'s owner timeout and at most `maxFrames` frames.
    init(timing: WatchdogTiming, maxFrames: Int) {
        timeoutNs = timing.ownerSampleTimeoutNs
        buffer = [UInt](repeating: 0, count: max(1, maxFrames))
        _ = stallcap_mutex_layout_ok()  // the layout check, once, at start-up
    }

    /// A probe with `configuration`'s timing and frames.
    convenience init(configuration: StallWatchdog.Configuration) {
        self.init(timing: WatchdogTiming(configuration), maxFrames: configuration.maxFrames)
    }

    /// Probes `threadID` for stall `stallID` unless this stall was probed already. A thread found outside a
    /// system call (on a CPU, or preempted and waiting for one: a busy stall on a loaded machine makes no CPU
    /// progress between two samples either) waits for nothing the probe can name: no record, and the stall is
    /// probed again at its next idle sample.
    func probeOnce(stallID: UInt32, threadID: Int32) -> BlockedOnRecord? {
        guard probedStall != stallID else { return nil }
        let record = probe(stallID: stallID, threadID: threadID)
        guard record.syscall >= 0 else { return nil }
        // A futex wait nobody owns may be a dispatch_sync whose layout is being learned: looked at again at the
        // next idle sample, until the experiment ends (at most `learningWaitNs` after the stall's detection).
        if record.waitKind == .futex && learningHoldsBack { return nil }
        probedStall = stallID
        return record
    }

    /// What `threadID` waits for now.
    func probe(stallID: UInt32, threadID: Int32) -> BlockedOnRecord {
        let state = SyscallState(thread: threadID)
        var record = BlockedOnRecord(
            stallID: stallID, timestampNs: stallcap_monotonic_ns(), waitKind: .unknown,
            syscall: state.kind == .inCall ? state.number : -1, argument: state.arguments[0])
        guard state.kind == .inCall else { return record }
        let wait = classifier.classify(state, thread: threadID)
        record.waitKind = wait.kind
        record.detail = wait.detail
        record.queueLabel = wait.queueLabel
        if wait.kind == .futex && stallcap_mutex_layout_ok() == 0 {
            record.detail += " (mutex layout check failed: owners not read)"
        }
        let address = "0x\(String(state.arguments[0], radix: 16))"
        let what: String
        switch wait.kind {
        case .mutex: what = "mutex at \(address) held by"
        case .rwlock: what = "rwlock at \(address) write-locked by"
        case .join: what = "joining"
        case .dispatchSync:
            let queue = wait.queueLabel.isEmpty ? "a serial queue" : "queue '\(wait.queueLabel)'"
            guard wait.owner > 0 else {
                record.detail = "DispatchQueue.sync onto \(queue), which no thread was running"
                return record
            }
            what = "DispatchQueue.sync onto \(queue), running a block on"
        default: return record
        }
        let owner = wait.owner
        record.ownerTID = owner
        record.ownerName = Self.threadName(owner)
        record.ownerState = UInt8(bitPattern: stallcap_thread_state(owner))
        let ownerCall = sampleOwner(owner, into: &record)
        let letter = record.ownerState == 0 ? "?" : String(UnicodeScalar(record.ownerState))
        let doing = ownerCall.map { "in \($0)" } ?? (record.ownerFlags.contains(.signalled) ? "running" : "state \(letter)")
        record.detail = "\(what) thread \(owner)" + (record.ownerName.isEmpty ? "" : " (\(record.ownerName))") + ", \(doing)"
        return record
    }

    /// Takes the owner's stack once (see ``takeStack(_:state:again:)``) into `record`. Returns the owner's system
    /// call, described, when it was in one.
    private func sampleOwner(_ owner: Int32, into record: inout BlockedOnRecord) -> String? {
        let stack = takeStack(owner, state: record.ownerState)
        record.ownerFrames = stack.frames
        record.ownerFlags = stack.flags
        record.ownerSyscall = stack.syscall
        return stack.call.map(SyscallDetail.describe)
    }

    /// A thread's stack, taken once.
    struct ThreadStack {
        /// Leaf first.
        var frames: [UInt64] = []
        /// How it was taken.
        var flags: BlockedOnRecord.OwnerFlags = []
        /// The system call the thread was in, -1 when none.
        var syscall: Int32 = -1
        /// The state the stack was read in, when the thread was in a system call; nil otherwise.
        var call: SyscallState? = nil
        /// A signal request was made (the caller waited for the thread's handler, answered or not).
        var requested = false
    }

    /// Takes `tid`'s stack once: signalled when running (state letter `state` R), from stack memory when it sleeps
    /// in a system call (never a signal then: no EINTR, no sleep cut short). Each request waits at most two ticks
    /// (`stallcap_sample`): for a thread still runnable then (on a loaded machine it may wait longer for a CPU) the
    /// request stays armed and is waited for again, within `timeoutNs`; one that entered a system call meanwhile is
    /// looked at once more (`again`).
    /// `known`: the thread's syscall state when the caller has just read it (it is read otherwise).
    func takeStack(
        _ tid: Int32, state letter: UInt8, known: SyscallState? = nil, timeoutNs: Int64? = nil, again: Bool = true
    ) -> ThreadStack {
        let timeoutNs = timeoutNs ?? self.timeoutNs
        let state = known ?? SyscallState(thread: tid)
        let runnable = state.kind == .running || (state.kind == .user && letter == UInt8(ascii: "R"))
        var stack = ThreadStack()
        switch state.kind {
        case _ where runnable:
            stack.requested = true
            var info = stallcap_sample_info()
            let deadline = stallcap_monotonic_ns() &+ UInt64(max(0, timeoutNs))
            var status = STALLCAP_TIMEOUT, latest = state
            repeat {
                let left = Int64(clamping: deadline &- min(deadline, stallcap_monotonic_ns()))
                status = buffer.withUnsafeMutableBufferPointer {
                    stallcap_sample(tid, left, $0.baseAddress, UInt32($0.count), &info)
                }
                if status == STALLCAP_TIMEOUT { latest = SyscallState(thread: tid) }
                if status == STALLCAP_BUSY { usleep(1000) }  // its handler was preempted: the next call collects it
            } while (status == STALLCAP_BUSY || (status == STALLCAP_TIMEOUT && latest.kind == .running))
                && stallcap_monotonic_ns() < deadline
            if status == STALLCAP_TIMEOUT && latest.kind == .inCall && again {
                // It went to sleep after stallcap_sample last looked: that request is still armed.
                stallcap_sample_cancel_thread(tid)
                return takeStack(tid, state: letter, known: latest, timeoutNs: timeoutNs, again: false)
            }
            guard status == STALLCAP_OK else {
                stallcap_sample_cancel_thread(tid)  // the thread is sampled once: no signal for it later
                return stack
            }
            stack.flags.insert(.signalled)
            if info.flags & UInt32(STALLCAP_FLAG_TRUNCATED) != 0 { stack.flags.insert(.truncated) }
            stack.frames = buffer[0..<Int(info.frame_count)].map { UInt64($0) }
        case .inCall, .user:
            if state.kind == .inCall { stack.syscall = state.number }
            let read = MemoryStack.read(state, into: &buffer)
            stack.flags.insert(.fromStackMemory)
            if read.truncated { stack.flags.insert(.truncated) }
            stack.frames = buffer[0..<read.count].map { UInt64($0) }
            stack.call = state.kind == .inCall ? state : nil
        case .running, .unknown:
            break  // not runnable by its state letter: no signal, no stack
        }
        return stack
    }

    /// The thread's `comm`, empty when unreadable.
    static func threadName(_ tid: Int32) -> String {
        var name = [CChar](repeating: 0, count: 64)
        let length = name.withUnsafeMutableBufferPointer { stallcap_thread_comm(tid, $0.baseAddress, $0.count) }
        guard length > 0 else { return "" }
        return String(decoding: name[0..<Int(length)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
