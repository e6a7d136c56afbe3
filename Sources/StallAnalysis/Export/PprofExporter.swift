/// Writes pprof's `perftools.profiles.Profile` (profile.proto), gzipped, for `go tool pprof` and the tools that
/// read it: sample types `samples/count` then `wall/nanoseconds` (input whose counts measure time, untimed stacks
/// or perf text: `cpu/nanoseconds`; counts of a named event: `<event>/count`), one location per frame address (functions already
/// resolved: mappings say `has_functions`), the main binary's mapping first with its build-id, and labels `stall`
/// (number), `kind` and `state` on every sample (with several captures, `capture` and `pid` too; with episodes of a
/// watched target other than the main queue, `target`). See
/// docs/EXPORT.md.
public struct PprofExporter: ProfileExporter {
    /// Options for pprof output. Every field documents its default.
    public struct Options: Sendable {
        /// Gzip the output, as pprof files usually are. Default: true.
        public var gzip = true

        /// Creates the default options.
        public init() {}
    }

    /// The options in use.
    public let options: Options

    /// Creates an exporter.
    public init(options: Options) { self.options = options }

    /// `--format pprof`.
    public static var format: ExportFormat { .pprof }
    /// Binary.
    public static var isBinary: Bool { true }
    /// ``ExportOptions/pprof``.
    public static func options(in export: ExportOptions) -> Options { export.pprof }

