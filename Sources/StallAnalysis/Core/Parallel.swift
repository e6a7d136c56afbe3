import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// Work spread over every core, results in input order.
public enum Parallel {
    /// How many items are worth running at once: the cores this process may use.
    public static var width: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

    /// `body` applied to each item, on as many threads as there are cores; each result (or error) at its item's
    /// position. One item runs on the calling thread.
    public static func map<Item: Sendable, Value: Sendable>(
        _ items: [Item], _ body: @Sendable (Item) throws -> Value
    ) -> [Result<Value, any Error>] {
        guard items.count > 1 else { return items.map { item in Result { try body(item) } } }
        let slots = UnsafeMutableBufferPointer<Result<Value, any Error>?>.allocate(capacity: items.count)
        slots.initialize(repeating: nil)
        defer {
            slots.deinitialize()
            slots.deallocate()
        }
        // Each iteration writes only its own slot, and concurrentPerform returns after every iteration ended.
        nonisolated(unsafe) let shared = slots
        DispatchQueue.concurrentPerform(iterations: items.count) { index in
            shared[index] = Result { try body(items[index]) }
        }
        return slots.map { $0! }
    }
}
