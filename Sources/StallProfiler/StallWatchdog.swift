import CStallCapture
import Dispatch
import StallFormat
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Watches the main thread and samples its stack for as long as it stalls.
///
/// A watchdog thread of its own (no Dispatch worker, no Swift concurrency executor) pings the main queue a few
/// times per threshold. When a ping stays unanswered for the threshold, a stall begins: the thread that
/// answered the previous pings (the one servicing the main queue, which is not always the process's first thread)
/// is sampled with a signal and a DWARF unwinder every `sampleInterval` until the main queue answers again. Every sample
/// is appended to the capture file as it is taken, so a crash or kill loses nothing already flushed. Sampling
/// starts earlier, into a bounded buffer, once a ping has been unanswered for half a ping period; the buffer is
/// kept when the stall is declared, so the whole stall is sampled.
///
/// It also records saturated episodes: the main queue keeps answering, but the thread that services it never
/// sleeps for ``Configuration/saturationPeriod`` (a loop across run-loop turns). See docs/WATCHDOG.md.
///
/// ```swift
/// let watchdog = try StallWatchdog.start(StallWatchdog.Configuration(outputPath: "app.stalls"))
/// // ... the app runs its main loop ...
/// watchdog.stop()
/// ```
///
/// One watchdog runs per process at a time. The child of a `fork()` inherits none: it may start its own, and
/// `stop()` on the parent's watchdog does nothing there.
public final class StallWatchdog: Sendable {
    /// Counters of what the watchdog has done so far.
    public struct Statistics: Sendable, Equatable {
        /// Stalls that began.
        public var stalls: Int
        /// Saturated episodes that began (the main queue answered, but its thread never slept for the
        /// saturation period; see ``Configuration/saturationPeriod``).
        public var saturatedEpisodes: Int
        /// Samples written (including samples that reused the previous stack of a thread that made no progress).
        public var samples: Int
        /// Samples that could not be taken in time.
        public var missedSamples: Int
        /// Samples dropped because the capture file did not accept writes (disk full, file size limit) and the
        /// pending buffer (4 MiB) was full; recorded in the file once it accepts writes again.
        public var droppedSamples: Int
        /// True once the first ping was answered: something services the main queue.
        public var mainQueueAnswered: Bool
    }

    /// The configuration in use, its ``Configuration/outputPath`` expanded (the capture file's path).
    public let configuration: Configuration
    private let shared: WatchdogShared
    private let thread: Locked<pthread_t?>
    /// The names of the targets watched besides the main queue, as the app last changed them.
    private let targetNames: Locked<Set<String>>
    /// The process that started it: in a forked child the watchdog thread does not exist.
    private let processID = getpid()

    private static let running = Atomic<Bool>(false)

    /// In the child of a fork: no watchdog runs there, so the child may start its own.
    private static func resetAfterFork() {
        stallcap_wd_forget()  // the deep sleep's descriptors are the parent's watchdog's
        stallcap_close_tracked_capture()  // and so is the capture file (a copy here would keep its lock)
        running.store(false, ordering: .relaxed)
        MarkerRing.active.store(false, ordering: .relaxed)
        ThreadMarkerRings.shared.resetInChild()
    }

    private init(configuration: Configuration, shared: WatchdogShared, thread: pthread_t) {
        self.configuration = configuration
        self.shared = shared
        self.thread = Locked(thread)
        targetNames = Locked(Set(configuration.targets.map(\.name)))
    }

    /// Starts watching `target` too, from the watchdog's next step. Throws
    /// ``StallWatchdogError/invalidConfiguration(_:)`` for a bad name or threshold, or a name already watched, and
    /// ``StallWatchdogError/stopped`` once ``stop()`` was called. Safe from any thread; it never waits on the
    /// watchdog thread.
    public func add(_ target: StallTarget) throws {
        try target.validate(sampleInterval: configuration.sampleInterval)
        try thread.withLock { handle in
            guard handle != nil, getpid() == processID else { throw StallWatchdogError.stopped }
            try targetNames.withLock { names in
                guard names.insert(target.name).inserted else {
                    throw StallWatchdogError.invalidConfiguration("a target named '\(target.name)' is already watched")
                }
            }
            shared.change(.add(target))
        }
    }

    /// Stops watching the target named `name`; an episode of it in progress ends now. False when no target of
    /// that name is watched (the main queue is always watched).
    @discardableResult
    public func remove(named name: String) -> Bool {
        thread.withLock { handle in
            guard handle != nil, getpid() == processID, targetNames.withLock({ $0.remove(name) != nil }) else {
                return false
            }
            shared.change(.remove(name))
            return true
        }
    }

