import StallFormat

/// Watched targets' names (``Stall/target``: `main` for the main queue, others as the app named its event loops,
/// serial queues and cooperative pool) in the order every output lists them.
enum TargetNames {
    /// The main queue's target, `main`.
    static let main = StallBeginRecord.mainTarget
    /// Swift's cooperative pool's target, `pool`.
    static let pool = StallBeginRecord.poolTarget

    /// `names` once each: `main` first, then the others in byte order.
    static func ordered(_ names: some Sequence<String>) -> [String] {
        Set(names).sorted { a, b in
            let (mainA, mainB) = (a == main, b == main)
            return mainA != mainB ? mainA : Array(a.utf8).lexicographicallyPrecedes(b.utf8)
        }
    }
}
