import StallAnalysis

/// The capture options shared by every command that reads captures: which samples (`--kind`, `--state`,
/// `--stall`, `--range`) and how names read (`--simplify-names`, `--offsets`, `--no-demangle`). One place parses them.
enum CaptureSelection {
    /// Options that take a value.
    static let valued: Set<String> = ["--kind", "--state", "--stall", "--range"]
    /// Options without a value.
    static let flags: Set<String> = ["--simplify-names", "--offsets", "--no-demangle"]

    /// Their lines in a subcommand's usage.
    static let usage = """
          --kind KIND           captures: keep stalls (the main queue did not answer) or saturated episodes
                                (it answered but its thread never rested): stall|saturated|all (default: all)
          --state STATE         captures: keep busy or blocked episodes: busy|blocked|all (default: all)
          --stall N             captures: keep only episode number N (repeatable; default: every episode)
          --range MS..MS        captures: keep samples taken within this window after their episode began
          --simplify-names      captures: short Swift names (static BusyWork.descend(_:until:)) when the
                                toolchain's libswiftDemangle.so is found
          --offsets             captures: append +0xOFFSET to resolved function names
          --no-demangle         captures: keep Swift symbols mangled
        """

    /// How names are resolved, from the parsed arguments.
    static func symbolizerOptions(_ args: Arguments) -> SymbolizerOptions {
        var options = SymbolizerOptions()
        options.demangle = !args.flag("--no-demangle")
        options.simplifyNames = args.flag("--simplify-names")
        options.showOffsets = args.flag("--offsets")
        return options
    }

    /// Fold options from the parsed arguments.
    static func foldOptions(_ args: Arguments) throws -> FoldOptions {
        var options = FoldOptions()
        options.capture.state = try args.choice("--state", as: StallStateFilter.self) ?? .all
        options.capture.kind = try args.choice("--kind", as: EpisodeKindFilter.self) ?? .all
        for raw in args.all("--stall") {
            guard let id = UInt32(raw), id > 0 else { throw UsageError(message: "--stall takes an episode number, not '\(raw)'") }
            options.capture.stallIDs.insert(id)
        }
        if let raw = args.value("--range") {
            let parts = raw.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 3, parts[1].isEmpty, let from = Double(parts[0].isEmpty ? "0" : parts[0]),
                let to = parts[2].isEmpty ? Double.infinity : Double(parts[2]), from >= 0, to >= from
            else { throw UsageError(message: "--range takes FROM..TO in milliseconds, not '\(raw)'") }
            let upper = to.isInfinite || to * 1e6 >= Double(UInt64.max) ? UInt64.max : UInt64(to * 1e6)
            options.capture.window = UInt64(from * 1e6)...upper
        }
        options.capture.symbolizer = symbolizerOptions(args)
        return options
    }
}
