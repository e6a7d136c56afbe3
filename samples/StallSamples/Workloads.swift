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
    /// The main queue floods: a thread named `flood-poster` enqueues a tiny block (0.2 ms of CPU,
    /// ``FloodWork/tinyBlock()``) 20,000 times a second for a quarter of the stall's length, four times what the
    /// main thread can run, so that the main queue runs about the stall's length of them back to back
    /// (``FloodWork``; stall-demo only).
    case flood
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
    /// holder measured. The holder's thread is detached, not joined: the stall ends when the lock is taken (a join
    /// would add the holder's exit to it, long enough under ASan to be sampled).
    @discardableResult @inline(never)
    public static func waitForWorkerLock(milliseconds: Int, holder mode: LockHolderMode = .sleeps) -> HolderReport {
        let holder = UnsafeMutablePointer<LockHolder>.allocate(capacity: 1)
        holder.initialize(to: LockHolder(milliseconds: milliseconds, mode: mode))
        startHolder(holder)
        while sem_wait(holder.pointee.taken) != 0 {}
        lockContended(holder.pointee.mutex)
        let report = holder.pointee.finished()
        pthread_mutex_unlock(holder.pointee.mutex)
        holder.pointee.destroy()
        holder.deinitialize(count: 1)
        holder.deallocate()
        return report
    }

    /// Starts the `lock-holder` thread, detached.
    private static func startHolder(_ holder: UnsafeMutablePointer<LockHolder>) {
        var thread = pthread_t()
        let created = pthread_create(&thread, nil, { context in
            BlockedWork.runHolder(context!.assumingMemoryBound(to: LockHolder.self))
            return nil
        }, holder)
        precondition(created == 0, "pthread_create failed")
        pthread_detach(thread)
    }

    /// The body of the `lock-holder` thread.
    @inline(never)
    private static func runHolder(_ holder: UnsafeMutablePointer<LockHolder>) {
        stallcap_name_thread(holderThreadName)
        let unlocked = holdLock(holder)
        precondition(unlocked == 0, "pthread_mutex_unlock failed")  // work after the call: no tail call, a real frame
    }

    /// The lock holder's frame: takes the mutex, posts `taken`, holds the lock for `milliseconds` (one `usleep`, or
    /// spinning), writes its report, then unlocks and touches `holder` no more (the waiter frees it). Returns what
    /// `pthread_mutex_unlock` returned.
    @inline(never)
    static func holdLock(_ holder: UnsafeMutablePointer<LockHolder>) -> Int32 {
        let mutex = holder.pointee.mutex, milliseconds = holder.pointee.milliseconds, mode = holder.pointee.mode
        pthread_mutex_lock(mutex)
        sem_post(holder.pointee.taken)
        let asked = UInt64(milliseconds) * 1_000_000
        let start = monotonicNanoseconds()
        var failed = false
        switch mode {
        case .sleeps: failed = usleep(useconds_t(milliseconds) * 1000) != 0
        case .spins: _ = BusyWork.burn(until: start + asked)
        }
        let held = monotonicNanoseconds() - start
        holder.pointee.report = HolderReport(mode: mode, askedNs: asked, heldNs: held, cutShort: failed || held < asked)
        return pthread_mutex_unlock(mutex)
    }

    /// The frame a blocked stall's stack must show above libc's lock wait.
    @inline(never)
    static func lockContended(_ mutex: UnsafeMutablePointer<pthread_mutex_t>) {
        let result = pthread_mutex_lock(mutex)
        precondition(result == 0, "pthread_mutex_lock failed")  // work after the call: no tail call, a real frame
    }

    /// What the two threads share, owned by the waiter: the holder touches it only while it holds the mutex (and
    /// before, to take it), so once the waiter has taken the mutex it may destroy everything (POSIX lets an
    /// unlocked mutex be destroyed while its last unlocker is still returning).
    struct LockHolder {
        let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        let taken = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
        let milliseconds: Int
        let mode: LockHolderMode
        /// Written by the holder thread before it unlocks; read by the waiter once it holds the mutex.
        var report: HolderReport? = nil
        init(milliseconds: Int, mode: LockHolderMode) {
            self.milliseconds = milliseconds
            self.mode = mode
            pthread_mutex_init(mutex, nil)
            sem_init(taken, 0, 0)
        }
        /// The report, read while holding the mutex.
        func finished() -> HolderReport { report ?? HolderReport(mode: mode, askedNs: 0, heldNs: 0, cutShort: true) }
        /// Destroys and frees the mutex and the semaphore.
        func destroy() {
            pthread_mutex_destroy(mutex)
            mutex.deallocate()
            sem_destroy(taken)
            taken.deallocate()
        }
    }
}
