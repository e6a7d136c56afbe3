import CStallCapture
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// What the sample apps do to their main thread.
public enum StallKind: String, CaseIterable, Sendable {
    /// The main thread spins at 100 % CPU, 30 calls deep in ``BusyWork/descend(_:until:)``.
    case busy
    /// The main thread waits for a lock that a worker thread holds (``BlockedWork/waitForWorkerLock(milliseconds:)``).
    case blocked
    /// The main thread sleeps in one `usleep` (``SleepWork/sleep(milliseconds:)``): a system call that a signal
    /// would cut short, so the watchdog must never signal it.
    case sleep
}

/// A stall in which the main thread sleeps in a system call that no signal may interrupt.
public enum SleepWork {
    /// Sleeps `milliseconds` in one `usleep`; returns the nanoseconds it took and whether it was cut short (it
    /// failed with EINTR or returned before the time asked).
    @inline(never)
    public static func sleep(milliseconds: Int) -> (sleptNs: UInt64, cutShort: Bool) {
        let asked = UInt64(milliseconds) * 1_000_000
        let start = monotonicNanoseconds()
        let failed = usleep(useconds_t(milliseconds) * 1000) != 0
        let slept = monotonicNanoseconds() - start
        return (slept, failed || slept < asked)
    }
}

/// Monotonic clock in nanoseconds.
public func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

/// A CPU-bound stall with a recognizable call chain.
public enum BusyWork {
    /// How deep the recursion goes before it spins.
    public static let depth = 30

    /// Where ``mix(_:_:)`` leaves its result, so the recursion cannot be optimized away. Atomic: tests spin on
    /// several threads at once (a plain variable was a data race under TSan).
    private static let sink = Atomic<UInt64>(0)

    /// Spins for `milliseconds` at the bottom of a `depth`-deep recursion of ``descend(_:until:)``.
    @inline(never)
    public static func spin(milliseconds: Int) -> UInt64 {
        descend(depth, until: monotonicNanoseconds() + UInt64(milliseconds) * 1_000_000)
    }

    /// Calls itself `level` times, then burns CPU until `deadline`.
    @inline(never)
    public static func descend(_ level: Int, until deadline: UInt64) -> UInt64 {
        if level <= 1 { return burn(until: deadline) }
        let result = descend(level - 1, until: deadline)
        return mix(result, level)  // an opaque call after the recursion: no tail call, no loop conversion
    }

    @inline(never)
    static func burn(until deadline: UInt64) -> UInt64 {
        var x: UInt64 = 0
        while monotonicNanoseconds() < deadline {
            for i in 0..<1000 { x = x &* 6364136223846793005 &+ UInt64(i) }
        }
        return x
    }

    @inline(never)
    static func mix(_ value: UInt64, _ level: Int) -> UInt64 {
        sink.wrappingAdd(value &+ UInt64(level), ordering: .relaxed).newValue
    }
}

/// What the thread that holds the lock does while it holds it.
public enum LockHolderMode: String, CaseIterable, Sendable {
    /// It sleeps in one long `usleep` (in a system call: it must never be signalled).
    case sleeps
    /// It spins on the CPU (a running owner).
    case spins
}

/// A stall in which the main thread waits: a worker thread named `lock-holder` takes a pthread mutex and holds it
/// in ``BlockedWork/holdLock(_:taken:milliseconds:mode:)`` while the main thread asks for it.
public enum BlockedWork {
    /// What the lock holder did, measured by itself.
    public struct HolderReport: Sendable {
        /// How the holder held the lock.
        public var mode: LockHolderMode
        /// How long it meant to hold it, nanoseconds.
        public var askedNs: UInt64
        /// How long it held it, nanoseconds (for `sleeps`: the time `usleep` took).
        public var heldNs: UInt64
        /// True when `usleep` failed (EINTR) or returned before the time asked: the sleep was cut short.
        public var cutShort: Bool
    }

    /// The name the lock holder gives its thread.
    public static let holderThreadName = "lock-holder"

    /// Blocks the calling thread for about `milliseconds` on a mutex a worker thread holds; returns what the
    /// holder measured.
    @discardableResult @inline(never)
    public static func waitForWorkerLock(milliseconds: Int, holder mode: LockHolderMode = .sleeps) -> HolderReport {
        let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        let taken = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
        sem_init(taken, 0, 0)
        let holder = LockHolder(mutex: mutex, taken: taken, milliseconds: milliseconds, mode: mode)
        let thread = startHolder(holder)
        while sem_wait(taken) != 0 {}
        lockContended(mutex)
        pthread_mutex_unlock(mutex)
        pthread_join(thread, nil)
        let report = holder.finished()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        sem_destroy(taken)
        taken.deallocate()
        return report
    }

    /// Starts the `lock-holder` thread.
    private static func startHolder(_ holder: LockHolder) -> pthread_t {
        var thread = pthread_t()
        pthread_create(&thread, nil, { context in
            BlockedWork.runHolder(Unmanaged<LockHolder>.fromOpaque(context!).takeRetainedValue())
            return nil
        }, Unmanaged.passRetained(holder).toOpaque())
        return thread
    }

    /// The body of the `lock-holder` thread.
    private static func runHolder(_ holder: LockHolder) {
        stallcap_name_thread(holderThreadName)
        let report = holdLock(holder.mutex, taken: holder.taken, milliseconds: holder.milliseconds, mode: holder.mode)
        holder.report = report
    }

    /// The lock holder's frame: takes `mutex`, posts `taken`, holds the lock for `milliseconds` (one `usleep`, or
    /// spinning), then unlocks.
    @inline(never)
    static func holdLock(
        _ mutex: UnsafeMutablePointer<pthread_mutex_t>, taken: UnsafeMutablePointer<sem_t>, milliseconds: Int,
        mode: LockHolderMode
    ) -> HolderReport {
        pthread_mutex_lock(mutex)
        sem_post(taken)
        let asked = UInt64(milliseconds) * 1_000_000
        let start = monotonicNanoseconds()
        var failed = false
        switch mode {
        case .sleeps: failed = usleep(useconds_t(milliseconds) * 1000) != 0
        case .spins: _ = BusyWork.burn(until: start + asked)
        }
        let held = monotonicNanoseconds() - start
        pthread_mutex_unlock(mutex)
        return HolderReport(mode: mode, askedNs: asked, heldNs: held, cutShort: failed || held < asked)
    }

    /// The frame a blocked stall's stack must show above libc's lock wait.
    @inline(never)
    static func lockContended(_ mutex: UnsafeMutablePointer<pthread_mutex_t>) {
        let result = pthread_mutex_lock(mutex)
        precondition(result == 0, "pthread_mutex_lock failed")  // work after the call: no tail call, a real frame
    }

    private final class LockHolder {
        let mutex: UnsafeMutablePointer<pthread_mutex_t>
        let taken: UnsafeMutablePointer<sem_t>
        let milliseconds: Int
        let mode: LockHolderMode
        /// Written by the holder thread before it ends; read after pthread_join.
        var report: HolderReport? = nil
        /// The report, once the holder thread has ended.
        func finished() -> HolderReport { report ?? HolderReport(mode: mode, askedNs: 0, heldNs: 0, cutShort: true) }
        init(mutex: UnsafeMutablePointer<pthread_mutex_t>, taken: UnsafeMutablePointer<sem_t>, milliseconds: Int,
             mode: LockHolderMode) {
            self.mutex = mutex
            self.taken = taken
            self.milliseconds = milliseconds
            self.mode = mode
        }
    }
}
