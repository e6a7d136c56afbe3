import Foundation
import Synchronization

/// A dedicated thread that runs posted blocks one after another, standing in for the main thread in tests (a
/// serial DispatchQueue will not do: its blocks may run on a different worker each time).
final class StandInMainThread: Sendable {
    private let blocks = Mutex<[@Sendable () -> Void]>([])
    private let available = DispatchSemaphore(value: 0)

    init() {
        let thread = Thread { [self] in
            while true {
                available.wait()
                let block = blocks.withLock { $0.removeFirst() }
                block()
            }
        }
        thread.start()
    }

    /// Queues `block` to run on the thread.
    func post(_ block: @escaping @Sendable () -> Void) {
        blocks.withLock { $0.append(block) }
        available.signal()
    }
}
