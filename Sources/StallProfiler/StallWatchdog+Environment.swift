import StallFormat
#if canImport(Glibc)
import Glibc
#endif

extension StallWatchdog {
    /// Environment variable naming the capture path; when unset, ``startFromEnvironment(_:)`` starts nothing.
    /// `%p` (pid), `%t` (start time) and `%%` are expanded at start (``Configuration/outputPath``): every process
    /// that inherits the variable (a process tree, tests run in parallel) gets a file of its own with `%p`.
    public static let outputVariable = EnvironmentName.output
    /// Environment variable with the stall threshold in milliseconds (default 250).
    public static let thresholdVariable = EnvironmentName.threshold
    /// Environment variable with the sampling interval in milliseconds (default 10; fractions allowed).
    public static let intervalVariable = EnvironmentName.interval
    /// Environment variable with the saturation period in milliseconds (default 1000; 0 turns saturation
    /// detection off). See ``Configuration/saturationPeriod``.
    public static let saturationVariable = EnvironmentName.saturation
    /// Environment variable that watches Swift's cooperative pool (``StallTarget/cooperativePool(threshold:priority:)``,
    /// `.medium`) with this threshold in milliseconds; unset, empty or 0: not watched.
    public static let poolVariable = EnvironmentName.pool

    /// The configuration the environment describes: nil when `STALLPROF_OUTPUT` is unset or empty.
    /// Throws ``StallWatchdogError/invalidConfiguration(_:)`` naming the variable when a value is malformed.
    public static func configuration(fromEnvironment environment: [String: String]) throws -> Configuration? {
        guard let path = environment[outputVariable], !path.isEmpty else { return nil }
        try CapturePath.validate(path, origin: outputVariable)
        var configuration = Configuration(outputPath: path)
        // The variables only give numbers; their bounds are the configuration's (validate), named after the
        // variable that set a bad one.
        var sources: [Configuration.Field: String] = [:]
        func milliseconds(_ name: String, _ field: Configuration.Field) throws -> Duration? {
            guard let raw = environment[name] else { return nil }
            guard let value = Double(raw.trimmingBlanks()), value.isFinite else {
                throw StallWatchdogError.invalidConfiguration("\(name)=\(raw) is not a number of milliseconds")
            }
            sources[field] = "\(name)=\(raw)"
            return .milliseconds(saturating: value)
        }
        if let threshold = try milliseconds(thresholdVariable, .threshold) { configuration.threshold = threshold }
        if let interval = try milliseconds(intervalVariable, .sampleInterval) { configuration.sampleInterval = interval }
        if let raw = environment[saturationVariable] {
            if Double(raw.trimmingBlanks()) == 0 {
                configuration.saturationPeriod = nil
            } else {
                configuration.saturationPeriod = try milliseconds(saturationVariable, .saturationPeriod)
            }
        }
        try configuration.validate(source: { sources[$0] })
        if let raw = environment[poolVariable], !raw.trimmingBlanks().isEmpty, Double(raw.trimmingBlanks()) != 0 {
            guard let threshold = try milliseconds(poolVariable, .threshold) else { return configuration }
            configuration.targets.append(.cooperativePool(threshold: threshold))
            do { try configuration.targets.validate(sampleInterval: configuration.sampleInterval) } catch {
                guard case .invalidConfiguration(let message) = error as? StallWatchdogError else { throw error }
                throw StallWatchdogError.invalidConfiguration("\(poolVariable)=\(raw): \(message)")
            }
        }
        return configuration
    }

    /// The watchdog's variables (`STALLPROF_OUTPUT`, `_THRESHOLD_MS`, `_INTERVAL_MS`, `_SATURATION_MS`,
    /// `_POOL_MS`) that are set in this process's environment, read with `getenv`.
    public static func processEnvironment() -> [String: String] {
        var values: [String: String] = [:]
        for name in [outputVariable, thresholdVariable, intervalVariable, saturationVariable, poolVariable] {
            values[name] = environmentValue(name)
        }
        return values
    }

    /// Starts a watchdog configured by `STALLPROF_OUTPUT`, `STALLPROF_THRESHOLD_MS`, `STALLPROF_INTERVAL_MS`,
    /// `STALLPROF_SATURATION_MS` and `STALLPROF_POOL_MS` (default: this process's, ``processEnvironment()``);
    /// returns nil (and starts nothing) when `STALLPROF_OUTPUT` is unset.
    public static func startFromEnvironment(
        _ environment: [String: String] = processEnvironment()
    ) throws -> StallWatchdog? {
        guard let configuration = try configuration(fromEnvironment: environment) else { return nil }
        return try start(configuration)
    }
}

/// The value of environment variable `name` in this process, or nil when it is unset.
func environmentValue(_ name: String) -> String? {
    getenv(name).map { String(cString: $0) }
}

extension StringProtocol {
    /// The text without the spaces and tabs around it.
    func trimmingBlanks() -> String {
        func blank(_ character: Character) -> Bool { character == " " || character == "\t" }
        return String(drop(while: blank).reversed().drop(while: blank).reversed())
    }
}
