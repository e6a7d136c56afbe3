/// The input formats `stallprof fold` knows.
public enum InputFormat: String, Sendable, CaseIterable {
    /// Detect the format from each input's first bytes.
    case auto
    /// stallprof capture files written by the `StallProfiler` watchdog.
    case stallprof
    /// `perf script` output (Linux perf), folded like stackcollapse-perf.pl.
    case perf
    /// macOS `sample` reports.
    case sample
    /// Folded stacks (`root;...;leaf COUNT`) from any tool.
    case folded
    /// speedscope JSON (py-spy, pyinstrument, speedscope, `stallprof export`).
    case speedscope
}

/// Options of a fold: which format to read and each format's own options.
public struct FoldOptions: Sendable {
    /// The input format. Default: `.auto`, detected per input.
    public var format: InputFormat = .auto
    /// Options for stallprof captures. Default: ``StallCaptureImporter/Options/init()``.
    public var capture = StallCaptureImporter.Options()
    /// Options for perf script input. Default: ``PerfScriptImporter/Options/init()``.
    public var perf = PerfScriptImporter.Options()
    /// Options for macOS `sample` reports. Default: ``MacSampleImporter/Options/init()``.
    public var sample = MacSampleImporter.Options()
    /// Options for folded input. Default: ``FoldedImporter/Options/init()``.
    public var folded = FoldedImporter.Options()
    /// Options for speedscope JSON. Default: ``SpeedscopeImporter/Options/init()``.
    public var speedscope = SpeedscopeImporter.Options()
    /// Rewrites applied to every stack after import (demangling, merging recursion). Default: none.
    public var transforms = StackTransforms()

    /// Creates the default options.
    public init() {}
}

/// Folds inputs of any known format into one set of stacks.
public enum Folder {
    /// How many bytes format detection looks at (perf script headers can be long).
    static let detectionBytes = 1 << 16

    /// The formats `--format auto` tries, in order.
    static let detectable: [InputFormat] = [.stallprof, .speedscope, .sample, .perf, .folded]

    /// Folds every input together, then applies `options.transforms`. Returns the stacks and the tolerated problems.
    /// Inputs are parsed in parallel (a fleet's or a CI matrix's captures use every core) and their counts summed
    /// in input order; the first input that fails, in input order, is the error thrown.
    public static func fold(_ inputs: [InputSource], options: FoldOptions) throws -> (FoldedStacks, Diagnostics) {
        var stacks = FoldedStacks()
        var diagnostics = Diagnostics()
        // As many inputs at once as there are cores, merged before the next ones: memory holds the sum so far and
        // one table per core, not one per input. Standard input named twice is read in turn (the second time it
        // is empty), never by two threads at once.
        let width = inputs.filter(\.isStandardInput).count > 1 ? 1 : Parallel.width
        for start in stride(from: 0, to: inputs.count, by: width) {
            let window = Array(inputs[start..<min(start + width, inputs.count)])
            try fold(window, options: options, into: &stacks, diagnostics: &diagnostics)
        }
        return (options.transforms.apply(to: stacks), diagnostics)
    }

    /// Folds `inputs` in parallel and adds them to `stacks` in input order.
    private static func fold(_ inputs: [InputSource], options: FoldOptions, into stacks: inout FoldedStacks,
                             diagnostics: inout Diagnostics) throws {
        let parts = Parallel.map(inputs) { input in
            var stacks = FoldedStacks()
            var diagnostics = Diagnostics()
            try fold(input.open(), options: options, into: &stacks, diagnostics: &diagnostics)
            return (stacks, diagnostics)
        }
        for (input, part) in zip(inputs, parts) {
            let (partStacks, partDiagnostics) = try part.get()
            diagnostics.merge(partDiagnostics)
            guard stacks.count > 0 else {
                let unit = stacks.unit
                stacks = partStacks
                stacks.unit = CountUnit.combined(unit, partStacks.unit)
                continue
            }
            for stack in stacks.merge(partStacks) {
                let shown = stack.count > 120 ? stack.prefix(120) + "..." : Substring(stack)
                diagnostics.warn("\(input): dropped this input's count of '\(shown)': the sum over the inputs "
                    + "would exceed 2^64-1")
            }
        }
    }