    /// Writes the profile of `timeline` (gzipped unless ``Options/gzip`` is off). The `samples` values add up to the
    /// number of samples exported (untimed input: its counts in their unit, see ``sampleTypes(of:)``, rounded to
    /// whole numbers with a warning when any is fractional). Empty stacks stay, as samples without locations.
    /// Locations, functions and strings are numbered as they first appear, sample by sample, leaf first.
    public func export(_ timeline: Timeline, to sink: ByteSink, diagnostics: inout Diagnostics) throws {
        var table = Tables()
        let types = Self.sampleTypes(of: timeline)
        let sampleType = types.map { (table.string($0.type), table.string($0.unit)) }
        let scale = timeline.nanosecondsPerCount ?? 1
        var mappingIDs: [String: UInt64] = [:]
        for image in timeline.images where mappingIDs[image.path] == nil {
            mappingIDs[image.path] = UInt64(mappingIDs.count + 1)
        }
        let stacks = timeline.stacks
        let mapping = { (frame: TimelineFrame) in frame.image.flatMap { mappingIDs[$0] } ?? 0 }
        // Samples with the same stack of locations in the same episode are one pprof sample with summed values.
        let (groupOf, firstFrame) = stacks.groups { frame in
            Location(mapping: mapping(frame), address: frame.address ?? 0, name: frame.name, file: frame.file,
                     line: frame.line ?? 0)
        }
        let merged = stacks.merged(by: groupOf, groups: firstFrame.count)
        var locationOf = [UInt64](repeating: 0, count: stacks.frames.count)
        var walk = NewNodes(stacks)
        var slotOf: [UInt64: Int] = [:]
        var slots: [(node: Int32, episode: Int, count: Int64, wall: Int64)] = []
        var fractional = 0
        var clamped = 0
        for (episodeIndex, episode) in timeline.episodes.enumerated() {
            for sample in episode.samples where sample.count > 0 {
                walk(sample.stack, in: stacks)
                for node in walk.chain {
                    let frame = Int(stacks.nodeFrames[Int(node)])
                    if locationOf[frame] == 0 {
                        locationOf[frame] = table.location(stacks.frames[frame], mapping: mapping(stacks.frames[frame]))
                    }
                }
                let value = sample.count * scale
                var count = Int64(min(value.rounded(), 9e18))
                if let exact = sample.exact, scale == 1 {
                    // Exact past 2^53; pprof values are int64, so a count past 2^63-1 is clamped and said.
                    count = exact > UInt64(Int64.max) ? Int64.max : Int64(exact)
                    if exact > UInt64(Int64.max) { clamped += 1 }
                } else if count != Int64(exactly: value) {
                    fractional += 1
                }
                guard count > 0 else { continue }
                let key = UInt64(episodeIndex) << 32 | UInt64(UInt32(bitPattern: merged?[Int(sample.stack)] ?? sample.stack))
                let slot = slotOf[key] ?? slots.count
                if slot == slots.count {
                    slotOf[key] = slot
                    slots.append((sample.stack, episodeIndex, 0, 0))
                }
                let (sum, overflow) = slots[slot].count.addingReportingOverflow(count)
                if overflow { clamped += 1 }
                slots[slot].count = overflow ? Int64.max : sum
                slots[slot].wall &+= Int64(clamping: sample.wallNs ?? 0)
            }
        }
        slotOf = [:]
        if clamped > 0 {
            diagnostics.warn("\(timeline.name): \(clamped) count\(clamped == 1 ? "" : "s") past 2^63-1 written as "
                + "2^63-1 (pprof values are int64)")
        }
        if fractional > 0 {
            diagnostics.warn("\(timeline.name): \(fractional) fractional count\(fractional == 1 ? "" : "s") rounded to "
                + "whole \(types[0].type) (pprof values are integers)")
        }
        // Several inputs exported together: which capture and process each sample is from (stall numbers repeat).
        let several = Set(timeline.episodes.compactMap(\.source)).count > 1
        let namesTargets = timeline.namesTargets
        let labels = timeline.episodes.map { episode -> [(key: Int64, str: Int64, num: Int64)] in
            var result: [(key: Int64, str: Int64, num: Int64)] = []
            if several, let source = episode.source {
                result.append((table.string("capture"), table.string(source), 0))
                if let pid = episode.pid { result.append((table.string("pid"), 0, Int64(pid))) }
            }
            guard let kind = episode.kind else { return result }
            result += [(table.string("stall"), Int64(0), Int64(episode.id)),
                       (table.string("kind"), table.string(kind.description), Int64(0))]
            if let state = episode.state { result.append((table.string("state"), table.string(state.description), 0)) }
            if namesTargets, let target = episode.target {
                result.append((table.string("target"), table.string(target), 0))
            }
            return result
        }
        let gzip = options.gzip ? Gzip(into: sink) : nil
        let body = gzip.map { gzip in ByteSink { try gzip.write($0) } } ?? sink
        var out = ProtobufWriter()
        for (type, unit) in sampleType {
            out.message(1) { $0.int(1, type); $0.int(2, unit) }
        }
        var path: [Int32] = []
        for slot in slots {
            stacks.path(of: slot.node, into: &path)
            out.message(2) { message in
                message.packed(1, path.map { locationOf[Int(stacks.nodeFrames[Int($0)])] })
                let both = [UInt64(bitPattern: slot.count), UInt64(bitPattern: slot.wall)]
                message.packed(2, Array(both.prefix(types.count)))
                for label in labels[slot.episode] {
                    message.message(3) { $0.int(1, label.key); $0.int(2, label.str); $0.int(3, label.num) }
                }
            }
            try out.drain(into: body)
        }
        for image in timeline.images where mappingIDs[image.path] != nil {
            let id = mappingIDs.removeValue(forKey: image.path)!
            let filename = table.string(image.path), buildID = table.string(image.buildIDHex)
            out.message(3) { message in
                message.uint(1, id)
                message.uint(2, image.start)
                message.uint(3, image.end)
                // file_offset stays 0: an image record starts at its first loaded segment, which maps the file
                // from its start in every ELF file the linkers write.
                message.int(5, filename)
                message.int(6, buildID)
                message.bool(7, true)
            }
        }
        try table.writeLocationsAndFunctions(into: &out, draining: body)
        let last = types[types.count - 1]
        let period = (table.string(last.type), table.string(last.unit))
        let comment = table.string("exported by stallprof from \(timeline.name)")
        let defaultType = table.string(timeline.isTimed && types.contains { $0.type == "wall" } ? "wall" : types[0].type)
        for string in table.strings {
            out.string(6, string)
            try out.drain(into: body)
        }
        out.int(9, Int64(clamping: timeline.startWallNs ?? 0))
        out.int(10, Int64(clamping: timeline.durationNs ?? 0))
        out.message(11) { $0.int(1, period.0); $0.int(2, period.1) }
        out.int(12, Int64(clamping: timeline.sampleIntervalNs ?? 0))
        out.packed(13, [UInt64(comment)])
        out.int(14, defaultType)
        try out.drain(into: body, atLeast: 0)
        if let gzip {
            try body.flush()
            gzip.finish()
        }
        try sink.flush()
    }

    /// What tells two locations apart: mapping, address, function (name and file) and line.
    private struct Location: Hashable {
        var mapping: UInt64
        var address: UInt64
        var name: String
        var file: String?
        var line: Int
    }

