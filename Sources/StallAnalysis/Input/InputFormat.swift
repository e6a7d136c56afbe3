/// An input format, by the name `--format` takes. Every format but ``auto`` is a row of ``table``, which drives
/// detection (`--format auto`), dispatch to the format's importer, the names reports give it and the list of
/// `--format` values in help and completions.
public struct InputFormat: RawRepresentable, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// The name `--format` takes.
    public let rawValue: String

    /// The format named `rawValue`: ``auto`` or a row of ``table``; nil for any other name.
    public init?(rawValue: String) {
        guard let known = Self.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = known
    }

    /// A format named `name`; ``table`` must hold a row for it (``InputFormatRow`` makes one from an importer).
    init(name: String) { rawValue = name }

    /// The `--format` name.
    public var description: String { rawValue }

    /// Detect the format from each input's first bytes.
    public static let auto = InputFormat(name: "auto")
    /// stallprof capture files written by the `StallProfiler` watchdog.
    public static let stallprof = InputFormat(name: StallCaptureImporter.formatName)
    /// `perf script` output (Linux perf), folded like stackcollapse-perf.pl.
    public static let perf = InputFormat(name: PerfScriptImporter.formatName)
    /// macOS `sample` reports.
    public static let sample = InputFormat(name: MacSampleImporter.formatName)
    /// Folded stacks (`root;...;leaf COUNT`) from any tool.
    public static let folded = InputFormat(name: FoldedImporter.formatName)
    /// speedscope JSON (py-spy, pyinstrument, speedscope, `stallprof export`).
    public static let speedscope = InputFormat(name: SpeedscopeImporter.formatName)

    /// Every format `stallprof` reads, in the order `--format` lists them. One row per format: its importer (which
    /// names it, recognizes it and reads it), how reports name it, and when `--format auto` tries it.
    public static let table: [InputFormatRow] = [
        InputFormatRow(StallCaptureImporter.self, displayName: "stallprof capture", detectionOrder: 10),
        InputFormatRow(PerfScriptImporter.self, displayName: "perf script", detectionOrder: 40),
        InputFormatRow(MacSampleImporter.self, displayName: "macOS sample", detectionOrder: 30),
        InputFormatRow(FoldedImporter.self, displayName: "folded", detectionOrder: 90),
        InputFormatRow(SpeedscopeImporter.self, displayName: "speedscope", detectionOrder: 20),
    ]

    /// ``auto``, then every row of ``table`` in order: the values `--format` takes.
    public static var allCases: [InputFormat] { [.auto] + table.map(\.format) }

    /// The rows `--format auto` tries, in the order it tries them.
    static let detectionRows: [InputFormatRow] = table.sorted { $0.detectionOrder < $1.detectionOrder }

    /// This format's row of ``table``; nil for ``auto``.
    public var row: InputFormatRow? { Self.table.first { $0.format == self } }

    /// How a report's text names this format: `perf script`, `macOS sample`, `folded`, `speedscope`.
    public var displayName: String { row?.displayName ?? rawValue }
}
