import StallAnalysis

/// The capture options shared by the commands that read captures: `--state`, `--stall`, `--range`.
enum CaptureSelection {
    /// Fold options from the parsed arguments.
    static func foldOptions(_ args: Arguments) throws -> FoldOptions {
        var options = FoldOptions()
        options.capture.state = try args.choice("--state", as: StallStateFilter.self) ?? .all
        for raw in args.all("--stall") {
            guard let id = UInt32(raw), id > 0 else { throw UsageError(message: "--stall takes a stall number, not '\(raw)'") }
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
        return options
    }
}
