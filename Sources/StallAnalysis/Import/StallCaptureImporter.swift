import StallFormat

/// Which stalls' samples to keep.
public enum StallStateFilter: String, Sendable, CaseIterable {
    /// Every stall.
    case all
    /// Stalls whose thread burned CPU.
    case busy
    /// Stalls whose thread waited.
    case blocked

    /// True when a stall in `state` passes (an unclassifiable stall passes only `.all`).
    public func accepts(_ state: StallState?) -> Bool {
        switch self {
        case .all: return true
        case .busy: return state == .busy
        case .blocked: return state == .blocked
        }
    }
}

/// Which kinds of episode to keep.
public enum EpisodeKindFilter: String, Sendable, CaseIterable {
    /// Every episode.
    case all
    /// Stalls only: the main queue did not answer within the threshold.
    case stall
    /// Saturated episodes only: the main queue answered, but its thread never rested.
    case saturated

    /// True when an episode of `kind` passes.
    public func accepts(_ kind: EpisodeKind) -> Bool {
        switch self {
        case .all: return true
        case .stall: return kind == .stall
        case .saturated: return kind == .saturated
        }
    }
}

/// Reads stallprof capture files (written by the `StallProfiler` watchdog) and folds their samples, resolving
/// names offline from the image map stored in the file.
public struct StallCaptureImporter: StackImporter {
    /// Options for captures. Every field documents its default.
    public struct Options: Sendable {
        /// Keep only the samples of busy or of blocked episodes. Default: `.all`.
        public var state: StallStateFilter = .all
        /// Keep only stalls or only saturated episodes. Default: `.all`.
        public var kind: EpisodeKindFilter = .all
        /// Keep only these episode numbers. Default: empty, every episode.
        public var stallIDs: Set<UInt32> = []
        /// Keep only samples taken this many nanoseconds after their stall's start (both ends included). Default:
        /// nil, every sample.
        public var window: ClosedRange<UInt64>? = nil
        /// How names are resolved. Default: ``SymbolizerOptions/init()``.
        public var symbolizer = SymbolizerOptions()

        /// Creates the default options.
        public init() {}

        /// True when the episode passes the kind, state and number filters.
        public func accepts(_ stall: Stall) -> Bool {
            kind.accepts(stall.kind) && state.accepts(stall.state) && (stallIDs.isEmpty || stallIDs.contains(stall.id))
        }

        /// True when `sample` of `stall` lies in ``window`` (always true without a window).
        public func accepts(_ sample: Sample, of stall: Stall) -> Bool {
            guard let window else { return true }
            return window.contains(sample.timestampNs &- min(sample.timestampNs, stall.begin.startNs))
        }
    }

    /// `stallprof`.
    public static let formatName = "stallprof"

    /// Captures start with the `STALLPRF` magic.
    public static func recognizes(_ head: ArraySlice<UInt8>) -> Bool { CaptureReader.looksLikeCapture(head) }

    /// The options in use.
    public let options: Options

    /// Creates an importer.
    public init(options: Options = Options()) { self.options = options }

    /// Reads a whole capture and adds one count per sample.
    public func importStacks(from stream: ByteStream, into stacks: inout FoldedStacks, diagnostics: inout Diagnostics)
        throws
    {
        fold(try Self.read(stream), into: &stacks, diagnostics: &diagnostics)
    }

    /// Parses the capture `stream` holds; a corrupt one is ``AnalysisError/badData(path:position:reason:)``.
    public static func read(_ stream: ByteStream) throws -> Capture {
        try parse(try stream.readAll(), source: stream.name)
    }

    /// Parses the capture `bytes` read from `source`; a corrupt one is ``AnalysisError/badData(path:position:reason:)``.
    public static func parse(_ bytes: [UInt8], source: String) throws -> Capture {
        do {
            return try CaptureReader.parse(bytes, source: source)
        } catch let error as CaptureFormatError {
            throw AnalysisError.badData(path: error.source, position: "byte \(error.offset)", reason: error.reason)
        }
    }

    /// Folds an already parsed capture.
    public func fold(_ capture: Capture, into stacks: inout FoldedStacks, diagnostics: inout Diagnostics) {
        forEachSample(of: capture, diagnostics: &diagnostics) { stacks.add(frames: $0) }
    }

    /// The capture's selected samples in time order, newest first (the order flamegraph.pl's `--flamechart`
    /// expects), consecutive samples with the same stack merged into one entry. Stalls follow each other in the
    /// order they began.
    public func timeOrdered(_ capture: Capture, diagnostics: inout Diagnostics) -> [ProfileStack] {
        var entries: [ProfileStack] = []
        forEachSample(of: capture, diagnostics: &diagnostics) { frames in
            let stack = frames.joined(separator: ";")
            if entries.last?.stack == stack {
                entries[entries.count - 1].count += 1
            } else {
                entries.append(ProfileStack(stack: stack, count: 1))
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
        for stall in capture.stalls where self.options.accepts(stall) {
            for sample in stall.samples where !sample.frames.isEmpty && self.options.accepts(sample, of: stall) {
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
        capture.warnings.forEach { diagnostics.warn($0) }
        for stall in capture.stalls where !stall.isFinished && options.accepts(stall) {
            let what = stall.kind == .saturated ? "saturated episode" : "stall"
            diagnostics.warn("\(capture.source): \(what) \(stall.id) is unfinished (the file ends during it); "
                + "its \(stall.samples.count) samples are kept")
        }
        let symbolizer = Symbolizer(capture: capture, options: options.symbolizer)
        for stall in capture.stalls where options.accepts(stall) {
            for sample in stall.samples where !sample.frames.isEmpty && options.accepts(sample, of: stall) {
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
