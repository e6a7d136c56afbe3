import Foundation

/// A dedicated thread that runs posted blocks one after another, standing in for the main thread in tests (a
/// serial DispatchQueue will not do: its blocks may run on a different worker each time).
///
/// The queue is guarded by an `NSCondition` (a pthread mutex and condition variable, which ThreadSanitizer
/// intercepts), not by `Synchronization.Mutex`: when that mutex is contended, the kernel hands it to the waiter
/// (FUTEX_LOCK_PI / FUTEX_UNLOCK_PI inside the uninstrumented standard library), an ordering TSan cannot see, so
/// it reported the queue's array as raced between `post` and this thread.
final class StandInMainThread: @unchecked Sendable {
    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var blocks: [@Sendable () -> Void] = []

    init() {
        let thread = Thread { [self] in
            while true {
                condition.lock()
                while blocks.isEmpty { condition.wait() }
                let block = blocks.removeFirst()
                condition.unlock()
                block()
            }
        }
        thread.start()
    }

    /// Queues `block` to run on the thread.
    func post(_ block: @escaping @Sendable () -> Void) {
        condition.lock()
        blocks.append(block)
        condition.signal()
        condition.unlock()
    }
}
