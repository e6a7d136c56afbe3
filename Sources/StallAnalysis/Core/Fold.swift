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

    /// How names read, for every input: ``StackTransforms/names`` and the captures' ``SymbolizerOptions/names``.
    /// Nil until set: each command's default then applies (full, but short in `report`'s text).
    public var names: NameStyle? {
        didSet {
            transforms.names = names ?? .full
            capture.symbolizer.names = names ?? .full
        }
    }
}

/// Folds inputs of any known format into one set of stacks.
public enum Folder {
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
        return (options.transforms.apply(to: stacks, diagnostics: &diagnostics), diagnostics)
    }

    /// Folds `inputs` in parallel and adds them to `stacks` in input order.
    private static func fold(_ inputs: [InputSource], options: FoldOptions, into stacks: inout FoldedStacks,
                             diagnostics: inout Diagnostics) throws {
        let parts = Parallel.map(inputs) { input in
            var stacks = FoldedStacks()
            var diagnostics = Diagnostics()
            if let opened = try open(input, format: options.format, diagnostics: &diagnostics) {
                try fold(opened, options: options, into: &stacks, diagnostics: &diagnostics)
            }
            return (stacks, diagnostics)
        }
        for (input, part) in zip(inputs, parts) {
            let (partStacks, partDiagnostics) = try part.get()
            diagnostics.merge(partDiagnostics)
            merge(partStacks, of: "\(input)", into: &stacks, diagnostics: &diagnostics)
        }
    }

    /// Adds the stacks of one input (`name`) to those of the inputs before it, as every command adds inputs: a
    /// stack whose count over the inputs would reach 2^64 keeps its count so far and this input's count of it is
    /// dropped with a warning. Returns the entry numbers, in `part`, of the stacks dropped.
    @discardableResult
    static func merge(_ part: FoldedStacks, of name: String, into stacks: inout FoldedStacks,
                      diagnostics: inout Diagnostics) -> [Int] {
        let dropped = stacks.mergeReportingEntries(part)
        part.withEntries { entry in
            for index in dropped {
                let stack = String(decoding: entry(index).bytes, as: UTF8.self)
                let shown = stack.count > 120 ? stack.prefix(120) + "..." : Substring(stack)
                diagnostics.warn("\(name): dropped this input's count of '\(shown)': the sum over the inputs "
                    + "would exceed 2^64-1")
            }
        }
        return dropped
    }

    /// Folds one already opened input (detection included; a stream that was only peeked at is fine) into `stacks`.
    /// `options.transforms` are not applied: apply them once all inputs are folded.
    public static func fold(_ opened: ByteStream, options: FoldOptions, into stacks: inout FoldedStacks,
                            diagnostics: inout Diagnostics) throws {
        guard let input = try detect(opened, format: options.format, diagnostics: &diagnostics) else { return }
        try fold(input, options: options, into: &stacks, diagnostics: &diagnostics)
    }

    /// Folds an input already detected (``open(_:format:diagnostics:)``) into `stacks`, with the importer of its
    /// format. `options.transforms` are not applied: apply them once all inputs are folded.
    /// Stacks already in `stacks` are other inputs': this input is folded on its own and added as ``fold(_:options:)``
    /// adds inputs, so that every command adds inputs alike (a stack whose sum over the inputs would reach 2^64
    /// loses this input's count, with a warning).
    public static func fold(_ input: DetectedInput, options: FoldOptions, into stacks: inout FoldedStacks,
                            diagnostics: inout Diagnostics) throws {
        guard stacks.count == 0 else {
            var part = FoldedStacks()
            try fold(input, options: options, into: &part, diagnostics: &diagnostics)
            merge(part, of: input.stream.name, into: &stacks, diagnostics: &diagnostics)
            return
        }
        let stream = input.stream
        switch input.format {
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
}
