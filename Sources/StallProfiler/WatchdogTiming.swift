import CStallCapture

/// The configuration's durations resolved once, in the nanoseconds the watchdog thread works with: its detectors,
/// samplers and probe take them from here, so that no part converts a `Duration` or derives a period of its own.
/// The values are bounded by ``StallWatchdog/Configuration/validate(source:)``, the one place that checks them.
struct WatchdogTiming: Equatable {
    /// The main queue unresponsive this long is a stall.
    let thresholdNs: UInt64
    /// Time between samples of an episode.
    let sampleIntervalNs: UInt64
    /// Time between pings while the main queue answers: ``pingPeriodNs(thresholdNs:)``.
    let pingPeriodNs: UInt64
    /// How long one sample request waits for its answer: two scheduler ticks (`stallcap_tick_ns`; 8 ms at
    /// HZ=250), or the configured timeout when shorter. A request is never waited for longer (`stallcap_sample`).
    let sampleTimeoutNs: Int64
    /// True when an episode's samples are pipelined (``EpisodeSampler``): each wake collects the answer to the
    /// request the wake before sent and sends the next, so the watchdog waits for no answer. Only when the sample
    /// interval is at least two scheduler ticks: the schedule puts the next wake at least half an interval after a
    /// request (``StallDetector/sampleEnded(atNs:)``), so a tick that finds the thread running comes between the
    /// two. Asked more often, the watchdog would wake at every interval to find no answer yet: it waits for it.
    let pipelinesSamples: Bool
    /// How long the once-per-stall sample of a running lock owner may wait for its handler, two ticks at a time
    /// while the owner stays runnable: the configured sample timeout (by default twice the sample interval,
    /// between 12 ms and 200 ms), but at least 100 ms, because that one stack is not taken again and, on a loaded
    /// machine, a runnable owner can wait that long for a CPU (seen: 10 ms ran out under a load of 9 on two cores),
    /// and then for a tick that finds it running (50 ms ran out once in a loaded CI run).
    let ownerSampleTimeoutNs: Int64
    /// How often a thread that makes no CPU progress is sampled for real (its last stack is reused in between).
    let blockedResampleNs: UInt64
    /// The sustained period of a saturated episode; nil when saturation detection is off.
    let saturationPeriodNs: UInt64?
    /// Time between two saturation checks: once per ping period, or four times per saturation period when that
    /// is shorter.
    let saturationCheckIntervalNs: UInt64

    /// The timing of `configuration`.
    init(_ configuration: StallWatchdog.Configuration) {
        thresholdNs = UInt64(configuration.threshold.nanoseconds)
        sampleIntervalNs = UInt64(configuration.sampleInterval.nanoseconds)
        pingPeriodNs = Self.pingPeriodNs(thresholdNs: thresholdNs)
        let requestedNs = configuration.sampleTimeout?.nanoseconds
            ?? min(max(Int64(sampleIntervalNs) * 2, 12_000_000), 200_000_000)
        sampleTimeoutNs = min(requestedNs, Int64(2 * stallcap_tick_ns()))
        pipelinesSamples = sampleIntervalNs >= 2 * stallcap_tick_ns()
        ownerSampleTimeoutNs = max(requestedNs, 100_000_000)
        blockedResampleNs = UInt64(configuration.blockedResampleInterval.nanoseconds)
        saturationPeriodNs = configuration.saturationPeriod.map { UInt64($0.nanoseconds) }
        saturationCheckIntervalNs = min(pingPeriodNs, (saturationPeriodNs ?? .max) / 4)
    }

    /// The ping period of a threshold: a quarter of it, at least 1 ms.
    static func pingPeriodNs(thresholdNs: UInt64) -> UInt64 { max(thresholdNs / 4, 1_000_000) }
}

extension StallWatchdog.Configuration {
    /// A field whose value may come from an environment variable, for messages that name where a bad value came
    /// from.
    enum Field: Hashable {
        case threshold, sampleInterval, saturationPeriod
    }

    /// Checks the values, throwing ``StallWatchdogError/invalidConfiguration(_:)`` for the first bad one: the one
    /// place that bounds them. `source` names where a field's value came from (`STALLPROF_THRESHOLD_MS=5`), nil
    /// for a value set in code; the message about that field starts with it.
    func validate(source: (Field) -> String? = { _ in nil }) throws {
        func refused(_ field: Field?, _ message: String) -> StallWatchdogError {
            .invalidConfiguration((field.flatMap(source).map { "\($0): " } ?? "") + message)
        }
        guard threshold >= .milliseconds(10), threshold <= .seconds(3600) else {
            throw refused(.threshold, "threshold must be between 10 ms and 1 hour, not \(threshold)")
        }
        guard sampleInterval >= .microseconds(500), sampleInterval <= threshold else {
            throw refused(
                .sampleInterval,
                "sampleInterval must be between 0.5 ms and the threshold (\(threshold)), not \(sampleInterval)")
        }
        guard !outputPath.isEmpty else { throw refused(nil, "outputPath is empty") }
        try CapturePath.validate(outputPath, origin: "outputPath")
        guard (16...256).contains(maxFrames) else {
            throw refused(nil, "maxFrames must be between 16 and 256, not \(maxFrames)")
        }
        guard stallcap_signal_allowed(signal) != 0 else {
            throw refused(nil, "signal \(signal) cannot be used; use SIGPROF, SIGUSR1, SIGUSR2 or a real-time signal")
        }
        if let sampleTimeout, sampleTimeout <= .zero || sampleTimeout > min(.seconds(1), threshold) {
            throw refused(nil, "sampleTimeout must be positive and at most 1 s and the threshold, not \(sampleTimeout)")
        }
        if let saturationPeriod, saturationPeriod < .milliseconds(100) || saturationPeriod > .seconds(3600) {
            throw refused(
                .saturationPeriod,
                "saturationPeriod must be between 100 ms and 1 hour (or nil for off), not \(saturationPeriod)")
        }
        guard blockedResampleInterval > .zero, blockedResampleInterval <= .seconds(3600) else {
            throw refused(nil, "blockedResampleInterval must be between 0 and 1 hour, not \(blockedResampleInterval)")
        }
        try targets.validate(sampleInterval: sampleInterval)
    }
}
