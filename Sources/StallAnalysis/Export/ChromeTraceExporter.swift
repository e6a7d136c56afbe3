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

    /// `--format chrome-trace`.
    public static var format: ExportFormat { .chromeTrace }
    /// ``ExportOptions/chromeTrace``.
    public static func options(in export: ExportOptions) -> Options { export.chromeTrace }

    /// The process and thread ids untimed input is shown under.
    static let untimedID: Int32 = 1

    /// Writes the trace-event JSON of `timeline`: the events, then the stack frames (numbered as they first appear,
    /// sample by sample, root first) and the samples, streamed.
    public func export(_ timeline: Timeline, to sink: ByteSink, diagnostics: inout Diagnostics) throws {
        var events: [TraceEvent] = []
        var slices: [SliceNesting.Slice] = []
        var frames = FrameTree(timeline.stacks)
        var threads: [Int32: Set<Int32>] = [:]
        let (timed, namesTargets) = (timeline.isTimed, timeline.namesTargets)
        for episode in timeline.episodes {
            let pid = episode.pid ?? Self.untimedID, tid = episode.tid ?? Self.untimedID
            threads[pid, default: []].insert(tid)
            var clock = episode.startNs ?? 0
            for sample in episode.samples where sample.count > 0 {
                _ = advance(&clock, sample, timeline)
                if options.samples { frames.add(sample.stack) }
            }
            var args: [(String, JSONValue)] = [("samples", .int(episode.samples.count))]
            if let kind = episode.kind {
                args = [("stall", .int(Int(episode.id))), ("kind", .string(kind.description))]
                    + (namesTargets ? episode.target.map { [("target", .string($0))] } ?? [] : [])
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
        var metadata: [JSONValue] = []
        for pid in threads.keys.sorted() {
            metadata.append(Self.metadata("process_name", pid: pid, tid: 0, value: timeline.processName(pid: pid)))
            for tid in threads[pid, default: []].sorted() {
                metadata.append(Self.metadata("thread_name", pid: pid, tid: tid, value: timeline.threadName(pid: pid, tid: tid)))
            }
        }
        let ends = SliceNesting.ends(of: slices)
        let ordered = events.enumerated().sorted { a, b in
            let (x, y) = (a.element, b.element)
            if x.start != y.start { return x.start < y.start }
            let (xEnd, yEnd) = (x.slice.map { ends[$0] } ?? x.start, y.slice.map { ends[$0] } ?? y.start)
            return xEnd != yEnd ? xEnd > yEnd : a.offset < b.offset
        }.map { $0.element.json(slices: slices, ends: ends) }
        sink.write("{\"traceEvents\":[")
        for (index, event) in (metadata + ordered).enumerated() {
            if index > 0 { sink.write(byte: UInt8(ascii: ",")) }
            sink.write(json: event)
            try sink.flushIfFull()
        }
        sink.write("],\"displayTimeUnit\":\"ms\"")
        if options.samples {
            sink.write(",\"stackFrames\":{")
            try frames.write(into: sink)
            sink.write("},\"samples\":[")
            try writeSamples(timeline, frames: frames, into: sink)
            sink.write(byte: UInt8(ascii: "]"))
        }
        var other: [(String, JSONValue)] = [("source", .string(timeline.name)), ("exporter", .string("stallprof"))]
        if let wall = timeline.startWallNs { other.append(("startWallNs", .string(String(wall)))) }
        if !timed {
            let axis = timeline.nanosecondsPerCount == nil
                ? "one count = \(CountFormat.plain(countNs(timeline) / 1e6)) ms" : "each lasting the time its counts measure"
            other.append(("timeAxis", .string("untimed input: stacks end to end, " + axis)))
        }
        sink.write(",\"otherData\":")
        sink.write(json: .object(other))
        sink.write("}\n")
        try sink.flush()
    }

    /// How long one count of `timeline` lasts on the time axis when it is untimed, nanoseconds.
    private func countNs(_ timeline: Timeline) -> Double {
        timeline.nanosecondsPerCount ?? Double(options.untimedCountNs)
    }

    /// Where `sample` is drawn, and `clock` moved past it: a timed sample at its time (the clock stays), an untimed
    /// one at the clock, which moves on by the time its count lasts.
    private func advance(_ clock: inout UInt64, _ sample: TimelineSample, _ timeline: Timeline) -> UInt64 {
        let timed = timeline.isTimed
        let at = timed ? sample.timestampNs ?? clock : clock
        clock = Self.end(at, timed ? 0 : UInt64(min((sample.count * countNs(timeline)).rounded(), 1e18)))
        return at
    }

    /// The `samples` array's elements: each sample with a stack, at its time, pointing at its leaf frame.
    private func writeSamples(_ timeline: Timeline, frames: FrameTree, into sink: ByteSink) throws {
        var first = true
        for episode in timeline.episodes {
            let pid = episode.pid ?? Self.untimedID, tid = episode.tid ?? Self.untimedID
            let head = Array("{\"pid\":\(pid),\"tid\":\(tid),\"ts\":".utf8)
            let name = Array((",\"name\":" + JSONValue.quoted(episode.title) + ",\"sf\":").utf8)
            var clock = episode.startNs ?? 0
            for sample in episode.samples where sample.count > 0 {
                let at = advance(&clock, sample, timeline)
                guard let leaf = frames.id(of: sample.stack) else { continue }
                if !first { sink.write(byte: UInt8(ascii: ",")) }
                first = false
                sink.write(head)
                sink.write(json: Self.micro(at))
                sink.write(name)
                sink.write(decimal: Int(leaf))
                sink.write(",\"weight\":")
                if let exact = sample.exact { sink.write(String(exact)) } else { sink.write(json: .count(sample.count)) }
                sink.write(byte: UInt8(ascii: "}"))
                try sink.flushIfFull()
            }
        }
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

    /// The `stackFrames` dictionary: one node per distinct path of frames told apart by name and image, numbered
    /// from 1 in order of first appearance (``add(_:)``, sample by sample, root first).
    struct FrameTree {
        private let stacks: TimelineStacks
        /// Each frame's group (frames with the same name and image), and each group's first frame.
        private let groupOf: [Int32], firstFrame: [Int32]
        /// Each node's node in the tree over groups; nil when that tree is the timeline's.
        private let merged: [Int32]?
        /// The id of each node of the tree over groups, 0 until it appears.
        private var ids: [Int32]
        /// Each id's group and parent id (0: none), from id 1.
        private var nodes: [(group: Int32, parent: Int32)] = []
        private var walk: NewNodes

        /// An empty dictionary over `stacks`.
        init(_ stacks: TimelineStacks) {
            self.stacks = stacks
            (groupOf, firstFrame) = stacks.groups { TimelineFrame(name: $0.name, image: $0.image) }
            merged = stacks.merged(by: groupOf, groups: firstFrame.count)
            ids = Array(repeating: 0, count: (merged?.max()).map { Int($0) + 1 } ?? stacks.nodeCount)
            walk = NewNodes(stacks)
        }

        /// The node of the tree over groups of timeline node `node`.
        private func group(_ node: Int32) -> Int { Int(merged?[Int(node)] ?? node) }

        /// Gives an id to every node of the stack ending at `leaf` that has none.
        mutating func add(_ leaf: Int32) {
            walk(leaf, in: stacks)
            for node in walk.chain.reversed() where ids[group(node)] == 0 {
                nodes.append((groupOf[Int(stacks.nodeFrames[Int(node)])], ids[group(stacks.parents[Int(node)])]))
                ids[group(node)] = Int32(nodes.count)
            }
        }

        /// The id of the stack ending at `leaf` (``add(_:)`` first); nil for an empty stack.
        func id(of leaf: Int32) -> Int32? { leaf == 0 ? nil : ids[group(leaf)] }

        /// The dictionary's members, `"1":{"name":...,"category":...}` and on.
        func write(into sink: ByteSink) throws {
            // Each group's `"name":...,"category":...`, spelled once, back to back.
            var spelled: [UInt8] = []
            var starts: [Int] = [0]
            for index in firstFrame {
                let frame = stacks.frames[Int(index)]
                let category = frame.image.map { $0.split(separator: "/").last.map(String.init) ?? $0 } ?? "unknown"
                spelled += Array(("\"name\":" + JSONValue.quoted(frame.name) + ",\"category\":"
                    + JSONValue.quoted(category)).utf8)
                starts.append(spelled.count)
            }
            try spelled.withUnsafeBufferPointer { spelled in
                for (index, node) in nodes.enumerated() {
                    sink.write(index > 0 ? ",\"" : "\"")
                    sink.write(decimal: index + 1)
                    sink.write("\":{")
                    sink.write(UnsafeBufferPointer(rebasing: spelled[starts[Int(node.group)]..<starts[Int(node.group) + 1]]))
                    if node.parent != 0 {
                        sink.write(",\"parent\":")
                        sink.write(decimal: Int(node.parent))
                    }
                    sink.write(byte: UInt8(ascii: "}"))
                    try sink.flushIfFull()
                }
            }
        }
    }
}

extension ExportFormat {
    /// Chrome's trace-event JSON (Perfetto, chrome://tracing): episodes and markers as slices, samples with stacks.
    public static let chromeTrace = ExportFormat(name: "chrome-trace")
}
