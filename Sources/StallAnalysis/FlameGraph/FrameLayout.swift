#if canImport(Glibc)
import Glibc
#endif

/// One rectangle of a flame graph, in counts: frames with the same ancestors that follow each other in the
/// (sorted) input are merged into one.
struct LaidOutFrame: Equatable {
    /// Where the function name lies in ``FrameLayout/arena`` (empty for the root, `all`).
    var nameBytes: Range<Int>
    /// 0 for the root, 1 for the outermost function.
    var depth: Int
    /// Start, in counts from the left edge.
    var start: Double
    /// End, in counts from the left edge.
    var end: Double
    /// For differential profiles: after minus before of the stack that opened the frame if it was that stack's
    /// leaf, else 0 (flamegraph.pl's rule: colour shows self change). Nil for plain profiles.
    var delta: Double?

    /// Where the frame starts in exact counts (modulo 2^64) and how many inexact stacks came before it.
    var exactStart: (whole: UInt64, inexact: Int) = (0, 0)
    /// The width exactly, when every stack under the frame had an exact count and the sum fits in 2^64-1.
    var exactWidth: UInt64? = nil

    /// Width in counts.
    var width: Double { end - start }

    static func == (lhs: LaidOutFrame, rhs: LaidOutFrame) -> Bool {
        lhs.nameBytes == rhs.nameBytes && lhs.depth == rhs.depth && lhs.start == rhs.start && lhs.end == rhs.end
            && lhs.delta == rhs.delta && lhs.exactWidth == rhs.exactWidth
    }
}

/// The merged frames of a profile: flamegraph.pl's flow over sorted stacks. Stacks are copied into one byte
/// arena and compared with `memcmp`, so 100,000 stacks lay out without per-frame strings.
struct FrameLayout {
    /// Every frame wide enough to draw, the root first.
    private(set) var frames: [LaidOutFrame] = []
    /// Sum of all counts (the root's width), or ``FlameGraphOptions/total`` when that is larger: the scale.
    let total: Double
    /// Sum of all counts.
    let counted: Double
    /// Deepest depth kept.
    private(set) var maxDepth = 0
    /// Frames narrower than this many counts are left out.
    let minimum: Double
    /// Every stack's folded bytes (reversed for `reverse`), back to back.
    private(set) var arena: [UInt8] = []

