/// An output format written from a ``Timeline`` (episodes with times, per-sample stacks, markers, images): what
/// `stallprof export` writes. Each format lives in its own file with an `Options` struct whose fields document
/// their defaults. The output is bytes, written piece by piece into a ``ByteSink`` (some formats are binary: pprof
/// is gzipped protobuf), so memory follows the timeline and the format's tables, never the output's size.
public protocol ProfileExporter {
    /// The format's options.
    associatedtype Options: Sendable

    /// The options this exporter was made with.
    var options: Options { get }

    /// Creates an exporter.
    init(options: Options)

    /// Writes the output for `timeline` into `sink` and flushes it. Tolerated problems go to `diagnostics`; a
    /// timeline the format cannot represent throws ``AnalysisError``, and so does a failing sink.
    func export(_ timeline: Timeline, to sink: ByteSink, diagnostics: inout Diagnostics) throws
}

extension ProfileExporter {
    /// The whole output for `timeline`, in memory.
    public func export(_ timeline: Timeline, diagnostics: inout Diagnostics) throws -> [UInt8] {
        let sink = ByteSink()
        try export(timeline, to: sink, diagnostics: &diagnostics)
        return sink.bytes
    }
}

/// The formats `stallprof export` writes.
public enum ExportFormat: String, Sendable, CaseIterable {
    /// speedscope's JSON file format: one sampled profile per episode.
    case speedscope
    /// Chrome's trace-event JSON (Perfetto, chrome://tracing): episodes and markers as slices, samples with stacks.
    case chromeTrace = "chrome-trace"
    /// pprof's gzipped `perftools.profiles.Profile` protobuf (`go tool pprof`).
    case pprof
    /// Perfetto's native protobuf trace (TracePacket): episodes and markers on thread tracks, every sample with its
    /// stack at its time (the UI's flame graph of a selected range). Timed input only.
    case perfetto
}

/// Options of an export: the format, each format's options and how inputs are read.
public struct ExportOptions: Sendable {
    /// The output format. Default: `.speedscope`.
    public var format: ExportFormat = .speedscope
    /// How inputs are read (format, capture selection, names). Default: ``FoldOptions/init()``.
    public var input = FoldOptions()
    /// speedscope options. Default: ``SpeedscopeExporter/Options/init()``.
    public var speedscope = SpeedscopeExporter.Options()
    /// Chrome trace options. Default: ``ChromeTraceExporter/Options/init()``.
    public var chromeTrace = ChromeTraceExporter.Options()
    /// pprof options. Default: ``PprofExporter/Options/init()``.
    public var pprof = PprofExporter.Options()
    /// Perfetto options. Default: ``PerfettoExporter/Options/init()``.
    public var perfetto = PerfettoExporter.Options()

    /// Creates the default options.
    public init() {}
}

/// Reads inputs into one ``Timeline`` and writes it in the requested format.
public enum Exporter {
    /// The exported bytes of `inputs`, and the tolerated problems.
    public static func export(_ inputs: [InputSource], options: ExportOptions) throws -> ([UInt8], Diagnostics) {
        let (timeline, loaded) = try load(inputs, options: options.input)
        var diagnostics = loaded
        let bytes = try write(timeline, options: options, diagnostics: &diagnostics)
        return (bytes, diagnostics)
    }

    /// `timeline` in `options.format`, in memory.
    public static func write(_ timeline: Timeline, options: ExportOptions, diagnostics: inout Diagnostics) throws
        -> [UInt8]
    {
        let sink = ByteSink()
        try write(timeline, options: options, to: sink, diagnostics: &diagnostics)
        return sink.bytes
    }

    /// Writes `timeline` in `options.format` into `sink` (and flushes it).
    public static func write(_ timeline: Timeline, options: ExportOptions, to sink: ByteSink,
                             diagnostics: inout Diagnostics) throws {
        switch options.format {
        case .speedscope:
            try SpeedscopeExporter(options: options.speedscope).export(timeline, to: sink, diagnostics: &diagnostics)
        case .chromeTrace:
            try ChromeTraceExporter(options: options.chromeTrace).export(timeline, to: sink, diagnostics: &diagnostics)
        case .pprof: try PprofExporter(options: options.pprof).export(timeline, to: sink, diagnostics: &diagnostics)
        case .perfetto:
            try PerfettoExporter(options: options.perfetto).export(timeline, to: sink, diagnostics: &diagnostics)
        }
    }

    /// One timeline from every input. Captures keep their episodes, samples and times (each capture's times count
    /// from its own start; several captures' episodes follow each other in input order). With `timedPerf`, perf
    /// script text whose samples all have times is timed too (``PerfTimelineBuilder``: an episode per thread, times
    /// from its first sample). Every other input `fold` reads is folded, all together, into one untimed episode,
    /// and so is timed perf text exported with them. Captures and untimed inputs cannot be mixed in one export (a
    /// usage error): their samples would not mean the same thing.
    public static func load(_ inputs: [InputSource], options: FoldOptions, timedPerf: Bool = true) throws
        -> (Timeline, Diagnostics)
    {
        var loader = InputLoader(options: options)
        var timeline: Timeline?
        var folded = FoldedStacks()
        var untimed: [String] = []
        var perf: [(name: String, stacks: FoldedStacks)] = []
        func add(_ next: Timeline) throws {
            guard let current = timeline else {
                timeline = next
                return
            }
            // A capture's sample counts 1; perf text's its period in its event's unit: they cannot be summed.
            guard current.countUnit == next.countUnit else {
                throw AnalysisError.usage("cannot export \(current.name) (\(unitName(current.countUnit))) together with "
                    + "\(next.name) (\(unitName(next.countUnit))): their samples count different things; export them "
                    + "separately")
            }
            timeline!.append(next)
        }
        func unitName(_ unit: CountUnit?) -> String {
            switch unit {
            case nil, .samples?: return "samples"
            case .time?: return "time"
            case .named(let name)?: return name
            }
        }
        for input in inputs {
            guard let opened = try loader.open(input) else { continue }
            if opened.format == .perf && timedPerf {
                let (timed, stacks) = try PerfTimelineBuilder.build(opened, options: options, diagnostics: &loader.diagnostics)
                if let timed {
                    try add(timed)
                    perf.append((opened.stream.name, stacks))
                } else {
                    Folder.merge(stacks, of: opened.stream.name, into: &folded, diagnostics: &loader.diagnostics)
                    untimed.append(opened.stream.name)
                }
                continue
            }
            guard opened.format == .stallprof else {
                try Folder.fold(opened, options: options, into: &folded, diagnostics: &loader.diagnostics)
                untimed.append(opened.stream.name)
                continue
            }
            let capture = try StallCaptureImporter.read(opened.stream)
            try add(TimelineBuilder.build(capture, options: options.capture, diagnostics: &loader.diagnostics))
        }
        if let timeline, untimed.isEmpty { return (timeline, loader.diagnostics) }
        try loader.refuseCaptures(among: untimed)
        // Timed perf text among untimed inputs: folded with them (its stacks were folded while it was read).
        for (name, stacks) in perf { Folder.merge(stacks, of: name, into: &folded, diagnostics: &loader.diagnostics) }
        let name = inputs.map(\.description).joined(separator: ", ")
        return (TimelineBuilder.build(folded: options.transforms.apply(to: folded, diagnostics: &loader.diagnostics), name: name), loader.diagnostics)
    }
}
