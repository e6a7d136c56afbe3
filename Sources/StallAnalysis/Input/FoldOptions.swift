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