    /// The sample types (type, unit) of `timeline`'s values: `samples/count` and `wall/nanoseconds` for captures
    /// and untimed sample counts (wall 0: unknown); for counts that measure time (untimed stacks, perf text's
    /// `cpu-clock` periods), `cpu/nanoseconds` alone (values in nanoseconds); for counts of a named event (perf
    /// `cycles`), `<event>/count` alone.
    static func sampleTypes(of timeline: Timeline) -> [(type: String, unit: String)] {
        switch timeline.countUnit {
        case .time?: return [("cpu", "nanoseconds")]
        case .named(let name)?: return [(name, "count")]
        case .samples?, nil: return [("samples", "count"), ("wall", "nanoseconds")]
        }
    }

    /// The string table, functions and locations, each deduplicated, ids from 1 (strings from 0, entry 0 empty).
    private struct Tables {
        private(set) var strings: [String] = [""]
        private var stringIndex: [String: Int64] = ["": 0]
        private var functions: [FunctionKey: UInt64] = [:]
        private var functionNames: [(name: Int64, file: Int64)] = []

        private struct FunctionKey: Hashable {
            var name: String
            var file: String?
        }
        private var locations: [LocationKey: UInt64] = [:]
        private var locationList: [LocationKey] = []

        private struct LocationKey: Hashable {
            var mapping: UInt64
            var address: UInt64
            /// pprof's `Line`s: function id and line, the innermost inlined function first, the frame's own last.
            var lines: [LineKey]
        }

        private struct LineKey: Hashable {
            var function: UInt64
            var line: Int
        }

        /// The index of `value` in the string table.
        mutating func string(_ value: String) -> Int64 {
            if let known = stringIndex[value] { return known }
            strings.append(value)
            stringIndex[value] = Int64(strings.count - 1)
            return Int64(strings.count - 1)
        }

        /// The function id of `name` in source file `file`.
        private mutating func function(_ name: String, file: String?) -> UInt64 {
            let functionKey = FunctionKey(name: name, file: file)
            if let known = functions[functionKey] { return known }
            functionNames.append((string(name), file.map { string($0) } ?? 0))
            functions[functionKey] = UInt64(functionNames.count)
            return UInt64(functionNames.count)
        }

        /// The location id of `frame` in mapping `mapping` (0: none). A frame with a place in the source
        /// (``TimelineFrame/place``) has a line for each function inlined there, innermost first (as `go tool pprof
        /// -lines` shows them), then its own, in its source file.
        mutating func location(_ frame: TimelineFrame, mapping: UInt64) -> UInt64 {
            var lines: [LineKey] = []
            if let place = frame.place {
                for inner in place.inlined.reversed() {
                    lines.append(LineKey(function: function(inner.function, file: inner.file), line: inner.line))
                }
                lines.append(LineKey(function: function(frame.name, file: place.file ?? frame.file), line: place.line))
            } else {
                lines.append(LineKey(function: function(frame.name, file: frame.file), line: frame.line ?? 0))
            }
            let key = LocationKey(mapping: mapping, address: frame.address ?? 0, lines: lines)
            if let known = locations[key] { return known }
            locationList.append(key)
            locations[key] = UInt64(locationList.count)
            return UInt64(locationList.count)
        }

        /// The `location` and `function` fields, drained into `sink` as they grow.
        func writeLocationsAndFunctions(into out: inout ProtobufWriter, draining sink: ByteSink) throws {
            for (index, key) in locationList.enumerated() {
                out.message(4) { message in
                    message.uint(1, UInt64(index + 1))
                    message.uint(2, key.mapping)
                    message.uint(3, key.address)
                    for line in key.lines {
                        message.message(4) { $0.uint(1, line.function); $0.int(2, Int64(line.line)) }
                    }
                }
                try out.drain(into: sink)
            }
            for (index, function) in functionNames.enumerated() {
                out.message(5) {
                    $0.uint(1, UInt64(index + 1))
                    $0.int(2, function.name)
                    $0.int(3, function.name)
                    if function.file != 0 { $0.int(4, function.file) }
                }
                try out.drain(into: sink)
            }
        }
    }
}

extension ExportFormat {
    /// pprof's gzipped `perftools.profiles.Profile` protobuf (`go tool pprof`).
    public static let pprof = ExportFormat(name: "pprof")
}
