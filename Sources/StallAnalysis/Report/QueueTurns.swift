import StallFormat

/// How many queued blocks an episode's samples saw its thread run, and how long they ran (docs/REPORT.md,
/// `mainQueueTurns`): one long block, a few long ones, or a flood of short ones. A sample knows its block by its
/// ``Sample/turn`` (the watchdog's handler reads it off the libdispatch frame that called the block, at no extra
/// cost to the thread); samples in a row with the same turn are one block. A block the samples never landed in is
/// not counted, so the count is a lower bound, and a block is measured by its samples: from its first sample to its
/// last, less the thread's wait for a CPU meanwhile, plus the time between two samples (each sample stands for that
/// much). A block whose samples are mostly that wait (a short block the scheduler preempted: a sample comes only
/// when the thread runs again) counts as shorter than the time between samples. Blocks that reuse the memory of one
/// before (a block that enqueues the next one, freed and allocated again) may have the same turn: once a turn comes
/// back after another one, samples in a row with the same turn may be several blocks, and no length is claimed.
/// Nor in a saturated episode: the queue answered pings, so it turned, and one turn in every sample is a block or
/// source run again and again (a repeating timer's handler has the same turn each time).
public struct QueueTurns: Sendable, Equatable {
    /// One block seen: how many samples landed in it, and when the first and the last were taken (monotonic ns).
    public struct Block: Sendable, Equatable {
        /// Samples in the block.
        public var samples: Int
        /// The first sample's time.
        public var firstNs: UInt64
        /// The last sample's time.
        public var lastNs: UInt64
        /// From the first sample to the last, less the thread's wait for a CPU meanwhile, nanoseconds: how long it
        /// ran, or waited for something other than a CPU.
        public var activeNs: UInt64
    }

    /// Each block seen, in the order they ran.
    public private(set) var blocks: [Block] = []
    /// The median time between two signalled samples in a row that could tell their block, milliseconds.
    public private(set) var intervalMs: Double
    /// The median time the thread had between two such samples, milliseconds: the wall time between them less its
    /// wait for a CPU meanwhile (the time it ran, or waited for something else). With CPUs to spare, about
    /// ``intervalMs``; on a thread starved of CPU, the CPU it got from one sample to the next, which is what a sample
    /// stands for there (a sample comes only after the thread made some progress). A block is measured by it.
    public private(set) var ranIntervalMs: Double
    /// True when a turn came back after another one (blocks reuse memory), or when the queue answered pings during
    /// the episode: a block seen in several samples in a row may have been several.
    public private(set) var reused = false
    /// Pairs of samples in a row that knew their block, and of those, the pairs in the same block that ran at least
    /// half of ``ranIntervalMs`` (``Block/activeNs``) between them.
    private var pairs = 0, stayed = 0
    /// The signalled samples whose walk could tell whether they were in a block: ``samples`` were, the others were
    /// outside any (a run-loop source, a timer, the run loop itself).
    public private(set) var signalled = 0

    /// True when at least half of ``signalled`` were in a block: only then is the episode about the queue's blocks
    /// (one long one, a flood); otherwise the line says how few were.
    public var mostlyInBlocks: Bool { samples * 2 >= signalled }

    /// Blocks of at least this many, nearly all seen in one sample only, make a flood.
    public static let floodBlocks = 10

    /// The blocks seen: a lower bound on the blocks the thread ran.
    public var turns: Int { blocks.count }

    /// The samples that knew their block.
    public var samples: Int { blocks.reduce(0) { $0 + $1.samples } }

    /// A block's length by its samples: its ``Block/activeNs`` plus the time a sample stands for
    /// (``ranIntervalMs``); nil when it was seen in one sample only, or ran less than half that between its samples:
    /// shorter than about one interval, and samples cannot say how much.
    public func lengthMs(_ block: Block) -> Double? {
        let active = Double(block.activeNs) / 1e6
        return block.samples > 1 && active > 0 && active >= ranIntervalMs / 2 ? active + ranIntervalMs : nil
    }

    /// The median block's length (``lengthMs(_:)``; of two, the longer); nil when the median block was shorter than
    /// about one interval, or when blocks reuse memory.
    public var medianMs: Double? {
        if reused || blocks.isEmpty { return nil }
        let lengths = blocks.map { lengthMs($0) ?? 0 }.sorted()
        let median = lengths[lengths.count / 2]
        return median > 0 ? median : nil
    }

    /// The longest block's length (``lengthMs(_:)``); nil when every block was short, or blocks reuse memory.
    public var longestMs: Double? { reused ? nil : blocks.compactMap(lengthMs).max() }

    /// True for a flood: at least ``floodBlocks`` blocks, the median one shorter than the time between samples;
    /// where blocks reuse memory, at most one pair of samples in a row in four in the same block that ran between them.
    public var isFlood: Bool {
        guard turns >= Self.floodBlocks, mostlyInBlocks else { return false }
        return reused ? stayed * 4 <= pairs : medianMs == nil
    }