    /// Lays out `profile`: reversed stacks and a flame chart as `options` say; frames narrower than the minimum
    /// width at `framesWidth` pixels are left out as they close (their children are narrower still).
    init(_ profile: OrderedStacks, options: FlameGraphOptions, framesWidth: Double) {
        // An empty stack (py-spy's ` 2`) counts in the total and draws nothing, as in flamegraph.pl.
        let stacks = profile.stacks
        counted = stacks.reduce(0) { $0 + $1.count }
        total = max(counted, options.total ?? 0)
        minimum = options.minWidth.counts(total: total, framesWidth: framesWidth)
        var spans: [Range<Int>] = []
        spans.reserveCapacity(stacks.count)
        arena.reserveCapacity(stacks.reduce(0) { $0 + $1.stack.utf8.count })
        for entry in stacks {
            let start = arena.count
            if options.reverse {
                let frames = entry.stack.utf8.split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false)
                for (index, frame) in frames.reversed().enumerated() {
                    if index > 0 { arena.append(UInt8(ascii: ";")) }
                    arena.append(contentsOf: frame)
                }
            } else {
                arena.append(contentsOf: entry.stack.utf8)
            }
            spans.append(start..<arena.count)
        }
        var order = Array(spans.indices)
        if options.flameChart && !options.reverse {
            order.reverse()
        } else {
            arena.withUnsafeBufferPointer { bytes in
                order.sort { Self.precedes(bytes, spans[$0], spans[$1]) }
            }
        }
        arena.withUnsafeBufferPointer { bytes in
            flow(bytes, order.map { (spans[$0], stacks[$0]) })
        }
        maxDepth = frames.reduce(0) { max($0, $1.depth) }
        sortByDepth()
        // A larger --total: the root spans it (flamegraph.pl's), every other frame keeps its counts.
        if total > counted, let root = frames.firstIndex(where: { $0.depth == 0 }) {
            frames[root].end = frames[root].start + total
            frames[root].exactWidth = total < 1.8e19 && total == total.rounded() ? UInt64(total) : nil
        }
    }

    /// Orders the frames by depth, then start: a stable counting sort by depth, as frames of one depth close, and
    /// so are appended, left to right.
    private mutating func sortByDepth() {
        guard let first = frames.first else { return }
        var next = [Int](repeating: 0, count: maxDepth + 2)
        for frame in frames { next[frame.depth + 1] += 1 }
        for depth in 1..<next.count { next[depth] += next[depth - 1] }
        var sorted = [LaidOutFrame](repeating: first, count: frames.count)
        for frame in frames {
            sorted[next[frame.depth]] = frame
            next[frame.depth] += 1
        }
        frames = sorted
    }

    /// The name of `frame`.
    func name(of frame: LaidOutFrame) -> Substring {
        Substring(String(decoding: arena[frame.nameBytes], as: UTF8.self))
    }

    /// Merges the stacks, in order, into frames: a frame stays open while the following stacks share it and its
    /// ancestors.
    private mutating func flow(_ bytes: UnsafeBufferPointer<UInt8>, _ ordered: [(Range<Int>, WeightedStack)]) {
        var open: [LaidOutFrame] = []
        var previous = 0..<0
        var time = 0.0
        var exactTime: (whole: UInt64, inexact: Int) = (0, 0)  // wraps modulo 2^64; widths are differences
        var ends: [Int] = []
        var openEnds: [Int] = []  // where each open frame ends, relative to its stack's start (the same in all)
        for (span, entry) in ordered {
            ends.removeAll(keepingCapacity: true)
            for index in span where bytes[index] == UInt8(ascii: ";") { ends.append(index) }
            if !span.isEmpty { ends.append(span.upperBound) }  // an empty stack opens no frame
            var common = 0
            let limit = min(previous.count, span.count)
            while common < limit, bytes[previous.lowerBound + common] == bytes[span.lowerBound + common] { common += 1 }
            if open.isEmpty {
                open.append(LaidOutFrame(nameBytes: 0..<0, depth: 0, start: time, end: time,
                                         delta: entry.before.map { _ in 0 }, exactStart: exactTime))
                openEnds.append(0)
            }
            // Frame 0 is the root; frame d >= 1 is shared when it ends at the same offset within the common prefix.
            var shared = 1
            while shared < open.count, shared - 1 < ends.count, ends[shared - 1] - span.lowerBound <= common,
                openEnds[shared] == ends[shared - 1] - span.lowerBound
            {
                shared += 1
            }
            close(&open, downTo: shared, at: time, exact: exactTime)
            openEnds.removeSubrange(shared...)
            let delta = entry.before.map { entry.count - $0 }
            for depth in stride(from: shared, through: ends.count, by: 1) {
                let start = depth == 1 ? span.lowerBound : ends[depth - 2] + 1
                open.append(
                    LaidOutFrame(
                        nameBytes: start..<ends[depth - 1], depth: depth, start: time, end: time,
                        delta: delta.map { depth == ends.count ? $0 : 0 }, exactStart: exactTime))
                openEnds.append(ends[depth - 1] - span.lowerBound)
            }
            time += entry.count
            if let exact = entry.exact { exactTime.whole &+= exact } else { exactTime.inexact += 1 }
            previous = span
        }
        close(&open, downTo: 0, at: time, exact: exactTime)
    }

    private mutating func close(_ open: inout [LaidOutFrame], downTo depth: Int, at time: Double,
                                exact: (whole: UInt64, inexact: Int)) {
        while open.count > depth {
            var frame = open.removeLast()
            frame.end = time
            // Exact when no inexact stack lies under the frame and the sum did not wrap (the Double width tells).
            let width = exact.whole &- frame.exactStart.whole
            if exact.inexact == frame.exactStart.inexact, !(frame.width >= 9.2e18 && width < 4_600_000_000_000_000_000) {
                frame.exactWidth = width
            }
            if frame.width >= minimum { frames.append(frame) }
        }
    }

    /// True when the bytes of `a` sort before those of `b` (`LC_ALL=C sort`).
    private static func precedes(_ bytes: UnsafeBufferPointer<UInt8>, _ a: Range<Int>, _ b: Range<Int>) -> Bool {
        let limit = min(a.count, b.count)
        let order = limit == 0 ? 0 : memcmp(bytes.baseAddress! + a.lowerBound, bytes.baseAddress! + b.lowerBound, limit)
        return order != 0 ? order < 0 : a.count < b.count
    }
}
