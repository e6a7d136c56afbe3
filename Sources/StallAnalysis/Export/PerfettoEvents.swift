import StallFormat

/// The track events of a Perfetto trace: each episode and interval marker a begin and an end event on its thread's
/// track, each instant marker an instant event, in the order Perfetto nests them.
enum PerfettoSlices {
    /// One `TrackEvent` and its time.
    struct Event {
        var time: UInt64
        var body: (inout ProtobufWriter) -> Void
    }

    /// A slice before output: its track, extent, name, category and arguments.
    private struct Pending {
        var slice: SliceNesting.Slice
        var name: String
        var category: String
        var args: [(String, Argument)]
    }

    /// A debug annotation's value.
    enum Argument {
        case int(Int64), double(Double), string(String)
    }

    /// The events of `timeline`'s episodes and markers on `tracks`, by time; on one track, a slice's end comes
    /// before the begin of the next at the same time, and slices nest (crossing ones are clipped, their arguments
    /// `clippedNs` and `recordedDurNs` say by how much).
    static func events(of timeline: Timeline, tracks: PerfettoTracks) -> [Event] {
        var pending: [Pending] = []
        var instants: [(TimelineMarker, Int32, Int32)] = []
        let namesTargets = timeline.namesTargets
        for episode in timeline.episodes {
            let start = episode.startNs ?? 0
            // A capture's episode: its number, kind and state; a perf thread's extent: its samples only.
            var args: [(String, Argument)] = episode.kind == nil ? [] : [("stall", .int(Int64(episode.id)))]
            if let kind = episode.kind { args.append(("kind", .string(kind.description))) }
            if namesTargets, let target = episode.target { args.append(("target", .string(target))) }
            if let state = episode.state { args.append(("state", .string(state.description))) }
            args.append(("samples", .int(Int64(episode.samples.count))))
            if let cpu = episode.cpuRatio { args.append(("cpuRatio", .double(cpu))) }
            if let blocked = episode.blockedOn { args.append(("blockedOn", .string(blocked))) }
            let slice = SliceNesting.Slice(pid: episode.pid ?? 0, tid: episode.tid ?? 0, start: start,
                                           end: max(start, ChromeTraceExporter.end(start, episode.durationNs ?? 0)))
            pending.append(Pending(slice: slice, name: episode.title, category: episode.kind == nil ? "profile" : "stall",
                                   args: args))
        }
        let fallback = timeline.episodes.first?.pid ?? 0
        for marker in timeline.markers {
            let pid = marker.pid ?? fallback, tid = marker.tid ?? pid
            switch marker.extent {
            case .instant: instants.append((marker, pid, tid))
            case .interval(let duration):
                let slice = SliceNesting.Slice(pid: pid, tid: tid, start: marker.startNs,
                                               end: max(marker.startNs, ChromeTraceExporter.end(marker.startNs, duration)))
                pending.append(Pending(slice: slice, name: marker.name, category: "marker", args: []))
            }
        }
        let slices = pending.map(\.slice)
        let ends = SliceNesting.ends(of: slices)
        var events: [Event] = []
        var byTrack: [Int64: [Int]] = [:]
        for index in pending.indices {
            byTrack[Timeline.threadKey(pid: slices[index].pid, tid: slices[index].tid), default: []].append(index)
        }
        for key in byTrack.keys.sorted() {
            var members = byTrack[key]!
            members.sort { SliceNesting.order(slices[$0], slices[$1], $0, $1) }
            let track = tracks.track(pid: pending[members[0]].slice.pid, tid: pending[members[0]].slice.tid)
            var open: [(index: Int, end: UInt64)] = []
            func close(until time: UInt64) {
                while let top = open.last, top.end <= time {
                    open.removeLast()
                    events.append(Event(time: top.end) { $0.uint(9, 2); $0.uint(11, track) })  // TYPE_SLICE_END
                }
            }
            for index in members {
                let item = pending[index]
                close(until: item.slice.start)
                // Nested within the open slice (SliceNesting made it so; an end past it is cut here too).
                let end = min(ends[index], open.last?.end ?? .max)
                var args = item.args
                if end != item.slice.end {
                    args += [("clippedNs", .int(Int64(item.slice.end - end))),
                             ("recordedDurNs", .int(Int64(item.slice.end - item.slice.start)))]
                }
                open.append((index, end))
                events.append(Event(time: item.slice.start) { event in
                    event.uint(9, 1)  // TYPE_SLICE_BEGIN
                    event.uint(11, track)
                    event.string(22, item.category)
                    event.string(23, item.name)
                    for (name, value) in args { annotation(&event, name, value) }
                })
            }
            close(until: .max)
        }
        for (marker, pid, tid) in instants {
            let track = tracks.track(pid: pid, tid: tid)
            events.append(Event(time: marker.startNs) { event in
                event.uint(9, 3)  // TYPE_INSTANT
                event.uint(11, track)
                event.string(22, "marker")
                event.string(23, marker.name)
            })
        }
        return events.enumerated().sorted { a, b in
            a.element.time != b.element.time ? a.element.time < b.element.time : a.offset < b.offset
        }.map(\.element)
    }

