import Dispatch
#if canImport(Glibc)
import Glibc
#endif

extension StallWatchdog {
    /// How the watchdog detects and samples stalls. Every field documents its default.
    public struct Configuration: Sendable {
        /// The main thread unresponsive this long is a stall. Default: 250 ms (Apple's hang threshold).
        public var threshold: Duration
        /// Time between stack samples during a stall. Default: 10 ms.
        public var sampleInterval: Duration
        /// Where the capture file goes. It is created or truncated by ``StallWatchdog/start(_:)``, which first
        /// expands `%p` (the process id), `%t` (the start time, UTC: `20260114T093012.345Z`) and `%%` (a `%`);
        /// any other `%` sequence is refused. The watchdog's ``StallWatchdog/configuration`` holds the expanded
        /// path. One file serves one process: a path another process is writing is refused at start, naming it.
        public var outputPath: String
        /// The signal used to interrupt the stalled thread: `SIGPROF`, `SIGUSR1`, `SIGUSR2` or a real-time signal.
        /// Default: `SIGPROF`, which debuggers pass through silently. If the app already handles or ignores it,
        /// start fails rather than replacing that.
        public var signal: Int32 = SIGPROF
        /// Most frames kept per sample, from 16 to 256. Default: 256.
        public var maxFrames: Int = 256
        /// How long to wait for the stalled thread to answer a sample request before counting it missed, at most
        /// 1 s and at most the threshold. The signal comes at a scheduler tick that finds the thread running (4 ms
        /// apart at the usual HZ=250): a request is waited for two ticks at most, whatever this says, and a shorter
        /// timeout misses samples. A lock owner's one sample is asked for this long, at least 100 ms. Default: nil,
        /// meaning twice the sample interval, between 12 ms and 200 ms.
        public var sampleTimeout: Duration? = nil
        /// While the stalled thread makes no CPU progress it is not signalled again (its last stack is reused);
        /// it is re-sampled for real at least this often. Default: 1 s.
        public var blockedResampleInterval: Duration = .seconds(1)
        /// How long the thread servicing the main queue must stay saturated (answering pings, but never sleeping
        /// voluntarily and active, on a CPU or waiting for one, at least 75 % of the time) before a saturated
        /// episode is recorded and sampled; from 100 ms to 1 hour. nil turns saturation detection off.
        /// Default: 1 s. See docs/WATCHDOG.md.
        public var saturationPeriod: Duration? = .seconds(1)
        /// Serial executors watched besides the main queue (event loops, serial queues), each with a name and a
        /// threshold of its own; ``StallWatchdog/add(_:)`` adds more to a running watchdog. Default: none (the
        /// main queue alone). See ``StallTarget``.
        public var targets: [StallTarget] = []

        /// Posts a block to the thread whose responsiveness is watched: the main queue in apps; tests substitute
        /// a thread of their own.
        var post: @Sendable (@escaping @Sendable () -> Void) -> Void = { DispatchQueue.main.async(execute: $0) }

        /// Creates a configuration.
        /// - Parameters:
        ///   - threshold: main thread unresponsive this long = a stall (default 250 ms).
        ///   - sampleInterval: stack sampling period during a stall (default 10 ms).
        ///   - outputPath: where the capture goes.
        public init(
            threshold: Duration = .milliseconds(250), sampleInterval: Duration = .milliseconds(10),
            outputPath: String
        ) {
            self.threshold = threshold
            self.sampleInterval = sampleInterval
            self.outputPath = outputPath
        }
    }
}

extension Duration {
    /// The duration in whole nanoseconds (saturating).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return scaled.addingReportingOverflow(attoseconds / 1_000_000_000).partialValue
    }

    /// `value` milliseconds (a finite number), truncated to whole nanoseconds and saturated at 9e18 ns (285
    /// years) either way, so that any number read from the environment becomes a duration for validation to judge.
    static func milliseconds(saturating value: Double) -> Duration {
        .nanoseconds(Int64(max(-9e18, min(9e18, value * 1_000_000))))
    }
}

/// Why the watchdog could not start.
public enum StallWatchdogError: Error, CustomStringConvertible, Equatable {
    /// A configuration value (or environment variable) is out of range or malformed.
    case invalidConfiguration(String)
    /// Another watchdog is running in this process; stop it first.
    case alreadyRunning
    /// The app already handles this signal; choose another with ``StallWatchdog/Configuration/signal``.
    case signalInUse(Int32)
    /// The capture file could not be created.
    case cannotWrite(String)
    /// A system call failed (the reason says which).
    case system(String)
    /// The watchdog was stopped: it takes no new targets.
    case stopped

    /// A sentence for logs.
    public var description: String {
        switch self {
        case .invalidConfiguration(let message): return "invalid stall watchdog configuration: \(message)"
        case .alreadyRunning: return "a stall watchdog is already running in this process"
        case .signalInUse(let signal):
            return "signal \(signal) already has a handler in this app; set Configuration.signal to a free signal"
        case .cannotWrite(let message): return "cannot write the stall capture: \(message)"
        case .system(let message): return "stall watchdog: \(message)"
        case .stopped: return "the stall watchdog was stopped"
        }
    }
}
