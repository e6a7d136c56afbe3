import Foundation

/// A thread of its own that runs posted blocks one after another, in order: the shape of an event loop (one thread,
/// a queue of work, asleep while the queue is empty). Tests stand it in for the main thread (a serial
/// `DispatchQueue` will not do: its blocks may run on a different worker each time), and benchmarks and samples
/// use it as an idle or stalling event loop.
///
/// The queue is guarded by an `NSCondition` (a pthread mutex and condition variable, which ThreadSanitizer
/// intercepts), not by `Synchronization.Mutex`: when that mutex is contended, the kernel hands it to the waiter
/// (FUTEX_LOCK_PI / FUTEX_UNLOCK_PI inside the uninstrumented standard library), an ordering TSan cannot see, so
/// it reported the queue's array as raced between `post` and this thread.
public final class SerialThread: @unchecked Sendable {
    private let condition = NSCondition()
    /// Guarded by `condition`.
    private var blocks: [@Sendable () -> Void] = []

    /// Starts the thread, named `name` when given (at most 15 bytes show in /proc).
    public init(name: String? = nil) {
        let thread = Thread { [self] in
            while true {
                condition.lock()
                while blocks.isEmpty { condition.wait() }
                let block = blocks.removeFirst()
                condition.unlock()
                block()
            }
        }
        if let name { thread.name = name }
        thread.start()
    }

    /// Queues `block` to run on the thread.
    public func post(_ block: @escaping @Sendable () -> Void) {
        condition.lock()
        blocks.append(block)
        condition.signal()
        condition.unlock()
    }
}

/// The calling thread's kernel id, from /proc/thread-self (a link to `PID/task/TID`): Glibc's Swift module exports
/// neither `gettid` nor a usable `syscall`, and the samples use no C shim. -1 when /proc cannot say.
public func kernelThreadID() -> Int32 {
    let link = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self")) ?? ""
    return link.split(separator: "/").last.flatMap { Int32($0) } ?? -1
}
