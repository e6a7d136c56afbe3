import CStallCapture
import Dispatch
import Glibc
import Synchronization

/// Where libdispatch keeps what a `dispatch_sync` waiter waits for, learned once by experiment, so that a thread
/// waiting in `DispatchQueue.sync` can be told which queue it waits for and which thread runs a block on it.
///
/// A thread in `dispatch_sync` onto a busy serial queue sleeps on a futex word inside a context on its own stack
/// (libdispatch's `dispatch_sync_context_s`: the word is `dsc_event`). Near it the context holds the waiter's tid
/// (`dsc_waiter`) and the queue (`dc_other`); the queue holds its label (`dq_label`) and its state (`dq_state`),
/// whose low 30 bits are the tid of the thread draining it (`DLOCK_OWNER_MASK`). The offsets differ between
/// libdispatch builds, so they are not assumed: `learn` makes a queue busy on one thread, has a second thread
/// `sync` onto it, reads the second thread's futex word from /proc and finds the four fields by their known
/// values (the waiter's tid, a queue whose state names the first thread and whose label is the one given). A
/// wait is then read as a `dispatch_sync` only when the word at the waiter offset is the waiting thread's own tid.
struct DispatchSyncLayout: Equatable {
    /// From the futex word to `dsc_waiter` (a 32-bit tid).
    var waiterOffset: Int
    /// From the futex word to the queue pointer.
    var queueOffset: Int
    /// From the queue to `dq_state`.
    var stateOffset: Int
    /// From the queue to `dq_label`.
    var labelOffset: Int

    /// The low bits of `dq_state` that hold the draining thread's tid.
    static let ownerMask: UInt64 = 0x3fff_ffff
    /// Most bytes between the waiter's stack pointer (in its system call) and the futex word of its context.
    static let maxContextDepth: UInt64 = 1 << 20
    /// Bytes around the futex word searched for the context's fields.
    static let contextWindow = (before: 256, after: 64)

    /// What a `dispatch_sync` waiter waits for.
    struct Wait: Equatable {
        /// The queue's label, empty when it has none.
        var label: String
        /// The thread running a block on the queue, 0 when none does.
        var owner: Int32
    }

    /// Reads the wait of `waiter`, whose syscall state is `state`, as a `dispatch_sync`; nil when it is not one.
    func wait(_ state: SyscallState, waiter: Int32) -> Wait? {
        guard state.kind == .inCall, SyscallDetail.name(state.number) == "futex" else { return nil }
        let word = state.arguments[0]
        // The context lives on the waiter's own stack, just above the stack pointer of its system call.
        guard word >= state.stackPointer, word &- state.stackPointer < Self.maxContextDepth,
            word > UInt64(Self.contextWindow.before), let tid: Int32 = Self.read(word &+ UInt64(bitPattern: Int64(waiterOffset))),
            tid == waiter, let queue: UInt64 = Self.read(word &+ UInt64(bitPattern: Int64(queueOffset))), queue != 0,
            let queueState: UInt64 = Self.read(queue &+ UInt64(stateOffset))
        else { return nil }
        let owner = Int32(truncatingIfNeeded: queueState & Self.ownerMask)
        let label = (Self.read(queue &+ UInt64(labelOffset)) as UInt64?).map(Self.cString) ?? ""
        let live = owner > 0 && owner != waiter && stallcap_thread_alive(owner) == 1
        return Wait(label: label, owner: live ? owner : 0)
    }

    /// Learns the layout (about a millisecond; three threads of libdispatch's pool briefly, serial queues of its
    /// own, so they are had even when the app keeps the global queues busy). Nil when the experiment does not show
    /// it within `timeoutNs`. Blocks the calling thread meanwhile: ``Learning`` runs it off the watchdog thread.
    static func learn(timeoutNs: UInt64 = 300_000_000) -> DispatchSyncLayout? {
        let label = "stallprof.dispatch-sync-layout"
        let queue = DispatchQueue(label: label)
        let drainer = Atomic<Int32>(0), waiter = Atomic<Int32>(0)
        let running = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        queue.async {
            drainer.store(stallcap_gettid(), ordering: .releasing)
            running.signal()
            _ = release.wait(timeout: .now() + .seconds(5))  // never holds the pool thread for long
        }
        defer { release.signal() }
        guard running.wait(timeout: .now() + .nanoseconds(Int(timeoutNs))) == .success else { return nil }
        // A serial queue of its own: it gets a thread even when the app keeps every global-queue thread busy.
        DispatchQueue(label: label + ".waiter").async {
            waiter.store(stallcap_gettid(), ordering: .releasing)
            queue.sync {}
        }
        let deadline = stallcap_monotonic_ns() &+ timeoutNs
        while stallcap_monotonic_ns() < deadline {
            let tid = waiter.load(ordering: .acquiring)
            if tid > 0 {
                let state = SyscallState(thread: tid)
                if state.kind == .inCall, SyscallDetail.name(state.number) == "futex" {
                    return find(word: state.arguments[0], waiter: tid, drainer: drainer.load(ordering: .acquiring), label: label)
                }
            }
            usleep(200)
        }
        return nil
    }