    /// Starts watching. Creates the capture file (after expanding `%p`, `%t` and `%%` in its path, see
    /// ``Configuration/outputPath``; a file another process writes is refused, naming it), installs the signal
    /// handler (refusing to replace one the app installed) and starts the watchdog thread.
    public static func start(_ configuration: Configuration) throws -> StallWatchdog {
        try configuration.validate()
        var configuration = configuration
        configuration.outputPath = try CapturePath.expand(configuration.outputPath, origin: "outputPath")
        _ = stallcap_register_atfork { StallWatchdog.resetAfterFork() }
        guard running.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            throw StallWatchdogError.alreadyRunning
        }
        do {
            switch stallcap_install(configuration.signal) {
            case 0: break
            case EBUSY: throw StallWatchdogError.signalInUse(configuration.signal)
            case EALREADY: throw StallWatchdogError.invalidConfiguration(
                "the capture handler is already installed on another signal in this process")
            case let code: throw StallWatchdogError.system("cannot install the signal handler: \(String(cString: strerror(code)))")
            }
            _ = stallcap_set_queue_code()  // samples say which main-queue block runs; without it they say nothing
            let writer: CaptureWriter
            do { writer = try CaptureWriter(path: configuration.outputPath) } catch {
                throw StallWatchdogError.cannotWrite("\(error)")
            }
            let shared = WatchdogShared()
            let loop = WatchdogLoop(configuration: configuration, writer: writer, shared: shared)
            ThreadMarkerRings.shared.start()  // markers count from here, before start() returns
            let thread = try loop.startThread()
            return StallWatchdog(configuration: configuration, shared: shared, thread: thread)
        } catch {
            MarkerRing.shared.stop()
            running.store(false, ordering: .releasing)
            throw error
        }
    }

    /// What the watchdog has done so far.
    public var statistics: Statistics {
        Statistics(
            stalls: shared.stalls.load(ordering: .relaxed),
            saturatedEpisodes: shared.saturated.load(ordering: .relaxed), samples: shared.samples.load(ordering: .relaxed),
            missedSamples: shared.missed.load(ordering: .relaxed), droppedSamples: shared.dropped.load(ordering: .relaxed),
            mainQueueAnswered: shared.main.answeredPing.load(ordering: .acquiring) != 0)
    }

    /// Stops sampling, flushes and closes the capture file, and waits for the watchdog thread to end. It never
    /// waits on the main thread, so it is safe to call from it. When it returns, the file is closed, also for a
    /// second caller; calling it again does nothing.
    ///
    /// The watchdog runs until `stop()` is called, not until the object goes away: releasing the last reference
    /// does not stop it (optimized builds may release an unused reference early).
    public func stop() {
        // In a forked child the thread is the parent's: there is nothing to stop (nor a lock worth taking).
        guard getpid() == processID else { return }
        thread.withLock { handle in
            guard let running = handle else { return }
            shared.requestStop()
            pthread_join(running, nil)
            // Closed here, not by the thread: no stop() is writing to the stop pipe any more (the lock is held).
            stallcap_wd_forget()
            handle = nil
            Self.running.store(false, ordering: .releasing)
        }
    }
}

/// State shared between the watchdog thread, the ping blocks and the public object.
final class WatchdogShared: Sendable {
    /// The answers to the main queue's pings.
    let main = PingAnswers(reading: .mainQueue)
    /// Set once by ``requestStop()``.
    let stopRequested = Atomic<Bool>(false)
    let stalls = Atomic<Int>(0)
    let saturated = Atomic<Int>(0)
    let samples = Atomic<Int>(0)
    let missed = Atomic<Int>(0)
    let dropped = Atomic<Int>(0)
    /// Targets added and removed on the running watchdog, in order, for the watchdog thread to take
    /// (``StallWatchdog/add(_:)``); it only tries the lock, so it never waits on an app thread holding it.
    let targetChanges = Locked<[TargetChange]>([])
    /// True while ``targetChanges`` holds changes not taken yet.
    let targetsChanged = Atomic<Bool>(false)

    /// A change of the watched targets.
    enum TargetChange: Sendable {
        case add(StallTarget)
        case remove(String)
    }

    /// Asks the watchdog thread to finish.
    func requestStop() {
        stopRequested.store(true, ordering: .releasing)
        stallcap_wd_wake()
    }

    /// Queues `change` for the watchdog thread and wakes it.
    func change(_ change: TargetChange) {
        targetChanges.withLock { $0.append(change) }
        targetsChanged.store(true, ordering: .releasing)
        stallcap_wd_wake()
    }
}
