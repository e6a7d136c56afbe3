/// Errors of the analysis library. The CLI maps each kind to an exit code in one place.
public enum AnalysisError: Error, CustomStringConvertible, Equatable {
    /// An input could not be opened or read (exit 1 in the CLI... unless it is bad data).
    case input(path: String, reason: String)
    /// An input is not in the expected format or is corrupt: `path`, a position (line or byte) and a reason
    /// (exit 65).
    case badData(path: String, position: String, reason: String)
    /// The request makes no sense (exit 64).
    case usage(String)
    /// An output could not be written (exit 1).
    case output(path: String, reason: String)

    /// One line for standard error.
    public var description: String {
        switch self {
        case .input(let path, let reason): return "\(path): \(reason)"
        case .badData(let path, let position, let reason):
            return position.isEmpty ? "\(path): \(reason)" : "\(path): \(position): \(reason)"
        case .usage(let message): return message
        case .output(let path, let reason): return "\(path): \(reason)"
        }
    }
}

/// Non-fatal problems found while reading inputs, reported on standard error.
public struct Diagnostics: Sendable {
    /// Messages in the order they were found.
    public private(set) var warnings: [String] = []

    /// Creates an empty list.
    public init() {}

    /// Adds a warning.
    public mutating func warn(_ message: String) { warnings.append(message) }
}
