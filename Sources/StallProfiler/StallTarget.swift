import Dispatch
import StallFormat

/// A serial executor the watchdog watches besides the main queue: an event loop on a thread of its own, a serial
/// `DispatchQueue`, or Swift's cooperative pool as a whole (an actor on the pool is none of them: its work moves
/// between pool threads). The watchdog pings it a few times per threshold; a ping it does not run within the
/// threshold begins a stall of that target, whose thread (the one that ran its latest pings) is sampled, told busy
/// or blocked, and for a blocked one searched for what it waits on, exactly as the main thread's. Each episode in
/// the capture names its target. See docs/WATCHDOG.md, "Watching other executors".
///
/// ```swift
/// // SwiftNIO: one target per event loop (the repo does not depend on SwiftNIO; this is all it takes).
/// for (index, loop) in group.makeIterator().enumerated() {
///     try watchdog.add(.executor("loop-\(index)", threshold: .milliseconds(20)) { loop.execute($0) })
/// }
/// ```
public struct StallTarget: Sendable {
    /// The target's name in the capture (`report --target NAME`): unique within a watchdog, 1 to 64 bytes of
    /// UTF-8 without control characters, and not `main` (the main queue's).
    public let name: String
    /// The target unresponsive this long is a stall: from 10 ms to 1 hour, and at least the sample interval.
    public let threshold: Duration
    /// Runs a block on the target: the ping.
    let post: @Sendable (@escaping @Sendable () -> Void) -> Void
    /// True when one thread of the target's own runs all its work (an event loop): then a thread that answers its
    /// pings but never rests is a saturated target. A serial queue's work runs on whichever worker is free, which
    /// also runs other queues' work: it is never judged saturated.
    let hasOwnThread: Bool
    /// For the cooperative pool: where the Swift runtime runs a job, to tell the pool's threads (``PoolThreads``);
    /// nil for other targets.
    let pool: PoolThreads.Code?

    /// A serial `DispatchQueue`, pinged with `queue.async`. Its work may run on any of libdispatch's worker
    /// threads: the thread sampled is the one that ran its latest pings, or the one still running its work.
    public static func queue(
        _ name: String, _ queue: DispatchQueue, threshold: Duration = .milliseconds(250)
    ) -> StallTarget {
        StallTarget(
            name: name, threshold: threshold, post: { queue.async(execute: $0) }, hasOwnThread: false, pool: nil)
    }

    /// A serial executor on a thread of its own (an event loop), pinged with `ping`, which must run the block it is
    /// given on the executor, soon, and return at once without taking a lock an app thread may hold: it runs on the
    /// watchdog thread, and while it blocks nothing is watched. `{ eventLoop.execute($0) }` for a SwiftNIO event
    /// loop. Its thread is watched for saturation (``StallWatchdog/Configuration/saturationPeriod``), and its idle
    /// wait is learned so that checks do not wake it (docs/WATCHDOG.md).
    public static func executor(
        _ name: String, threshold: Duration = .milliseconds(250),
        ping: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void
    ) -> StallTarget {
        StallTarget(name: name, threshold: threshold, post: ping, hasOwnThread: true, pool: nil)
    }

    /// The name of ``cooperativePool(threshold:priority:)``'s episodes: `pool`.
    public static let cooperativePoolName = StallBeginRecord.poolTarget

    /// Swift's cooperative thread pool, which runs every `async` function not bound to an actor of its own
    /// executor: pinged with a `Task` of `priority`. A ping that does not start within the threshold means the pool
    /// is starved (every one of its threads, as many as CPUs, runs work that does not return, blocked or busy);
    /// then every pool thread is sampled, one episode each, all named `pool` (``cooperativePoolName``). On Linux a
    /// pool thread is a libdispatch worker of the priority's root queue that runs work when the starvation is
    /// detected: a job, or a `DispatchQueue.global()` block, which takes a thread from the same workers
    /// (``PoolThreads``). Each task priority has its own workers: blocked `.medium` tasks (the default) starve
    /// `.medium` tasks, not `.high` ones; ping at the priority the app's handlers run at. Never answered quietly:
    /// each check is a real task. See docs/WATCHDOG.md, "The cooperative pool".
    public static func cooperativePool(
        threshold: Duration = .milliseconds(250), priority: TaskPriority = .medium
    ) -> StallTarget {
        StallTarget(
            name: cooperativePoolName, threshold: threshold,
            post: { block in Task.detached(priority: priority) { block() } }, hasOwnThread: false,
            pool: PoolThreads.Code.current(priority: priority))
    }

    /// Checks the name and threshold; `sampleInterval` is the watchdog's. Throws
    /// ``StallWatchdogError/invalidConfiguration(_:)`` naming the target.
    func validate(sampleInterval: Duration) throws {
        func refused(_ message: String) -> StallWatchdogError { .invalidConfiguration("target '\(name)': \(message)") }
        guard !name.isEmpty, name.utf8.count <= 64 else {
            throw StallWatchdogError.invalidConfiguration("a target's name must be 1 to 64 bytes, not '\(name)'")
        }
        guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw refused("a name has no control characters")
        }
        guard name != StallBeginRecord.mainTarget else { throw refused("the name 'main' is the main queue's") }
        guard name != Self.cooperativePoolName || pool != nil else {
            throw refused("the name '\(Self.cooperativePoolName)' is the cooperative pool's (.cooperativePool())")
        }
        guard threshold >= .milliseconds(10), threshold <= .seconds(3600) else {
            throw refused("threshold must be between 10 ms and 1 hour, not \(threshold)")
        }
        guard threshold >= sampleInterval else {
            throw refused("threshold \(threshold) is shorter than the sample interval \(sampleInterval)")
        }
    }
}

extension [StallTarget] {
    /// Checks every target and that no two share a name.
    func validate(sampleInterval: Duration) throws {
        var names = Set<String>()
        for target in self {
            try target.validate(sampleInterval: sampleInterval)
            guard names.insert(target.name).inserted else {
                throw StallWatchdogError.invalidConfiguration("two targets are named '\(target.name)'")
            }
        }
    }
}
