import StallFormat

/// What `stallprof report` was given: stallprof captures (described by ``StallReport``) or other profiles that
/// `stallprof fold` reads (perf script, macOS sample, folded stacks, speedscope JSON; summarized by
/// ``ProfileReport``). One report describes one kind: a capture among other profiles is a usage error.
public enum ReportInput {
    /// Every input was a capture (or empty), in the order given.
    case captures([Capture])
    /// Every input was another profile: their stacks folded together (``FoldOptions/transforms`` applied), and
    /// each input with the format it was read as.
    case profile(FoldedStacks, inputs: [ProfileInput])

    /// Reads `inputs` in order with `options` (`--format`, `--strict`, the perf and other formats' options), each
    /// opened and detected by ``InputLoader/open(_:)``, the loader of every command (binary files
    /// such as perf.data, pprof and gzip are bad data naming what they are). With `--format auto` each input is a
    /// capture when it is detected as one; `--format stallprof` makes every input a capture, any other format none.
    /// Empty inputs are warned about in `diagnostics` and skipped (no input at all: no captures). Captures' own
    /// warnings go to `diagnostics` too.
    ///
    /// Throws ``StallError/usage(_:)`` when captures and other profiles are mixed, the importers' bad data
    /// (file and position), and bad data when the profiles hold data but no stack.
    public static func read(_ inputs: [InputSource], options: FoldOptions, diagnostics: inout Diagnostics) throws
        -> ReportInput
    {
        var options = options
        options.perf.markEmptyStacks = true  // a summary names a sample without a call chain, never its process
        var loader = InputLoader(options: options, diagnostics: diagnostics, capturesApart: true)
        defer { diagnostics = loader.diagnostics }
        var captures: [Capture] = []
        var stacks = FoldedStacks()
        var profiles: [ProfileInput] = []
        for input in inputs {
            guard let opened = try loader.open(input) else { continue }
            let stream = opened.stream
            if opened.format == .stallprof {
                guard StallCaptureImporter.recognizes(try stream.peek(Folder.detectionBytes)) else {
                    throw StallError.badData(
                        path: stream.name, position: "byte 0", reason: "not a stallprof capture (no STALLPRF header); "
                            + "--format stallprof reads captures only")
                }
                let capture = try StallCaptureImporter.read(stream)
                capture.warnings.forEach { loader.diagnostics.warn($0) }
                captures.append(capture)
                continue
            }
            try Folder.fold(opened, options: options, into: &stacks, diagnostics: &loader.diagnostics)
            profiles.append(ProfileInput(path: stream.name, format: opened.format))
        }
        guard !profiles.isEmpty || (captures.isEmpty && options.format != .auto && options.format != .stallprof)
        else { return .captures(captures) }
        try loader.requireStackCounts(found: stacks.count > 0)
        return .profile(options.transforms.apply(to: stacks, diagnostics: &loader.diagnostics), inputs: profiles)
    }
}

/// One profile read by ``ReportInput/read(_:options:diagnostics:)``.
public struct ProfileInput: Sendable, Equatable {
    /// How messages name it: the path, or `<stdin>`.
    public var path: String
    /// The format it was read as (detected, or `--format`).
    public var format: InputFormat

    /// Creates an entry for `path` read as `format`.
    public init(path: String, format: InputFormat) {
        self.path = path
        self.format = format
    }
}
