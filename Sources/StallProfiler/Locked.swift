import Glibc

/// A value behind a pthread mutex, for the watchdog's own bookkeeping (never a lock the main thread's hot path
/// contends for longer than a few instructions).
///
/// Not `Synchronization.Mutex`: on Linux its contended path is a priority-inheritance futex that the kernel hands
/// to the waiter, inside the uninstrumented standard library, so ThreadSanitizer never sees the hand-over and
/// reports a race on the value it guards (seen in CI: the `dispatch_sync` experiment's state). A pthread mutex is
/// one ThreadSanitizer intercepts; it costs the same uncontended.
final class Locked<Value: ~Copyable & Sendable>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    /// Guards `value`.
    init(_ value: consuming Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, the lock held.
    func withLock<Result: ~Copyable, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }

    /// Runs `body` with the value when the lock is free; nil, without waiting, when another thread holds it.
    func withLockIfAvailable<Result>(_ body: (inout Value) -> Result) -> Result? {
        guard pthread_mutex_trylock(mutex) == 0 else { return nil }
        defer { pthread_mutex_unlock(mutex) }
        return body(&value)
    }
}