    /// A `DebugAnnotation` (field 4 of `TrackEvent`) named `name`.
    private static func annotation(_ event: inout ProtobufWriter, _ name: String, _ value: Argument) {
        event.message(4) { annotation in
            annotation.string(10, name)
            switch value {
            case .int(let number):
                annotation.varint(4 << 3)  // int_value, written even when 0
                annotation.varint(UInt64(bitPattern: number))
            case .double(let number): annotation.double(5, number)
            case .string(let text): annotation.string(6, text)
            }
        }
    }
}

/// Interns a timeline's stacks for `PerfSample`s: each function name, mapping, frame and callstack is given an id
/// once and written into the `InternedData` of the first packet that uses it. A callstack's id is its leaf node in
/// ``Timeline/stacks``, a frame's its frame number plus one.
struct PerfettoInterner {
    private let stacks: TimelineStacks
    private var images: [String: ImageRecord] = [:]
    private var names: [String: UInt64] = [:]
    private var mappings: [String: UInt64] = [:]
    private var pathComponents: [String: UInt64] = [:]
    private var framesDone: [Bool]
    private var stacksDone: [Bool]
    private var path: [Int32] = []

    init(_ timeline: Timeline) {
        stacks = timeline.stacks
        for image in timeline.images where images[image.path] == nil { images[image.path] = image }
        framesDone = Array(repeating: false, count: stacks.frames.count)
        stacksDone = Array(repeating: false, count: stacks.nodeCount)
    }

    /// The `InternedData` bytes the stack ending at `leaf` needs that were not written before; empty when none.
    mutating func intern(_ leaf: Int32) -> [UInt8] {
        guard !stacksDone[Int(leaf)] else { return [] }
        stacksDone[Int(leaf)] = true
        var data = ProtobufWriter()
        stacks.path(of: leaf, into: &path)
        var frameIDs: [UInt64] = []
        for node in path.reversed() {
            let number = Int(stacks.nodeFrames[Int(node)])
            frameIDs.append(UInt64(number + 1))
            guard !framesDone[number] else { continue }
            framesDone[number] = true
            let frame = stacks.frames[number]
            let name = intern(name: frame.name, into: &data)
            let (mapping, start) = intern(image: frame.image, into: &data)
            let relative = frame.address.map { $0 >= start ? $0 - start : $0 } ?? 0
            data.message(6) { message in  // frames
                message.uint(1, UInt64(number + 1))
                message.uint(2, name)
                message.uint(3, mapping)
                message.uint(4, relative)
            }
        }
        data.message(7) { message in  // callstacks: frames root first
            message.uint(1, UInt64(leaf))
            for id in frameIDs { message.uint(2, id) }
        }
        return data.bytes
    }

    /// The id of function name `name`, written into `data` when new.
    private mutating func intern(name: String, into data: inout ProtobufWriter) -> UInt64 {
        if let known = names[name] { return known }
        let id = UInt64(names.count + 1)
        names[name] = id
        data.message(5) { $0.uint(1, id); $0.string(2, name) }  // function_names
        return id
    }

    /// The id of the mapping of image `path` (nil: one mapping without a path) and the image's start (0 when the
    /// timeline has no record of it), written into `data` when new, with its path (`mapping_paths`, one entry per
    /// path component) and build-id (`build_ids`).
    private mutating func intern(image path: String?, into data: inout ProtobufWriter) -> (UInt64, UInt64) {
        let key = path ?? "", image = images[key]
        if let known = mappings[key] { return (known, image?.start ?? 0) }
        let id = UInt64(mappings.count + 1)
        mappings[key] = id
        var components: [UInt64] = []
        for component in key.split(separator: "/").map(String.init) {
            if let known = pathComponents[component] {
                components.append(known)
                continue
            }
            let componentID = UInt64(pathComponents.count + 1)
            pathComponents[component] = componentID
            data.message(17) { $0.uint(1, componentID); $0.string(2, component) }  // mapping_paths
            components.append(componentID)
        }
        if let image, !image.buildID.isEmpty {
            data.message(16) { $0.uint(1, id); $0.bytes(2, image.buildID) }  // build_ids, one per mapping
        }
        data.message(19) { message in  // mappings
            message.uint(1, id)
            if let image, !image.buildID.isEmpty { message.uint(2, id) }
            message.uint(4, image?.start ?? 0)
            message.uint(5, image?.end ?? 0)
            for component in components { message.uint(7, component) }
        }
        return (id, image?.start ?? 0)
    }
}
