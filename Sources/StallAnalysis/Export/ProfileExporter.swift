import StallFormat

/// An output format written from a ``Timeline`` (episodes with times, per-sample stacks, markers, images): what
/// `stallprof export` writes. Each format lives in its own file with an `Options` struct whose fields document
/// their defaults. The output is bytes, written piece by piece into a ``ByteSink`` (some formats are binary: pprof
/// is gzipped protobuf), so memory follows the timeline and the format's tables, never the output's size.
///
/// Adding a format is that file plus its row in ``Exporter/exporters``: the file declares its ``ExportFormat``
/// (a static in an `ExportFormat` extension), the exporter, and where its options live in ``ExportOptions``.
public protocol ProfileExporter {
    /// The format's options.
    associatedtype Options: Sendable

    /// The format this exporter writes: its `--format` name.
    static var format: ExportFormat { get }

    /// True when the output is binary (the CLI then refuses to write it to a terminal). Default: false.
    static var isBinary: Bool { get }

    /// This format's options within an export's options (the defaults, for a format that has none to set).
    static func options(in export: ExportOptions) -> Options

    /// The options this exporter was made with.
    var options: Options { get }

    /// Creates an exporter.
    init(options: Options)

    /// Writes the output for `timeline` into `sink` and flushes it. Tolerated problems go to `diagnostics`; a
    /// timeline the format cannot represent throws ``StallError``, and so does a failing sink.
    func export(_ timeline: Timeline, to sink: ByteSink, diagnostics: inout Diagnostics) throws
}

extension ProfileExporter {
    /// Text.
    public static var isBinary: Bool { false }

    /// The whole output for `timeline`, in memory.
    public func export(_ timeline: Timeline, diagnostics: inout Diagnostics) throws -> [UInt8] {
        let sink = ByteSink()
        try export(timeline, to: sink, diagnostics: &diagnostics)
        return sink.bytes
    }
}

/// An output format of `stallprof export`, by its `--format` name. Each format's value is declared in its
/// exporter's file; ``allCases`` lists them in the order of ``Exporter/exporters``, the one table of formats.
public struct ExportFormat: RawRepresentable, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// The `--format` name.
    public let rawValue: String

    /// The format named `rawValue`, or nil when no exporter writes it.
    public init?(rawValue: String) {
        guard Exporter.exporters.contains(where: { $0.format.name == rawValue }) else { return nil }
        self.rawValue = rawValue
    }

    /// A format named `name` (for an exporter's declaration).
    public init(name: String) { rawValue = name }

    /// The `--format` name.
    public var name: String { rawValue }
    /// The name.
    public var description: String { rawValue }
    /// Every format, in the order help lists them.
    public static var allCases: [ExportFormat] { Exporter.exporters.map { $0.format } }
    /// The exporter that writes this format; nil for a name no row of ``Exporter/exporters`` declares.
    public var exporter: (any ProfileExporter.Type)? { Exporter.exporters.first { $0.format == self } }
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
    /// Every format `stallprof export` writes, one row each, in the order help lists them.
    public static let exporters: [any ProfileExporter.Type] = [
        SpeedscopeExporter.self, ChromeTraceExporter.self, PprofExporter.self, PerfettoExporter.self,
    ]

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
        guard let exporter = options.format.exporter else {
            throw StallError.usage("no exporter writes the format '\(options.format)'")
        }
        try write(exporter, timeline, options: options, to: sink, diagnostics: &diagnostics)
    }

    /// Writes `timeline` with `exporter`, given its options from `options`.
    private static func write<E: ProfileExporter>(_ exporter: E.Type, _ timeline: Timeline, options: ExportOptions,
                                                  to sink: ByteSink, diagnostics: inout Diagnostics) throws {
        try E(options: E.options(in: options)).export(timeline, to: sink, diagnostics: &diagnostics)
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
                throw StallError.usage("cannot export \(current.name) (\(unitName(current.countUnit))) together with "
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
