/// Writes speedscope's JSON file format (https://www.speedscope.app/file-format-schema.json): one shared frame
/// table and one sampled profile per episode, named with its kind, number, state and start. Optional fields are
/// left out rather than written as null, so the file validates against the schema. See docs/EXPORT.md.
public struct SpeedscopeExporter: ProfileExporter {
    /// What a sample weighs.
    public enum Weight: String, Sendable, CaseIterable {
        /// The wall time the sample stands for (the gap to the next sample), unit `milliseconds`; untimed input
        /// falls back to its counts in their own unit (``Timeline/countUnit``).
        case milliseconds
        /// Its count (1 per captured sample), unit `none`; untimed input keeps its counts' unit.
        case samples
    }

    /// Options for speedscope output. Every field documents its default.
    public struct Options: Sendable {
        /// What a sample weighs. Default: `.milliseconds`.
        public var weight: Weight = .milliseconds
        /// Write the image's path as the `file` field of frames whose source file is not known (a frame whose image
        /// has DWARF gets its source file either way). Default: true.
        public var imagePaths = true

        /// Creates the default options.
        public init() {}
    }

    /// The `$schema` every speedscope file carries.
    public static let schemaURL = "https://www.speedscope.app/file-format-schema.json"
    /// The `exporter` field.
    public static let exporterName = "stallprof@0.1.0"

    /// The options in use.
    public let options: Options

    /// Creates an exporter.
    public init(options: Options) { self.options = options }

    /// `--format speedscope`.
    public static var format: ExportFormat { .speedscope }
    /// ``ExportOptions/speedscope``.
    public static func options(in export: ExportOptions) -> Options { export.speedscope }

    /// Writes the speedscope JSON of `timeline`: the frame table first (frames numbered as they first appear,
    /// sample by sample, root first), then each episode's samples and weights, streamed.
    public func export(_ timeline: Timeline, to sink: ByteSink, diagnostics: inout Diagnostics) throws {
        let stacks = timeline.stacks
        let inMilliseconds = options.weight == .milliseconds && timeline.isTimed
        let (unit, scale) = inMilliseconds ? ("milliseconds", 1.0) : Self.unit(of: timeline)
        // Frames are shared by name and image only: addresses differ within one function.
        let (groupOf, firstFrame) = stacks.groups { frame in
            TimelineFrame(name: frame.name, image: options.imagePaths ? frame.image : nil, line: frame.line,
                          file: frame.file ?? frame.place?.file)
        }
        // Pass 1: speedscope's frame numbers, in order of first appearance, and each episode's total weight.
        var index = [Int32](repeating: -1, count: firstFrame.count)
        var ordered: [Int32] = []
        var totals: [Double] = []
        var walk = NewNodes(stacks)
        for episode in timeline.episodes {
            var total = 0.0
            // An empty stack (an idle sample) stays, with no frames, so the total matches the input's.
            for sample in episode.samples where sample.count > 0 {
                walk(sample.stack, in: stacks)
                for node in walk.chain.reversed() {
                    let group = Int(groupOf[Int(stacks.nodeFrames[Int(node)])])
                    if index[group] < 0 {
                        index[group] = Int32(ordered.count)
                        ordered.append(Int32(group))
                    }
                }
                total += weight(of: sample, inMilliseconds: inMilliseconds, scale: scale)
            }
            totals.append(total)
        }
        sink.write("{\"$schema\":" + JSONValue.quoted(Self.schemaURL) + ",\"shared\":{\"frames\":[")
        for (position, group) in ordered.enumerated() {
            if position > 0 { sink.write(byte: UInt8(ascii: ",")) }
            let frame = stacks.frames[Int(firstFrame[Int(group)])]
            var members: [(String, JSONValue)] = [("name", .string(frame.name))]
            // The source file where DWARF named one (captures), else the image's path.
            if let file = frame.file ?? frame.place?.file ?? (options.imagePaths ? frame.image : nil) {
                members.append(("file", .string(file)))
            }
            if let line = frame.line { members.append(("line", .int(line))) }
            sink.write(json: .object(members))
            try sink.flushIfFull()
        }
        sink.write("]},\"profiles\":[")
        var path: [Int32] = []
        for (number, episode) in timeline.episodes.enumerated() {
            let start = inMilliseconds ? Double(episode.startNs ?? 0) / 1e6 : 0
            let end = inMilliseconds ? start + Double(episode.durationNs ?? 0) / 1e6 : totals[number]
            if number > 0 { sink.write(byte: UInt8(ascii: ",")) }
            sink.write(byte: UInt8(ascii: "{"))
            sink.write(members: [
                ("type", .string("sampled")), ("name", .string(Self.profileName(episode, timeline: timeline))),
                ("unit", .string(unit)), ("startValue", .count(start)),
                ("endValue", .count(max(end, start + (inMilliseconds ? totals[number] : 0)))),
            ])
            sink.write(",\"samples\":[")
            // Pass 2: each sample's frame numbers, root first.
            var first = true
            for sample in episode.samples where sample.count > 0 {
                sink.write(first ? "[" : ",[")
                first = false
                stacks.path(of: sample.stack, into: &path)
                for (position, node) in path.reversed().enumerated() {
                    if position > 0 { sink.write(byte: UInt8(ascii: ",")) }
                    sink.write(decimal: Int(index[Int(groupOf[Int(stacks.nodeFrames[Int(node)])])]))
                }
                sink.write(byte: UInt8(ascii: "]"))
                try sink.flushIfFull()
            }
            sink.write("],\"weights\":[")
            first = true
            for sample in episode.samples where sample.count > 0 {
                if !first { sink.write(byte: UInt8(ascii: ",")) }
                first = false
                // An integral folded count is written exactly (past 2^53 a Double would round it).
                let exact = inMilliseconds || scale != 1 ? nil : sample.exact
                if let exact { sink.write(String(exact)) } else {
                    sink.write(json: .count(weight(of: sample, inMilliseconds: inMilliseconds, scale: scale)))
                }
                try sink.flushIfFull()
            }
            sink.write("]}")
        }
        if timeline.episodes.isEmpty {
            diagnostics.warn("\(timeline.name): no episodes to export; the file has no profiles")
        }
        sink.write("],")
        sink.write(members: [("name", .string(timeline.name)), ("activeProfileIndex", .int(0)),
                             ("exporter", .string(Self.exporterName))])
        sink.write("}\n")
        try sink.flush()
    }

