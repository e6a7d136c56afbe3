import StallFormat

/// Reads stallprof capture files (written by the `StallProfiler` watchdog) and folds their samples, resolving
/// names offline from the image map stored in the file.
public struct StallCaptureImporter: StackImporter {
    /// Options for captures. Every field documents its default.
    public struct Options: Sendable {
        /// Which episodes and samples are kept. Default: ``CaptureSelection/init()``, all of them.
        public var selection = CaptureSelection()
        /// How names are resolved. Default: ``SymbolizerOptions/init()``.
        public var symbolizer = SymbolizerOptions()

        /// Creates the default options.
        public init() {}
    }

    /// `stallprof`.
    public static let formatName = "stallprof"

    /// Captures start with the `STALLPRF` magic.
    public static func recognizes(_ head: ArraySlice<UInt8>) -> Bool { CaptureReader.looksLikeCapture(head) }

    /// The options in use.
    public let options: Options

    /// Creates an importer.
    public init(options: Options = Options()) { self.options = options }

    /// An importer with the options of `fold`'s ``FoldOptions/capture``.
    public init(_ fold: FoldOptions) { self.init(options: fold.capture) }

    /// Reads a whole capture and adds one count per sample.
    public func importStacks(from stream: ByteStream, into stacks: inout FoldedStacks, diagnostics: inout Diagnostics)
        throws
    {
        fold(try Self.read(stream), into: &stacks, diagnostics: &diagnostics)
    }

    /// Parses the capture `stream` holds; a corrupt one is ``StallError/badData(path:position:reason:)``.
    public static func read(_ stream: ByteStream) throws -> Capture {
        try parse(try stream.readAll(), source: stream.name)
    }

    /// Parses the capture `bytes` read from `source`; a corrupt one is ``StallError/badData(path:position:reason:)``.
    public static func parse(_ bytes: [UInt8], source: String) throws -> Capture {
        do {
            return try CaptureReader.parse(bytes, source: source)
        } catch let error as CaptureFormatError {
            throw StallError.badData(path: error.source, position: "byte \(error.offset)", reason: error.reason)
        }
    }

    /// Folds an already parsed capture.
    public func fold(_ capture: Capture, into stacks: inout FoldedStacks, diagnostics: inout Diagnostics) {
        forEachSample(of: capture, diagnostics: &diagnostics) { stacks.add(frames: $0) }
    }

    /// The capture's selected samples in time order, newest first (the order flamegraph.pl's `--flamechart`
    /// expects), consecutive samples with the same stack merged into one entry. Stalls follow each other in the
    /// order they began.
    public func timeOrdered(_ capture: Capture, diagnostics: inout Diagnostics) -> [WeightedStack] {
        var entries: [WeightedStack] = []
        forEachSample(of: capture, diagnostics: &diagnostics) { frames in
            let stack = frames.joined(separator: ";")
            if entries.last?.stack == stack {
                entries[entries.count - 1].count += 1
            } else {
                entries.append(WeightedStack(stack: stack, count: 1))
            }
        }
        return entries.reversed()
    }

    /// How many of the selected samples were at each place (`Workloads.swift:71`) in each function, by the name
    /// ``fold(_:into:diagnostics:)`` gives its frames without ``SymbolizerOptions/lines`` (``mostCommon(_:)`` picks
    /// one per function). For the flame graph's tooltips. Warns, as `fold --lines` does, about images without line
    /// information (unless ``SymbolizerOptions/inlines`` is on: folding warns then).
    public func placeCounts(of capture: Capture, diagnostics: inout Diagnostics) -> [String: [String: Int]] {
        var options = options.symbolizer
        options.lines = true
        let symbolizer = Symbolizer(capture: capture, options: options)
        defer {
            if !options.inlines, let lines = symbolizer.linesWarning { diagnostics.warn("\(capture.source): \(lines)") }
        }
        var tally: [String: [String: Int]] = [:]
        for selected in self.options.selection.episodes(of: capture) {
            for sample in selected.samples {
                for (name, place) in symbolizer.rootFirstNamesAndPlaces(leafFirst: sample.frames) {
                    if let place { tally[name, default: [:]][place, default: 0] += 1 }
                }
            }
        }
        return tally
    }

    /// The place with the most samples for each function of `counts` (ties: the smallest place).
    public static func mostCommon(_ counts: [String: [String: Int]]) -> [String: String] {
        counts.mapValues { places in places.max { ($0.value, $1.key) < ($1.value, $0.key) }!.key }
    }

    /// Calls `body` with the root-first names of each selected sample, in capture order.
    private func forEachSample(of capture: Capture, diagnostics: inout Diagnostics, _ body: ([String]) -> Void) {
        options.selection.warnAboutReading(capture, diagnostics: &diagnostics)
        let symbolizer = Symbolizer(capture: capture, options: options.symbolizer)
        for selected in options.selection.episodes(of: capture) {
            for sample in selected.samples {
                body(TruncatedStack.names(symbolizer.rootFirstNames(leafFirst: sample.frames), of: sample))
            }
        }
        symbolizer.warnings.forEach { diagnostics.warn("\(capture.source): \($0)") }
        if let lines = symbolizer.linesWarning { diagnostics.warn("\(capture.source): \(lines)") }
    }
}

/// Stacks deeper than the capture's frame limit lose their outermost frames; they get a root frame of their own so
/// they never pass for complete stacks in fold, flamegraph and report.
public enum TruncatedStack {
    /// The root frame of a truncated stack, exactly `[truncated]`.
    public static let rootFrame = "[truncated]"

    /// `names` (root first) with ``rootFrame`` in front when `sample` was cut short.
    public static func names(_ names: [String], of sample: Sample) -> [String] {
        sample.flags.contains(.truncated) ? [rootFrame] + names : names
    }
}