    /// The blocks `samples` saw; nil when fewer than two samples could tell. Samples the signal did not take
    /// (repeated: the thread made too little progress to be signalled, yet may have run a short block or two; read
    /// from memory: no registers) and those whose walk could not tell (libdispatch's code not known: an older
    /// capture, a static build; ``walkCouldNotTell``) are skipped. A signalled sample without a turn
    /// that could tell was outside any block: the block before it ended there.
    /// `queueAnswered`: the queue answered pings meanwhile (a saturated episode).
    init?(_ samples: [Sample], queueAnswered: Bool) {
        reused = queueAnswered
        var times: [(ns: UInt64, waitedNs: UInt64)] = []
        var previous: Sample? = nil
        var outside = false  // a signalled sample outside any block since `previous`
        var ended = Set<UInt64>()
        var sameBlockGaps: [UInt64] = []  // the active time between two samples in a row in the same block
        for sample in samples where sample.flags.isSignalled {
            if sample.turn == 0 {
                if sample.flags.contains(.queueCodeKnown), sample.flags.isDisjoint(with: Self.walkCouldNotTell),
                   !sample.frames.isEmpty
                {
                    signalled += 1
                    times.append((sample.timestampNs, sample.runQueueNs))
                    outside = previous != nil
                }
                continue
            }
            signalled += 1
            times.append((sample.timestampNs, sample.runQueueNs))
            defer { (previous, outside) = (sample, false) }
            guard let before = previous else {
                blocks.append(Block(samples: 1, firstNs: sample.timestampNs, lastNs: sample.timestampNs, activeNs: 0))
                continue
            }
            pairs += 1
            if sample.turn == before.turn, !outside {
                // The wait for a CPU between them (cumulative in each sample; 0 when unknown) is not the block's.
                let active = Self.activeNs((before.timestampNs, before.runQueueNs), (sample.timestampNs, sample.runQueueNs))
                blocks[blocks.count - 1].samples += 1
                blocks[blocks.count - 1].lastNs = sample.timestampNs
                blocks[blocks.count - 1].activeNs &+= active
                sameBlockGaps.append(active)
            } else {
                // The same turn again after the thread left the block, or a turn seen before: memory reused.
                if sample.turn == before.turn || ended.contains(sample.turn) { reused = true }
                ended.insert(before.turn)
                blocks.append(Block(samples: 1, firstNs: sample.timestampNs, lastNs: sample.timestampNs, activeNs: 0))
            }
        }
        guard times.count >= 2 else { return nil }
        let spans = zip(times, times.dropFirst())
        let gaps = spans.map { $1.ns >= $0.ns ? $1.ns - $0.ns : 0 }.sorted()
        let ran = spans.map(Self.activeNs).sorted()
        (intervalMs, ranIntervalMs) = (Double(gaps[(gaps.count - 1) / 2]) / 1e6, Double(ran[(ran.count - 1) / 2]) / 1e6)
        stayed = sameBlockGaps.filter { $0 > 0 && Double($0) / 1e6 >= ranIntervalMs / 2 }.count
    }

    /// A walk with any of these may have stopped short of the libdispatch frame that called a block, so its turn of
    /// 0 says nothing: it followed frame pointers, the stack was deeper than the buffer, or the walk stopped before
    /// the outermost frame. Taken for "outside any block", such a sample split the block it was in and made its
    /// turn look reused, and the block lost its length. Seen under ThreadSanitizer, whose signals are handled late
    /// from a stale context: 3-frame walks `[unknown];[unknown];__vdso_clock_gettime` in the middle of a busy stall's
    /// one block (4 in 50 stall-demo runs); a busy stall was once reported without its length in CI.
    static let walkCouldNotTell: SampleFlags = [.framePointers, .truncated, .walkStoppedNoUnwindInfo, .walkStoppedUnusable]

    /// The thread's time from one sample to a later one (monotonic time, cumulative wait for a CPU; that wait is 0
    /// when unknown): the wall time between less the wait meanwhile, nanoseconds.
    private static func activeNs(_ before: (ns: UInt64, waitedNs: UInt64), _ after: (ns: UInt64, waitedNs: UInt64)) -> UInt64 {
        let wall = after.ns &- min(before.ns, after.ns)
        return wall &- min(wall, after.waitedNs &- min(before.waitedNs, after.waitedNs))
    }

    /// The blocks of several episodes together (a group's); nil when none has any.
    init?(summing parts: [QueueTurns]) {
        guard !parts.isEmpty else { return nil }
        blocks = parts.flatMap(\.blocks)
        reused = parts.contains { $0.reused }
        pairs = parts.reduce(0) { $0 + $1.pairs }
        signalled = parts.reduce(0) { $0 + $1.signalled }
        stayed = parts.reduce(0) { $0 + $1.stayed }
        let intervals = parts.map(\.intervalMs).sorted(), ran = parts.map(\.ranIntervalMs).sorted()
        (intervalMs, ranIntervalMs) = (intervals[(intervals.count - 1) / 2], ran[(ran.count - 1) / 2])
    }

