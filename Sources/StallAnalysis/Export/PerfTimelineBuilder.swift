/// A timed ``Timeline`` from `perf script` text, whose every sample has a timestamp: one episode per thread
/// (`comm (tid N)`, from its first sample to its last), each sample at its own time on its thread, its stack the one
/// `fold` prints for it (the command name as its root frame; fold's perf options and name transforms apply). Times
/// count from the recording's first sample. A sample's wall time (speedscope's weight) is its period when the
/// event counts time (`cpu-clock`, `task-clock`: nanoseconds), else the gap to the thread's next sample (the last
/// sample: the thread's median gap, 1 ms for a thread of one sample).
enum PerfTimelineBuilder {
    /// One thread's samples while reading: time, stack node, and period in nanoseconds where it measures time.
    private struct Thread {
        var pid: Int32?
        var comm: String
        var samples: [(time: UInt64, stack: Int32, weight: Double)] = []
    }

    /// The timeline of `input` (perf script text) and its stacks folded as `fold` folds them (before the name
    /// transforms, which apply once all inputs are folded); the timeline is nil when a sample has no time
    /// (`perf script -F` without `time`), and the input is then exported untimed.
    static func build(_ input: DetectedInput, options: FoldOptions, diagnostics: inout Diagnostics) throws
        -> (Timeline?, FoldedStacks)
    {
        var folded = FoldedStacks()
        var stacks = TimelineStacks()
        var names = FoldedFrameNames()
        var nodes: [[UInt8]: Int32] = [:]
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
            let key = Array(sample.stack)
            let node: Int32
            if let known = nodes[key] {
                node = known
            } else {
                var bytes = key
                if !transforms.isIdentity {
                    bytes = Array(transforms.rewrite(String(decoding: key, as: UTF8.self), cache: &cache).utf8)
                }
                bytes.withUnsafeBufferPointer { buffer in
                    names.split(buffer) { stacks.number(of: TimelineFrame(name: $0)) }
                }
                node = stacks.node(for: names.frames)
                nodes[key] = node
            }
            if threads[tid] == nil {
                threads[tid] = Thread(pid: sample.pid, comm: String(sample.comm))
                order.append(tid)
            }
            let weight: Double
            switch sample.weight {
            case .whole(let value): weight = Double(value)
            case .fraction(let value): weight = value
            }
            threads[tid]!.samples.append((time, node, weight))
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
                samples.append(TimelineSample(timestampNs: sample.time &- origin, wallNs: wall, stack: sample.stack))
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
        var timeline = Timeline(name: input.stream.name, isTimed: true, durationNs: end, episodes: episodes,
                                stacks: stacks)
        timeline.threadNames = threadNames
        return (timeline, folded)
    }
}
