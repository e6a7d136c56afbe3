import CStallCapture
import StallFormat

/// What a thread sleeping in a system call waits for, as far as the watchdog can tell from /proc and memory
/// (no symbols: semaphores, groups and condition variables look alike here, a futex without a known owner; the
/// analyzer names them from the stack).
struct WaitClassifier {
    /// One thread's wait.
    struct Wait {
        /// The kind of wait.
        var kind: BlockedOnRecord.WaitKind = .unknown
        /// The futex word's address, or the descriptor; 0 when none.
        var object: UInt64 = 0
        /// The thread waited for, known for certain (a mutex's owner, a queue's running thread, a joined thread, an
        /// rwlock's writer); 0 otherwise.
        var owner: Int32 = 0
        /// The label of the queue of a `dispatch-sync` wait.
        var queueLabel = ""
        /// The system call, described (`read fd 5 (pipe:[1234])`).
        var detail = ""
    }

    /// The dispatch_sync layout, learned off the watchdog thread (``DispatchSyncLayout/Learning``), once per
    /// process: every target's probe (a starved pool's threads each have one) shares the one experiment.
    let learning = DispatchSyncLayout.Learning.shared

    /// Descriptor system calls (an `io` wait).
    static let ioCalls: Set<String> = [
        "read", "write", "readv", "writev", "pread64", "pwrite64", "accept", "accept4", "connect", "recvfrom",
        "recvmsg", "sendto", "sendmsg", "poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait",
        "epoll_pwait2", "flock",
    ]

    /// Classifies the wait of `thread`, whose syscall state is `state`.
    func classify(_ state: SyscallState, thread: Int32) -> Wait {
        var wait = Wait(detail: SyscallDetail.describe(state))
        guard state.kind == .inCall else { return wait }
        let name = SyscallDetail.name(state.number)
        wait.object = state.arguments[0]
        switch name {
        case "futex":
            wait.kind = .futex
            var raw = state.raw
            if case let owner = stallcap_futex_mutex_owner(&raw, thread), owner > 0 {
                (wait.kind, wait.owner) = (.mutex, owner)
            } else if let sync = layout()?.wait(state, waiter: thread) {
                (wait.kind, wait.owner, wait.queueLabel) = (.dispatchSync, sync.owner, sync.label)
            } else if case let joined = stallcap_futex_join_target(&raw, thread), joined > 0 {
                (wait.kind, wait.owner) = (.join, joined)
            } else if case let writer = stallcap_futex_rwlock_writer(&raw, thread), writer > 0 {
                (wait.kind, wait.owner) = (.rwlock, writer)
            }
        case _ where Self.ioCalls.contains(name):
            wait.kind = .io
            if ["poll", "ppoll"].contains(name) { wait.object = 0 }  // an array of descriptors: see the detail
        case "nanosleep", "clock_nanosleep":
            wait.kind = .sleep
            wait.object = 0
        default:
            wait.kind = .syscall
        }
        return wait
    }

    /// The dispatch_sync layout, when learned.
    private func layout() -> DispatchSyncLayout? { learning.layout }
}
