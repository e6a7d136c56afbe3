#if canImport(Glibc)
import Glibc
#endif

/// What the sample apps do to their main thread.
public enum StallKind: String, CaseIterable, Sendable {
    /// The main thread spins at 100 % CPU, 30 calls deep in ``BusyWork/descend(_:until:)``.
    case busy
    /// The main thread waits for a lock that a worker thread holds (``BlockedWork/waitForWorkerLock(milliseconds:)``).
    case blocked
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

    nonisolated(unsafe) private static var sink: UInt64 = 0

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
        sink = sink &+ value &+ UInt64(level)
        return sink
    }
}

/// A stall in which the main thread waits: a worker takes a pthread mutex and holds it while the main thread
/// asks for it.
public enum BlockedWork {
    /// Blocks the calling thread for about `milliseconds` on a mutex a worker thread holds.
    @inline(never)
    public static func waitForWorkerLock(milliseconds: Int) {
        let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        let taken = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
        sem_init(taken, 0, 0)
        let holder = LockHolder(mutex: mutex, taken: taken, milliseconds: milliseconds)
        var thread = pthread_t()
        pthread_create(&thread, nil, { context in
            let holder = Unmanaged<LockHolder>.fromOpaque(context!).takeRetainedValue()
            pthread_mutex_lock(holder.mutex)
            sem_post(holder.taken)
            usleep(UInt32(holder.milliseconds) * 1000)
            pthread_mutex_unlock(holder.mutex)
            return nil
        }, Unmanaged.passRetained(holder).toOpaque())
        while sem_wait(taken) != 0 {}
        lockContended(mutex)
        pthread_mutex_unlock(mutex)
        pthread_join(thread, nil)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        sem_destroy(taken)
        taken.deallocate()
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
        init(mutex: UnsafeMutablePointer<pthread_mutex_t>, taken: UnsafeMutablePointer<sem_t>, milliseconds: Int) {
            self.mutex = mutex
            self.taken = taken
            self.milliseconds = milliseconds
        }
    }
}