    /// The text report's line: `main queue: 1 long block (about 0.980 s)`, `main queue: at least 14 blocks, median
    /// about 70 ms; the longest about 400 ms` or `main queue: at least 290 blocks, most shorter than the 10 ms between
    /// samples`.
    public var line: String {
        let interval = Self.milliseconds(intervalMs)
        if samples == 0 {
            return "main queue: no sample in a queued block (all \(signalled) in a run-loop source, a timer or between blocks)"
        }
        if !mostlyInBlocks {
            return "main queue: only \(samples) of \(signalled) samples in a queued block (the others in a run-loop "
                + "source, a timer or between blocks), in at least \(turns) block\(turns == 1 ? "" : "s")"
        }
        if turns == 1, !reused, let length = lengthMs(blocks[0]) {
            return "main queue: 1 long block (about \(ReportFormat.seconds(length / 1000)))"
        }
        if turns == 1, reused {
            return "main queue: one block or source in every sample, run again and again (the queue turned meanwhile)"
        }
        if turns == 1 {  // seen twice or more, yet it hardly ran between: its samples were mostly the wait for a CPU
            return "main queue: 1 block, shorter than the \(interval) between samples"
        }
        if reused {
            let short = isFlood ? "most shorter than the \(interval) between samples; " : ""
            return "main queue: at least \(turns) blocks (\(short)samples in a row in one block may be several blocks, "
                + "so how long each ran is not known)"
        }
        let longest = longestMs.map { "; the longest about \(Self.milliseconds($0))" }
        guard let medianMs else {
            return "main queue: at least \(turns) blocks, most shorter than the \(interval) between samples" + (longest ?? "")
        }
        return "main queue: at least \(turns) blocks, median about \(Self.milliseconds(medianMs))" + (longest ?? "")
    }

    /// `10 ms` (whole from 1 ms up), `0.200 ms`.
    static func milliseconds(_ value: Double) -> String {
        value >= 1 ? "\(Int(value.rounded())) ms" : ReportFormat.threeDecimals(value) + " ms"
    }
}

extension QueueTurns {
    /// The flood hint: "the main queue ran at least 290 short blocks back to back (most shorter than the 10 ms
    /// between samples); each runs closure #1 in Feed.poll(): find what enqueues it so often". `entry`: the
    /// blocks' most common first frame (``blockEntry(rootFirst:)``), when the stacks show one.
    func floodHint(entry: String?) -> ReportHint {
        var text = "the main queue ran at least \(turns) short blocks back to back (most shorter than the "
            + "\(Self.milliseconds(intervalMs)) between samples)"
        if let entry { text += "; each runs \(Self.withoutClosureType(entry)): find what enqueues it so often" }
        return ReportHint(kind: "flood", text: text)
    }

    /// The first frame of the queued block a stack (root first) is in: the frame after the outermost libdispatch
    /// frames that called it and the thunks and Swift concurrency runtime frames between (a block's function is
    /// often reached through `thunk for @escaping @callee_guaranteed () -> ()`, `swift_job_run`, or ThreadSanitizer's
    /// `dispatch_callback_wrap`); nil when the stack has no libdispatch frame or nothing after it.
    static func blockEntry(rootFirst names: [String]) -> String? {
        guard var index = names.firstIndex(where: isDispatch) else { return nil }
        while index < names.count, isDispatch(names[index]) || isGlue(names[index]) { index += 1 }
        return index < names.count ? names[index] : nil
    }

    /// `closure #1 in static Feed.poll() -> ()` for `closure #1 @Swift.MainActor @Sendable () -> () in static
    /// Feed.poll() -> ()`: the closure's own type says little, where it is says what enqueued it.
    static func withoutClosureType(_ name: String) -> String {
        guard name.hasPrefix("closure #"), let space = name.dropFirst(9).firstIndex(of: " "),
              let inside = name[space...].firstRange(of: " in ")
        else { return name }
        return String(name[..<space]) + String(name[inside.lowerBound...])
    }

    private static func isDispatch(_ name: String) -> Bool {
        name.hasPrefix("_dispatch_") || name.hasPrefix("dispatch_")
    }

    private static func isGlue(_ name: String) -> Bool {
        name.hasPrefix("thunk for ") || name.hasPrefix("reabstraction thunk") || name.hasPrefix("partial apply for thunk")
            || name.hasPrefix("partial apply forwarder for reabstraction thunk") || name.hasPrefix("swift_job_run") || name.hasPrefix("swift::")
            || name.hasPrefix("_ZN5swift") || name.contains("runJobInEstablishedExecutorContext")
            || name.hasPrefix("__tsan") || name.hasPrefix("_ZN6__tsan")  // ThreadSanitizer wraps every dispatch callback
    }
}
