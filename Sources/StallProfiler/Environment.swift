import Foundation
import StallFormat

extension StallWatchdog {
    /// Environment variable naming the capture path; when unset, ``startFromEnvironment(_:)`` starts nothing.
    public static let outputVariable = EnvironmentName.output
    /// Environment variable with the stall threshold in milliseconds (default 250).
    public static let thresholdVariable = EnvironmentName.threshold
    /// Environment variable with the sampling interval in milliseconds (default 10; fractions allowed).
    public static let intervalVariable = EnvironmentName.interval
    /// Environment variable with the saturation period in milliseconds (default 1000; 0 turns saturation
    /// detection off). See ``Configuration/saturationPeriod``.
    public static let saturationVariable = EnvironmentName.saturation

    /// The configuration the environment describes: nil when `STALLPROF_OUTPUT` is unset or empty.
    /// Throws ``StallWatchdogError/invalidConfiguration(_:)`` naming the variable when a value is malformed.
    public static func configuration(fromEnvironment environment: [String: String]) throws -> Configuration? {
        guard let path = environment[outputVariable], !path.isEmpty else { return nil }
        var configuration = Configuration(outputPath: path)
        func milliseconds(_ name: String) throws -> Duration? {
            guard let raw = environment[name] else { return nil }
            let trimmed = raw.trimmingCharacters(in: .whitespaces)
            guard let value = Double(trimmed), value.isFinite, value > 0, value <= 3_600_000 else {
                throw StallWatchdogError.invalidConfiguration(
                    "\(name)=\(raw) is not a number of milliseconds between 0 and 3600000")
            }
            return .nanoseconds(Int64(value * 1_000_000))
        }
        if let threshold = try milliseconds(thresholdVariable) { configuration.threshold = threshold }
        if let interval = try milliseconds(intervalVariable) { configuration.sampleInterval = interval }
        if let raw = environment[saturationVariable] {
            if Double(raw.trimmingCharacters(in: .whitespaces)) == 0 {
                configuration.saturationPeriod = nil
            } else {
                configuration.saturationPeriod = try milliseconds(saturationVariable)
            }
        }
        try configuration.validate()
        return configuration
    }

    /// Starts a watchdog configured by `STALLPROF_OUTPUT`, `STALLPROF_THRESHOLD_MS`, `STALLPROF_INTERVAL_MS` and
    /// `STALLPROF_SATURATION_MS`;
    /// returns nil (and starts nothing) when `STALLPROF_OUTPUT` is unset.
    public static func startFromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> StallWatchdog? {
        guard let configuration = try configuration(fromEnvironment: environment) else { return nil }
        return try start(configuration)
    }
}
