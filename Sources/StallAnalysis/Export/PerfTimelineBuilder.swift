import StallFormat

/// A timed ``Timeline`` from `perf script` text, whose every sample has a timestamp: one episode per thread (its
/// pid, tid and command: a thread that execs starts another), labelled `comm (tid N)`, from its first sample to its
/// last, each sample at its own time on its thread (a thread's samples in time order), its stack the one `fold`
/// prints for it (the command name as its root frame; fold's perf options and name transforms apply), each frame
/// with the address and module perf printed (``Timeline/images``: one per module, spanning the addresses seen in
/// it, in order of first appearance root first, so the first sample's program comes first; not with
/// `--merge-recursion`, which merges frames). Times count from the recording's first sample. A sample's count is its
/// weight (the period, or 1), in ``Timeline/countUnit`` (the event's unit); its wall time (speedscope's weight) is
/// its period when the event counts time (`cpu-clock`, `task-clock`: nanoseconds), else the gap to the thread's
/// next sample, at most the recording's median gap (a thread sampled rarely ran rarely: the gap is not its time),
/// which the last sample of a thread also gets (1 ms when no thread has two samples).
///
/// Memory follows the distinct frames and stacks (the output), not the samples' text: a stack is built frame by
/// frame from ids of names, modules and addresses.
enum PerfTimelineBuilder {
    /// A thread: process, thread id and command.
    private struct ThreadKey: Hashable {
        var pid: Int32?
        var tid: Int32
        var comm: String
    }

    /// A frame: its name's and module's ids and its address.
    private struct FrameKey: Hashable {
        var name: Int32
        var module: Int32
        var address: UInt64
    }

    /// The timeline of `input` (perf script text) and its stacks folded as `fold` folds them (before the name
    /// transforms, which apply once all inputs are folded); the timeline is nil when a sample has no usable time or
    /// thread id (`perf script -F` without `time`; a pid past 2^31), and the input is then exported untimed, with a
    /// warning naming that sample's line.
    static func build(_ input: DetectedInput, options: FoldOptions, diagnostics: inout Diagnostics) throws
        -> (Timeline?, FoldedStacks)
    {
        let name = input.stream.name
        var folded = FoldedStacks()
        var stacks = TimelineStacks()
        var names = ByteKeyTable(capacity: 1024), nameStrings: [String] = []
        var rewrittenIDs: [String: Int32] = [:], rewrittenNames: [String] = [], pieces: [Int] = []
        var moduleIDs: [Substring: Int32] = [:], modules: [String] = [], spans: [(low: UInt64, high: UInt64)] = []
        var frames: [FrameKey: Int32] = [:]
        var wholeStacks: [[UInt8]: Int32] = [:]  // --merge-recursion: names only, by the stack's text
        var threads: [ThreadKey: [(time: UInt64, stack: Int32, weight: Double, exact: UInt64?)]] = [:]
        var order: [ThreadKey] = []
        var untimedLine: Int? = nil
        var overflowed = 0
        var cache: [Substring: String] = [:]
        let transforms = options.transforms
        func rewritten(_ text: String) -> String {
            transforms.isIdentity ? text : transforms.rewrite(text, cache: &cache)
        }
        // With --demangle or --names short, a stack's names are rewritten together (a closure's forwarder is named
        // from its neighbour), then numbered; without, each raw name is its own.
        func nameIDs(_ raw: [Int]) -> [Int] {
            guard !transforms.isIdentity else { return raw }
            return transforms.rewrite(frames: raw.map { nameStrings[$0] }, cache: &cache).map { name in
                if let known = rewrittenIDs[name] { return Int(known) }
                rewrittenIDs[name] = Int32(rewrittenNames.count)
                rewrittenNames.append(name)
                return rewrittenNames.count - 1
            }
        }
        let unit = try PerfScriptImporter(options: options.perf).forEachSample(in: input.stream, diagnostics: &diagnostics) { sample in
            if folded.add(bytes: sample.stack, sample.weight) == nil { overflowed += 1 }
            guard untimedLine == nil, let time = sample.timeNs, let tid = sample.tid else {
                if untimedLine == nil { untimedLine = sample.line }
                return
            }
            var node: Int32 = 0
            if transforms.mergeRecursion {
                let key = Array(sample.stack)
                if let known = wholeStacks[key] {
                    node = known
                } else {
                    let text = rewritten(String(decoding: key, as: UTF8.self))
                    node = stacks.node(for: text.split(separator: ";", omittingEmptySubsequences: false)
                        .map { TimelineFrame(name: String($0)) })
                    wholeStacks[key] = node
                }
            } else {
                let bytes = sample.stack
                let placed = bytes.reduce(0) { $1 == UInt8(ascii: ";") ? $0 + 1 : $0 } == sample.places.count
                pieces.removeAll(keepingCapacity: true)
                var start = 0
                while start <= bytes.count {
                    var end = start
                    while end < bytes.count && bytes[end] != UInt8(ascii: ";") { end += 1 }
                    let piece = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
                    let (nameID, inserted) = names.findOrInsert(piece, hash: ByteKeyTable.hash(piece))
                    if inserted { nameStrings.append(String(decoding: piece, as: UTF8.self)) }
                    pieces.append(nameID)
                    start = end + 1
                }
                for (index, nameID) in nameIDs(pieces).enumerated() {
                    var key = FrameKey(name: Int32(nameID), module: -1, address: 0)
                    if placed, index > 0 {
                        let place = sample.places[index - 1]
                        if let known = moduleIDs[place.module] {
                            key.module = known
                        } else {
                            key.module = Int32(modules.count)
                            moduleIDs[place.module] = key.module
                            modules.append(String(place.module))
                            spans.append((place.address, place.address))
                        }
                        key.address = place.address
                        let span = spans[Int(key.module)]
                        spans[Int(key.module)] = (min(span.low, place.address), max(span.high, place.address))
                    }
                    let frame: Int32
                    if let number = frames[key] {
                        frame = number
                    } else {
                        let name = transforms.isIdentity ? nameStrings[nameID] : rewrittenNames[nameID]
                        frame = stacks.number(of: key.module < 0 ? TimelineFrame(name: name)
                            : TimelineFrame(name: name, image: modules[Int(key.module)], address: key.address))
                        frames[key] = frame
                    }
                    node = stacks.child(of: node, frame: frame)
                }
            }
            let thread = ThreadKey(pid: sample.pid, tid: tid, comm: String(sample.comm))
            if threads[thread] == nil { order.append(thread) }
            switch sample.weight {
            case .whole(let value): threads[thread, default: []].append((time, node, Double(value), value))
            case .fraction(let value): threads[thread, default: []].append((time, node, value, nil))
            }
        }
        folded.unit = CountUnit.combined(folded.unit, unit)
        if let untimedLine {
            diagnostics.warn("\(name): line \(untimedLine): a sample without a usable time or thread id (perf script "
                + "-F without time, a time past 9e9 s, or a pid past 2^31); the file is exported without timestamps")
        }
        guard untimedLine == nil, !threads.isEmpty else {
            if overflowed > 0 {
                diagnostics.warn("\(name): \(overflowed) event\(overflowed == 1 ? "" : "s") skipped: the stack's count "
                    + "would exceed 2^64-1")
            }
            return (nil, folded)
        }
        var timeline = timeline(of: threads, in: order, unit: unit, name: name)
        timeline.stacks = stacks
        timeline.images = modules.indices.map { index in
            ImageRecord(path: modules[index], loadBias: 0, start: spans[index].low, end: spans[index].high &+ 1, buildID: [])
        }
        return (timeline, folded)
    }