    /// What `sample` weighs: its wall time in milliseconds, or its count in the unit's scale.
    private func weight(of sample: TimelineSample, inMilliseconds: Bool, scale: Double) -> Double {
        inMilliseconds ? Double(sample.wallNs ?? 0) / 1e6 : sample.count * scale
    }

    /// The speedscope unit of counts outside milliseconds weighting and what a count is multiplied by in it: the
    /// matching time unit for time counts (nanoseconds, scaled, when none matches), `bytes`, else `none` (sample
    /// and event counts: speedscope has no other unit).
    static func unit(of timeline: Timeline) -> (String, Double) {
        switch timeline.countUnit {
        case .time(let scale)?:
            let units: [(String, Double)] = [("nanoseconds", 1), ("microseconds", 1e3), ("milliseconds", 1e6),
                                             ("seconds", 1e9)]
            return units.first { $0.1 == scale }.map { ($0.0, 1) } ?? ("nanoseconds", scale)
        case .named("bytes")?: return ("bytes", 1)
        default: return ("none", 1)
        }
    }

    /// `stall 3 (busy) at 2000.0 ms`, `saturated 2 (busy) at 5000.0 ms`, `stall 7 on loop-1 (busy) at 2500.0 ms`
    /// (a watched target other than the main queue); a perf thread's label (`comm (tid N)`); the input's name for
    /// untimed input.
    static func profileName(_ episode: TimelineEpisode, timeline: Timeline) -> String {
        if let label = episode.label { return label }
        guard let kind = episode.kind else { return timeline.name }
        let state = episode.state.map { " (\($0))" } ?? ""
        let start = episode.startNs.map { " at \(CountFormat.plain(Double($0 / 1000) / 1000)) ms" } ?? ""
        return "\(kind) \(episode.id)\(episode.onTarget)\(state)\(start)"
    }
}

extension ExportFormat {
    /// speedscope's JSON file format: one sampled profile per episode.
    public static let speedscope = ExportFormat(name: "speedscope")
}
