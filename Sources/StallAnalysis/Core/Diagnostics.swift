import StallFormat

/// Non-fatal problems found while reading inputs, reported on standard error.
public struct Diagnostics: Sendable {
    /// Messages in the order they were found.
    public private(set) var warnings: [String] = []

    /// Creates an empty list.
    public init() {}

    /// Inputs that were empty (no bytes, or only white space), in order.
    public private(set) var emptyInputs: [String] = []

    /// Inputs read as stallprof captures, in order: a capture from which nothing is selected (a run without a
    /// stall, or `--state` keeping none) is valid, not bad data.
    public private(set) var captureInputs: [String] = []

    /// Records that input `name` was read as a capture.
    public mutating func captureInput(_ name: String) { captureInputs.append(name) }

    /// Adds a warning.
    public mutating func warn(_ message: String) { warnings.append(message) }

    /// Appends `other`'s warnings and empty inputs after these.
    public mutating func merge(_ other: Diagnostics) {
        warnings += other.warnings
        emptyInputs += other.emptyInputs
        captureInputs += other.captureInputs
    }

    /// Records that input `name` is empty, with the warning every command prints for it.
    public mutating func emptyInput(_ name: String) {
        emptyInputs.append(name)
        warn("\(name): empty input (no data); it contributes no stacks")
    }
}

/// Lines of one input that no rule recognized: counted, with the first few kept for the report, or an error at the
/// first one in strict mode. Every text importer reports through this, so all formats word it the same way.
public struct UnrecognizedLines {
    /// How many lines are quoted in the warning.
    public static let shownLines = 3
    /// The input's name.
    public let path: String
    /// True to fail at the first unrecognized line (`--strict`).
    public let strict: Bool
    /// Lines seen so far.
    public private(set) var count = 0
    private var examples: [String] = []
    /// What the warning calls the lines, singular and plural. Default: unrecognized line(s).
    public var label = (one: "unrecognized line", many: "unrecognized lines")

    /// Starts counting for `path`.
    public init(path: String, strict: Bool) {
        self.path = path
        self.strict = strict
    }

    /// Records line `number`, whose text is `line`, as unrecognized (`why` says what was expected). Throws
    /// ``StallError/badData(path:position:reason:)`` in strict mode.
    public mutating func record(_ line: UnsafeBufferPointer<UInt8>, number: Int, why: String) throws {
        count += 1
        guard strict || examples.count < Self.shownLines else { return }
        let shown = Self.quote(line)
        if strict {
            throw StallError.badData(path: path, position: "line \(number)", reason: "\(why): \(shown)")
        }
        examples.append("line \(number): \(shown)")
    }

    /// Adds the summary to `diagnostics` when any line was unrecognized.
    public func report(to diagnostics: inout Diagnostics) {
        guard count > 0 else { return }
        let more = count > examples.count ? "; ..." : ""
        diagnostics.warn("\(path): \(count) \(count == 1 ? label.one : label.many) skipped (\(examples.joined(separator: "; "))\(more)); --strict makes this an error")
    }

    /// A line as messages show it: at most 80 bytes, quoted, control characters escaped.
    public static func quote<C: Collection>(_ line: C) -> String where C.Element == UInt8 {
        let text = String(decoding: line.prefix(80), as: UTF8.self)
        return text.debugDescription + (line.count > 80 ? "..." : "")
    }
}