    /// The episodes of `threads` (each thread's samples sorted by time), first sample first, times from the
    /// earliest sample.
    private static func timeline(of threads: [ThreadKey: [(time: UInt64, stack: Int32, weight: Double, exact: UInt64?)]],
                                 in order: [ThreadKey], unit: CountUnit?, name: String) -> Timeline {
        let sorted = threads.mapValues { $0.sorted { $0.time < $1.time } }  // stable: equal times keep file order
        let origin = sorted.values.compactMap { $0.first?.time }.min() ?? 0
        var scale: Double? = nil
        if case .time(let nanoseconds) = unit { scale = nanoseconds }
        let gaps = sorted.values.flatMap { samples in zip(samples.dropFirst(), samples).map { $0.time - $1.time } }.sorted()
        let typical = gaps.isEmpty ? 1_000_000 : max(gaps[gaps.count / 2], 1)
        var episodes: [TimelineEpisode] = []
        var threadNames: [Int64: String] = [:]
        var end: UInt64 = 0
        for key in order.sorted(by: { sorted[$0]![0].time < sorted[$1]![0].time }) {
            let thread = sorted[key]!
            var samples: [TimelineSample] = []
            samples.reserveCapacity(thread.count)
            for (index, sample) in thread.enumerated() {
                let wall = scale.map { UInt64(min(sample.weight * $0, 9e18)) }
                    ?? (index + 1 < thread.count ? min(thread[index + 1].time - sample.time, typical) : typical)
                samples.append(TimelineSample(timestampNs: sample.time - origin, wallNs: wall, count: sample.weight,
                                              exact: sample.exact, stack: sample.stack))
            }
            let start = thread[0].time - origin
            let last = samples[samples.count - 1]
            let duration = last.timestampNs! - start + (last.wallNs ?? 0)
            end = max(end, start + duration)
            let pid = key.pid ?? key.tid
            var episode = TimelineEpisode(id: UInt32(episodes.count + 1), startNs: start, durationNs: duration,
                                          pid: pid, tid: key.tid, samples: samples)
            episode.label = "\(key.comm) (tid \(key.tid))"
            episode.source = name
            episodes.append(episode)
            threadNames[Timeline.threadKey(pid: pid, tid: key.tid)] = threadNames[Timeline.threadKey(pid: pid, tid: key.tid)] ?? key.comm
        }
        var timeline = Timeline(name: name, isTimed: true, durationNs: end, episodes: episodes,
                                countUnit: unit == .samples ? nil : unit)
        timeline.threadNames = threadNames
        return timeline
    }
}
