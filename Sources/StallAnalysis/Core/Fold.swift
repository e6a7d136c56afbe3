/// The input formats `stallprof fold` knows.
public enum InputFormat: String, Sendable, CaseIterable {
    /// Detect the format from each input's first bytes.
    case auto
    /// stallprof capture files written by the `StallProfiler` watchdog.
    case stallprof
}

/// Options of a fold: which format to read and each format's own options.
public struct FoldOptions: Sendable {
    /// The input format. Default: `.auto`, detected per input.
    public var format: InputFormat = .auto
    /// Options for stallprof captures. Default: ``StallCaptureImporter/Options/init()``.
    public var capture = StallCaptureImporter.Options()

    /// Creates the default options.
    public init() {}
}

/// Folds inputs of any known format into one set of stacks.
public enum Folder {
    /// How many bytes format detection looks at.
    static let detectionBytes = 4096

    /// Folds every input together. Returns the stacks and the tolerated problems.
    public static func fold(_ inputs: [InputSource], options: FoldOptions) throws -> (FoldedStacks, Diagnostics) {
        var stacks = FoldedStacks()
        var diagnostics = Diagnostics()
        for input in inputs {
            let stream = try input.open()
            let format = try resolve(options.format, stream: stream)
            switch format {
            case .stallprof, .auto:
                try StallCaptureImporter(options: options.capture)
                    .importStacks(from: stream, into: &stacks, diagnostics: &diagnostics)
            }
        }
        return (stacks, diagnostics)
    }

    /// The concrete format of `stream`: the requested one, or the detected one for `.auto`.
    static func resolve(_ format: InputFormat, stream: ByteStream) throws -> InputFormat {
        guard format == .auto else { return format }
        let head = try stream.peek(detectionBytes)
        if StallCaptureImporter.recognizes(head) { return .stallprof }
        let firstLine = head.split(separator: UInt8(ascii: "\n"), maxSplits: 1, omittingEmptySubsequences: false).first ?? []
        let shown = String(decoding: firstLine.prefix(80), as: UTF8.self)
        let tried = InputFormat.allCases.filter { $0 != .auto }.map(\.rawValue).joined(separator: ", ")
        throw AnalysisError.badData(
            path: stream.name, position: "line 1",
            reason: head.isEmpty
                ? "empty input; cannot detect its format (tried \(tried))"
                : "cannot detect the format (tried \(tried)); first line: \(shown.debugDescription)")
    }
}
