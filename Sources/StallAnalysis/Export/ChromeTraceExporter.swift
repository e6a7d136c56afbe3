/// Writes Chrome's trace-event JSON (`{"traceEvents": [...]}`), which Perfetto and chrome://tracing open: each
/// episode a complete (`X`) slice in category `stall`, each marker an instant (`i`) or complete slice in category
/// `marker`, and each sample a trace-format stack sample (`samples` pointing into `stackFrames`). Times are
/// microseconds from the capture's start. See docs/EXPORT.md.
///
/// Untimed input (folded stacks, perf script, sample reports) has no clock; the rule: its stacks are laid end to
/// end in byte order, under one slice named `profile` (category `profile`), so the viewer draws them like a flame
/// graph's x axis, not like a recording. A stack whose counts measure time (``Timeline/countUnit``, e.g. perf
/// `cpu-clock` nanoseconds) lasts that time; any other count (samples, events) lasts ``Options/untimedCountNs``.
public struct ChromeTraceExporter: ProfileExporter {
    /// Options for Chrome trace output. Every field documents its default.
    public struct Options: Sendable {
        /// Write the samples and their stack frames. Default: true.
        public var samples = true
        /// How long one count of untimed input lasts on the time axis, nanoseconds, unless its counts measure time
        /// (then a count lasts what it measures). Default: 1 ms.
        public var untimedCountNs: UInt64 = 1_000_000

        /// Creates the default options.
        public init() {}
    }

    /// The options in use.
    public let options: Options

    /// Creates an exporter.
    public init(options: Options) { self.options = options }

    /// The process and thread ids untimed input is shown under.
    static let untimedID: Int32 = 1

    /// The trace-event JSON of `timeline`.
    public func export(_ timeline: Timeline, diagnostics: inout Diagnostics) throws -> [UInt8] {
        var events: [TraceEvent] = []
        var slices: [SliceNesting.Slice] = []
        var samples: [JSONValue] = []
        var frames = FrameTree()
        var threads: [Int32: Set<Int32>] = [:]
        let timed = timeline.isTimed
        let countNs = timeline.nanosecondsPerCount ?? Double(options.untimedCountNs)
        for episode in timeline.episodes {
            let pid = episode.pid ?? Self.untimedID, tid = episode.tid ?? Self.untimedID
            threads[pid, default: []].insert(tid)
            var clock = episode.startNs ?? 0
            for sample in episode.samples where sample.count > 0 {
                let at = timed ? sample.timestampNs ?? clock : clock
                clock = Self.end(at, timed ? 0 : UInt64(min((sample.count * countNs).rounded(), 1e18)))
                guard options.samples, let leaf = frames.leaf(of: sample.frames) else { continue }
                samples.append(.object([
                    ("pid", .int(Int(pid))), ("tid", .int(Int(tid))), ("ts", Self.micro(at)),
                    ("name", .string(episode.title)), ("sf", .int(leaf)), ("weight", sample.exact.map { .literal(String($0)) } ?? .count(sample.count)),
                ]))
            }
            var args: [(String, JSONValue)] = [("samples", .int(episode.samples.count))]
            if let kind = episode.kind {
                args = [("stall", .int(Int(episode.id))), ("kind", .string(kind.description))]
                    + [("state", .text(episode.state?.description))] + args
            }
            if let cpu = episode.cpuRatio { args.append(("cpuRatio", .double(cpu))) }
            if let blocked = episode.blockedOn { args.append(("blockedOn", .string(blocked))) }
            let start = episode.startNs ?? 0
            let duration = timed ? episode.durationNs ?? 0 : clock - start
            slices.append(.init(pid: pid, tid: tid, start: start, end: Self.end(start, duration)))
            events.append(TraceEvent(members: [
                ("ph", .string("X")), ("cat", .string(episode.kind == nil ? "profile" : "stall")),
                ("name", .string(episode.title)), ("ts", Self.micro(start)), ("dur", Self.micro(duration)),
                ("pid", .int(Int(pid))), ("tid", .int(Int(tid))),
            ], args: args, start: start, slice: slices.count - 1))
        }
        for marker in timeline.markers {
            let pid = marker.pid ?? timeline.episodes.first?.pid ?? Self.untimedID
            let tid = marker.tid ?? pid
            threads[pid, default: []].insert(tid)
            var members: [(String, JSONValue)] = [("cat", .string("marker")), ("name", .string(marker.name)),
                                                  ("ts", Self.micro(marker.startNs))]
            var slice: Int? = nil
            switch marker.extent {
            case .instant: members = [("ph", .string("i"))] + members + [("s", .string("t"))]
            case .interval(let duration):
                members = [("ph", .string("X"))] + members + [("dur", Self.micro(duration))]
                slices.append(.init(pid: pid, tid: tid, start: marker.startNs, end: Self.end(marker.startNs, duration)))
                slice = slices.count - 1
            }
            events.append(TraceEvent(members: members + [("pid", .int(Int(pid))), ("tid", .int(Int(tid)))],
                                     args: nil, start: marker.startNs, slice: slice))
        }
        let process = timeline.executable.map { $0.split(separator: "/").last.map(String.init) ?? $0 } ?? timeline.name
        var metadata: [JSONValue] = []
        for pid in threads.keys.sorted() {
            metadata.append(Self.metadata("process_name", pid: pid, tid: 0, value: process))
            for tid in threads[pid, default: []].sorted() {
                let thread = timed ? "main queue (tid \(tid))" : "stacks (no timestamps)"
                metadata.append(Self.metadata("thread_name", pid: pid, tid: tid, value: thread))
            }
        }
        var other: [(String, JSONValue)] = [("source", .string(timeline.name)), ("exporter", .string("stallprof"))]
        if let wall = timeline.startWallNs { other.append(("startWallNs", .string(String(wall)))) }
        if !timed {
            let axis = timeline.nanosecondsPerCount == nil
                ? "one count = \(CountFormat.plain(countNs / 1e6)) ms" : "each lasting the time its counts measure"
            other.append(("timeAxis", .string("untimed input: stacks end to end, " + axis)))
        }
        let ends = SliceNesting.ends(of: slices)
        let ordered = events.enumerated().sorted { a, b in
            let (x, y) = (a.element, b.element)
            if x.start != y.start { return x.start < y.start }
            let (xEnd, yEnd) = (x.slice.map { ends[$0] } ?? x.start, y.slice.map { ends[$0] } ?? y.start)
            return xEnd != yEnd ? xEnd > yEnd : a.offset < b.offset
        }.map { $0.element.json(slices: slices, ends: ends) }
        var top: [(String, JSONValue)] = [("traceEvents", .array(metadata + ordered)), ("displayTimeUnit", .string("ms"))]
        if options.samples { top += [("stackFrames", frames.json), ("samples", .array(samples))] }
        return JSONValue.object(top + [("otherData", .object(other))]).compactBytes
    }