    /// Finds the fields around futex word `word` of a known waiter, drainer and label.
    static func find(word: UInt64, waiter: Int32, drainer: Int32, label: String) -> DispatchSyncLayout? {
        let start = word &- UInt64(contextWindow.before)
        guard word > UInt64(contextWindow.before),
            let context: [UInt64] = readWords(start, count: (contextWindow.before + contextWindow.after) / 8)
        else { return nil }
        var waiterOffset: Int? = nil
        for (index, value) in context.enumerated() {
            for half in 0..<2 where Int32(truncatingIfNeeded: value >> (32 * UInt64(half))) == waiter {
                let offset = index * 8 + half * 4 - contextWindow.before
                if waiterOffset.map({ abs(offset) < abs($0) }) ?? true { waiterOffset = offset }
            }
        }
        guard let waiterOffset else { return nil }
        for (index, pointer) in context.enumerated() where pointer > 0x10000 && pointer % 8 == 0 {
            guard let fields = readWords(pointer, count: 32) else { continue }
            let stateIndex = fields.firstIndex { $0 & ownerMask == UInt64(drainer) && $0 >> 32 != 0 }
            let labelIndex = fields.firstIndex { $0 > 0x10000 && cString(at: $0) == label }
            if let stateIndex, let labelIndex {
                return DispatchSyncLayout(
                    waiterOffset: waiterOffset, queueOffset: index * 8 - contextWindow.before,
                    stateOffset: stateIndex * 8, labelOffset: labelIndex * 8)
            }
        }
        return nil
    }

    /// One value of type `T` at `address`, read with process_vm_readv; nil when unreadable.
    static func read<T: FixedWidthInteger>(_ address: UInt64) -> T? {
        var value: T = 0
        let ok = withUnsafeMutableBytes(of: &value) { stallcap_read_memory(address, $0.baseAddress, $0.count) == 0 }
        return ok ? value : nil
    }

    /// `count` words at `address`; nil when unreadable.
    static func readWords(_ address: UInt64, count: Int) -> [UInt64]? {
        var words = [UInt64](repeating: 0, count: count)
        let ok = words.withUnsafeMutableBytes { stallcap_read_memory(address, $0.baseAddress, $0.count) == 0 }
        return ok ? words : nil
    }

    /// The NUL-terminated string at `address`, at most 128 bytes; empty when unreadable. Read in aligned 16-byte
    /// chunks, which never cross a page, so a string that ends just before an unmapped page is still read.
    static func cString(at address: UInt64) -> String {
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16)
        var cursor = address & ~15
        var skip = Int(address - cursor)
        while bytes.count < 128 {
            let ok = chunk.withUnsafeMutableBytes { stallcap_read_memory(cursor, $0.baseAddress, $0.count) == 0 }
            guard ok else { break }
            let part = chunk[skip...]
            if let end = part.firstIndex(of: 0) { return String(decoding: bytes + part[..<end], as: UTF8.self) }
            bytes += part
            cursor &+= 16
            skip = 0
        }
        return ""
    }
}

extension DispatchSyncLayout {
    /// The experiment, run off the watchdog thread: started when a stall begins (``start()``) on a thread of its own
    /// (libdispatch may block the thread that enqueues work while it creates pool threads), read without waiting
    /// (``layout``). An experiment that has not ended after ``staleNs`` counts as failed. A failed experiment is
    /// tried again a few times, at least ``retryNs`` apart.
    final class Learning: Sendable {
        private struct State {
            var layout: DispatchSyncLayout? = nil
            var running = false
            var attempts = 0
            var lastNs: UInt64 = 0
        }

        private let state = Locked(State())
        /// The process's: the layout is libdispatch's, the same for every probe.
        static let shared = Learning()
        /// Most experiments per process.
        static let maxAttempts = 3
        /// Least time between two experiments, nanoseconds.
        static let retryNs: UInt64 = 10_000_000_000
        /// After this long an experiment is taken for failed (its threads never ran), nanoseconds.
        static let staleNs: UInt64 = 1_000_000_000

        /// The layout, once learned.
        var layout: DispatchSyncLayout? { state.withLock { $0.layout } }
        /// True while an experiment runs (and is not stale).
        var isRunning: Bool {
            let now = stallcap_monotonic_ns()
            return state.withLock { $0.running && now &- $0.lastNs < Self.staleNs }
        }

        /// Starts an experiment on a thread of its own unless the layout is known, one runs, or the attempts are
        /// spent or too recent. Returns at once.
        func start() {
            let now = stallcap_monotonic_ns()
            let go = state.withLock { s -> Bool in
                let running = s.running && now &- s.lastNs < Self.staleNs
                guard s.layout == nil, !running, s.attempts < Self.maxAttempts,
                    s.attempts == 0 || now &- s.lastNs >= Self.retryNs
                else { return false }
                (s.running, s.attempts, s.lastNs) = (true, s.attempts + 1, now)
                return true
            }
            guard go else { return }
            let context = Unmanaged.passRetained(self).toOpaque()
            var thread = pthread_t()
            let status = pthread_create(&thread, nil, { raw in
                let learning = Unmanaged<Learning>.fromOpaque(raw!).takeRetainedValue()
                let learned = DispatchSyncLayout.learn()
                learning.state.withLock { ($0.layout, $0.running) = (learned, false) }
                return nil
            }, context)
            if status == 0 {
                pthread_detach(thread)
            } else {
                Unmanaged<Learning>.fromOpaque(context).release()
                state.withLock { $0.running = false }
            }
        }
    }
}
