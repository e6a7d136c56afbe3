import StallFormat

/// A timed ``Timeline`` from `perf script` text, whose every sample has a timestamp: one episode per thread
/// (`comm (tid N)`, from its first sample to its last), each sample at its own time on its thread, its stack the one
/// `fold` prints for it (the command name as its root frame; fold's perf options and name transforms apply), each
/// frame with the address and module perf printed (``Timeline/images``: one per module, spanning the addresses
/// seen in it, in order of first appearance root first, so the first sample's program comes first; not with
/// `--merge-recursion`, which merges frames). Times count from the recording's first sample.
/// A sample's count is its weight (the period, or 1), in ``Timeline/countUnit`` (the event's unit); its wall time
/// (speedscope's weight) is its period when the event counts time (`cpu-clock`, `task-clock`: nanoseconds), else
/// the gap to the thread's next sample (the last sample: the thread's median gap, 1 ms for a thread of one sample).
enum PerfTimelineBuilder {
    /// One thread's samples while reading: time, stack node, and period in nanoseconds where it measures time.
    private struct Thread {
        var pid: Int32?
        var comm: String
        var samples: [(time: UInt64, stack: Int32, weight: Double, exact: UInt64?)] = []
    }

    /// The timeline of `input` (perf script text) and its stacks folded as `fold` folds them (before the name
    /// transforms, which apply once all inputs are folded); the timeline is nil when a sample has no time
    /// (`perf script -F` without `time`), and the input is then exported untimed.
    static func build(_ input: DetectedInput, options: FoldOptions, diagnostics: inout Diagnostics) throws
        -> (Timeline?, FoldedStacks)
    {
        var folded = FoldedStacks()
        var stacks = TimelineStacks()
        var nodes: [StackKey: Int32] = [:]
        var spans: [String: (low: UInt64, high: UInt64)] = [:]
        var modules: [String] = []  // in order of first appearance, root first: pprof's first mapping is the program
        var threads: [Int32: Thread] = [:]
        var order: [Int32] = []
        var untimed = false
        var overflowed = 0
        var cache: [Substring: String] = [:]
        let transforms = options.transforms
        let unit = try PerfScriptImporter(options: options.perf).forEachSample(in: input.stream, diagnostics: &diagnostics) { sample in
            if folded.add(bytes: sample.stack, sample.weight) == nil { overflowed += 1 }
            guard !untimed, let time = sample.timeNs, let tid = sample.tid else {
                untimed = true
                return
            }
            let key = StackKey(bytes: Array(sample.stack), addresses: sample.places.map(\.address))
            let node: Int32
            if let known = nodes[key] {
                node = known
            } else {
                var bytes = key.bytes
                if !transforms.isIdentity {
                    bytes = Array(transforms.rewrite(String(decoding: key.bytes, as: UTF8.self), cache: &cache).utf8)
                }
                let names = bytes.split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false)
                    .map { String(decoding: $0, as: UTF8.self) }
                // The command, then one place per frame (unless --merge-recursion merged some).
                let placed = !transforms.mergeRecursion && names.count == sample.places.count + 1
                node = stacks.node(for: names.enumerated().map { index, name in
                    guard placed, index > 0 else { return TimelineFrame(name: name) }
                    let place = sample.places[index - 1]
                    let module = String(place.module)
                    if spans[module] == nil { modules.append(module) }
                    let span = spans[module] ?? (place.address, place.address)
                    spans[module] = (min(span.low, place.address), max(span.high, place.address))
                    return TimelineFrame(name: name, image: module, address: place.address)
                })
                nodes[key] = node
            }
            if threads[tid] == nil {
                threads[tid] = Thread(pid: sample.pid, comm: String(sample.comm))
                order.append(tid)
            }
            switch sample.weight {
            case .whole(let value): threads[tid]!.samples.append((time, node, Double(value), value))
            case .fraction(let value): threads[tid]!.samples.append((time, node, value, nil))
            }
        }
        if overflowed > 0 {
            diagnostics.warn("\(input.stream.name): \(overflowed) event\(overflowed == 1 ? "" : "s") skipped: the "
                + "stack's count would exceed 2^64-1")
        }
        folded.unit = CountUnit.combined(folded.unit, unit)
        guard !untimed, !threads.isEmpty else { return (nil, folded) }
        let origin = threads.values.compactMap { $0.samples.first?.time }.min() ?? 0
        var scale: Double? = nil
        if case .time(let nanoseconds) = unit { scale = nanoseconds }
        var episodes: [TimelineEpisode] = []
        var threadNames: [Int32: String] = [:]
        var end: UInt64 = 0
        for tid in order.sorted(by: { threads[$0]!.samples[0].time < threads[$1]!.samples[0].time }) {
            let thread = threads[tid]!
            let times = thread.samples.map(\.time)
            let gaps = zip(times.dropFirst(), times).map { $0 - $1 }.sorted()
            let typical = gaps.isEmpty ? 1_000_000 : gaps[gaps.count / 2]
            var samples: [TimelineSample] = []
            samples.reserveCapacity(thread.samples.count)
            for (index, sample) in thread.samples.enumerated() {
                let wall = scale.map { UInt64(min(sample.weight * $0, 9e18)) }
                    ?? (index + 1 < times.count ? times[index + 1] &- sample.time : typical)
                samples.append(TimelineSample(timestampNs: sample.time &- origin, wallNs: wall, count: sample.weight,
                                              exact: sample.exact, stack: sample.stack))
            }
            let start = times[0] &- origin
            let last = samples.last!
            let duration = last.timestampNs! &- start &+ (last.wallNs ?? 0)
            end = max(end, start &+ duration)
            var episode = TimelineEpisode(id: UInt32(episodes.count + 1), startNs: start, durationNs: duration,
                                          pid: thread.pid ?? tid, tid: tid, samples: samples)
            episode.label = "\(thread.comm) (tid \(tid))"
            episode.source = input.stream.name
            episodes.append(episode)
            threadNames[tid] = thread.comm
        }
        let images = modules.map { module in
            ImageRecord(path: module, loadBias: 0, start: spans[module]!.low, end: spans[module]!.high &+ 1, buildID: [])
        }
        var timeline = Timeline(name: input.stream.name, isTimed: true, durationNs: end, episodes: episodes,
                                stacks: stacks, images: images, countUnit: unit == .samples ? nil : unit)
        timeline.threadNames = threadNames
        return (timeline, folded)
    }

    /// A distinct stack: its folded bytes and its frames' addresses.
    private struct StackKey: Hashable {
        var bytes: [UInt8]
        var addresses: [UInt64]
    }
}