    /// Folds one already opened input (detection included; a stream that was only peeked at is fine) into `stacks`.
    /// `options.transforms` are not applied: apply them once all inputs are folded.
    public static func fold(_ opened: ByteStream, options: FoldOptions, into stacks: inout FoldedStacks,
                            diagnostics: inout Diagnostics) throws {
        let stream = try opened.decodingUTF16()
        if try isEmptyInput(stream) {
            diagnostics.emptyInput(stream.name)
            return
        }
        let format = try resolve(options.format, stream: stream)
        if format != .stallprof && format != .auto {
            let head = try stream.peek(detectionBytes)
            if let nul = head.firstIndex(of: 0) {
                throw AnalysisError.badData(
                    path: stream.name, position: "byte \(nul - head.startIndex)",
                    reason: "binary data (\(BinaryInput.describe(head))), not a \(format.rawValue) text profile")
            }
        }
        switch format {
        case .stallprof, .auto:
            try StallCaptureImporter(options: options.capture)
                .importStacks(from: stream, into: &stacks, diagnostics: &diagnostics)
        case .perf:
            try PerfScriptImporter(options: options.perf)
                .importStacks(from: stream, into: &stacks, diagnostics: &diagnostics)
        case .sample:
            try MacSampleImporter(options: options.sample)
                .importStacks(from: stream, into: &stacks, diagnostics: &diagnostics)
        case .folded:
            try FoldedImporter(options: options.folded)
                .importStacks(from: stream, into: &stacks, diagnostics: &diagnostics)
        case .speedscope:
            try SpeedscopeImporter(options: options.speedscope)
                .importStacks(from: stream, into: &stacks, diagnostics: &diagnostics)
        }
    }

    /// Opens `input` for a command that detects its format: its stream and first bytes (``detectionBytes``), or nil
    /// with the empty-input warning every command gives (``Diagnostics/emptyInput(_:)``) when it holds no data.
    public static func openForDetection(_ input: InputSource, diagnostics: inout Diagnostics) throws
        -> (stream: ByteStream, head: ArraySlice<UInt8>)?
    {
        let stream = try input.open()
        if try isEmptyInput(stream) {
            diagnostics.emptyInput(stream.name)
            return nil
        }
        return (stream, try stream.peek(detectionBytes))
    }

    /// True when `stream` holds no data: no bytes, or only white space. Every command treats such an input the
    /// same way: a warning naming it (``Diagnostics/emptyInput(_:)``), no stacks, exit 0.
    public static func isEmptyInput(_ stream: ByteStream) throws -> Bool {
        let head = try stream.peek(detectionBytes)
        return head.count < detectionBytes && head.allSatisfy { $0 == 32 || ($0 >= 9 && $0 <= 13) }
    }

    /// True when `head` looks like `format`.
    static func recognizes(_ format: InputFormat, _ head: ArraySlice<UInt8>) -> Bool {
        switch format {
        case .auto: return false
        case .stallprof: return StallCaptureImporter.recognizes(head)
        case .perf: return PerfScriptImporter.recognizes(head)
        case .sample: return MacSampleImporter.recognizes(head)
        case .folded: return FoldedImporter.recognizes(head)
        case .speedscope: return SpeedscopeImporter.recognizes(head)
        }
    }

    /// The concrete format of `stream`: the requested one, or the detected one for `.auto`.
    static func resolve(_ format: InputFormat, stream: ByteStream) throws -> InputFormat {
        guard format == .auto else { return format }
        var head = try stream.peek(detectionBytes)
        // A first line longer than the window (a deep folded stack): look further, up to the line length limit.
        while !head.contains(10) && head.count >= detectionBytes && head.count < ByteStream.maxLineLength {
            let longer = try stream.peek(min(head.count * 4, ByteStream.maxLineLength))
            if longer.count == head.count { break }
            head = longer
        }
        if let found = detectable.first(where: { recognizes($0, head) }) { return found }
        let tried = detectable.map(\.rawValue).joined(separator: ", ")
        if let binary = BinaryInput.name(head) {
            throw AnalysisError.badData(path: stream.name, position: "byte 0", reason: "binary data: \(binary); not a profile stallprof reads (tried \(tried))")
        }
        if let nul = head.firstIndex(of: 0) {
            throw AnalysisError.badData(
                path: stream.name, position: "byte \(nul - head.startIndex)",
                reason: "binary data (\(BinaryInput.describe(head))), not a profile stallprof reads (tried \(tried))")
        }
        let lines = head.split(separator: 10, omittingEmptySubsequences: false)
        guard let index = lines.firstIndex(where: { line in
            !line.allSatisfy(PerfLineSyntax.isSpace) && line.first != UInt8(ascii: "#")
        }) else {
            throw AnalysisError.badData(
                path: stream.name, position: "",
                reason: head.isEmpty
                    ? "empty input; cannot detect its format (tried \(tried))"
                    : "no data lines, only blank or comment lines; cannot detect the format (tried \(tried))")
        }
        throw AnalysisError.badData(
            path: stream.name, position: "line \(index + 1)",
            reason: "cannot detect the format (tried \(tried)); this line fits none: "
                + UnrecognizedLines.quote(lines[index]) + "; use --format")
    }
}