    /// A timed event before output: its members, `args` (nil: none), its start and its complete slice (an index
    /// into the slices given to ``SliceNesting``; nil for an instant).
    struct TraceEvent {
        var members: [(String, JSONValue)]
        var args: [(String, JSONValue)]?
        var start: UInt64
        var slice: Int?

        /// The event, its `dur` clipped to `ends[slice]` where the slices must nest for Perfetto; a clipped event's
        /// `args` say so: `clippedUs` (how much was cut) and `recordedDurUs` (the duration recorded).
        func json(slices: [SliceNesting.Slice], ends: [UInt64]) -> JSONValue {
            var members = members, args = args
            if let slice, ends[slice] != slices[slice].end {
                let recorded = slices[slice].end - slices[slice].start
                members = members.map { $0.0 == "dur" ? ("dur", ChromeTraceExporter.micro(ends[slice] - start)) : $0 }
                args = (args ?? []) + [("clippedUs", ChromeTraceExporter.micro(slices[slice].end - ends[slice])),
                                       ("recordedDurUs", ChromeTraceExporter.micro(recorded))]
            }
            return .object(members + (args.map { [("args", JSONValue.object($0))] } ?? []))
        }
    }

    /// A metadata (`M`) event naming a process or thread.
    static func metadata(_ name: String, pid: Int32, tid: Int32, value: String) -> JSONValue {
        .object([("ph", .string("M")), ("name", .string(name)), ("pid", .int(Int(pid))), ("tid", .int(Int(tid))),
                 ("args", .object([("name", .string(value))]))])
    }

    /// The end of the time axis, 9e18 ns: viewers keep nanoseconds in signed 64 bits (and read microseconds
    /// through a Double, so the bound is a round number below `Int64.max`).
    static let axisEndNs: UInt64 = 9_000_000_000_000_000_000

    /// `start + duration`, at most ``axisEndNs``: untimed stacks laid end to end stop at the end of the axis
    /// rather than wrap to its start.
    static func end(_ start: UInt64, _ duration: UInt64) -> UInt64 {
        let (sum, overflow) = start.addingReportingOverflow(duration)
        return overflow ? axisEndNs : min(sum, axisEndNs)
    }

    /// Nanoseconds as the format's microseconds.
    static func micro(_ ns: UInt64) -> JSONValue {
        ns % 1000 == 0 ? .int(Int(ns / 1000)) : .double(Double(ns) / 1000)
    }

    /// The `stackFrames` dictionary: one node per distinct path from the root, ids from 1.
    struct FrameTree {
        private var ids: [Key: Int] = [:]
        private var nodes: [(name: String, category: String, parent: Int?)] = []

        private struct Key: Hashable {
            var parent: Int
            var frame: TimelineFrame
        }

        /// The id of the node for `frames` (root first), adding what is missing; nil for an empty stack.
        mutating func leaf(of frames: [TimelineFrame]) -> Int? {
            var parent = 0
            for frame in frames {
                let key = Key(parent: parent, frame: TimelineFrame(name: frame.name, image: frame.image))
                if let known = ids[key] {
                    parent = known
                    continue
                }
                let category = frame.image.map { $0.split(separator: "/").last.map(String.init) ?? $0 } ?? "unknown"
                nodes.append((frame.name, category, parent == 0 ? nil : parent))
                ids[key] = nodes.count
                parent = nodes.count
            }
            return parent == 0 ? nil : parent
        }

        /// The dictionary as JSON.
        var json: JSONValue {
            .object(nodes.enumerated().map { index, node in
                var members: [(String, JSONValue)] = [("name", .string(node.name)), ("category", .string(node.category))]
                if let parent = node.parent { members.append(("parent", .int(parent))) }
                return (String(index + 1), .object(members))
            })
        }
    }
}
