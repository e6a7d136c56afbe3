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
        /// Write a `file` field (the image path) on frames whose image is known. Default: true.
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

    /// The speedscope JSON of `timeline`.
    public func export(_ timeline: Timeline, diagnostics: inout Diagnostics) throws -> [UInt8] {
        var frames: [JSONValue] = []
        var index: [TimelineFrame: Int] = [:]
        var profiles: [JSONValue] = []
        let inMilliseconds = options.weight == .milliseconds && timeline.isTimed
        let (unit, scale) = inMilliseconds ? ("milliseconds", 1.0) : Self.unit(of: timeline)
        for episode in timeline.episodes {
            var stacks: [JSONValue] = []
            var weights: [JSONValue] = []
            var total = 0.0
            // An empty stack (an idle sample) stays, with no frames, so the total matches the input's.
            for sample in episode.samples where sample.count > 0 {
                var stack: [JSONValue] = []
                stack.reserveCapacity(sample.frames.count)
                for frame in sample.frames {
                    // Frames are shared by name and image only: addresses differ within one function.
                    let key = TimelineFrame(name: frame.name, image: options.imagePaths ? frame.image : nil,
                                            line: frame.line, file: frame.file)
                    if let known = index[key] {
                        stack.append(.int(known))
                        continue
                    }
                    index[key] = frames.count
                    stack.append(.int(frames.count))
                    var members: [(String, JSONValue)] = [("name", .string(key.name))]
                    if let file = key.image ?? key.file { members.append(("file", .string(file))) }
                    if let line = key.line { members.append(("line", .int(line))) }
                    frames.append(.object(members))
                }
                let weight = inMilliseconds ? Double(sample.wallNs ?? 0) / 1e6 : sample.count * scale
                stacks.append(.array(stack))
                // An integral folded count is written exactly (past 2^53 a Double would round it).
                let exact = inMilliseconds || scale != 1 ? nil : sample.exact
                weights.append(exact.map { .literal(String($0)) } ?? .count(weight))
                total += weight
            }
            let start = inMilliseconds ? Double(episode.startNs ?? 0) / 1e6 : 0
            let end = inMilliseconds ? start + Double(episode.durationNs ?? 0) / 1e6 : total
            profiles.append(.object([
                ("type", .string("sampled")),
                ("name", .string(Self.profileName(episode, timeline: timeline))),
                ("unit", .string(unit)),
                ("startValue", .count(start)),
                ("endValue", .count(max(end, start + (inMilliseconds ? total : 0)))),
                ("samples", .array(stacks)),
                ("weights", .array(weights)),
            ]))
        }
        if profiles.isEmpty { diagnostics.warn("\(timeline.name): no episodes to export; the file has no profiles") }
        return JSONValue.object([
            ("$schema", .string(Self.schemaURL)),
            ("shared", .object([("frames", .array(frames))])),
            ("profiles", .array(profiles)),
            ("name", .string(timeline.name)),
            ("activeProfileIndex", .int(0)),
            ("exporter", .string(Self.exporterName)),
        ]).compactBytes
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

    /// `stall 3 (busy) at 2000.0 ms`, `saturated 2 (busy) at 5000.0 ms`; the input's name for untimed input.
    static func profileName(_ episode: TimelineEpisode, timeline: Timeline) -> String {
        guard let kind = episode.kind else { return timeline.name }
        let state = episode.state.map { " (\($0))" } ?? ""
        let start = episode.startNs.map { " at \(CountFormat.plain(Double($0 / 1000) / 1000)) ms" } ?? ""
        return "\(kind) \(episode.id)\(state)\(start)"
    }
}
