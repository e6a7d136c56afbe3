/// One rectangle of a flame graph, in counts: frames with the same ancestors that follow each other in the
/// (sorted) input are merged into one.
struct LaidOutFrame: Equatable {
    /// The function name; empty for the root (`all`).
    var name: Substring
    /// 0 for the root, 1 for the outermost function.
    var depth: Int
    /// Start, in counts from the left edge.
    var start: Double
    /// End, in counts from the left edge.
    var end: Double
    /// For differential profiles: after minus before of the stack that opened the frame if it was that stack's
    /// leaf, else 0 (flamegraph.pl's rule: colour shows self change). Nil for plain profiles.
    var delta: Double?

    /// Width in counts.
    var width: Double { end - start }
}

/// The merged frames of a profile: flamegraph.pl's flow over sorted stacks.
struct FrameLayout {
    /// Every frame wide enough to draw, the root first.
    var frames: [LaidOutFrame] = []
    /// Sum of all counts (the root's width).
    var total: Double = 0
    /// Largest absolute self change, at least 1 (differential profiles).
    var maxDelta: Double = 1
    /// Deepest depth kept.
    var maxDepth = 0

    /// Lays out `profile`: reversed stacks and a flame chart as `options` say, frames narrower than the minimum
    /// width pruned.
    init(_ profile: StackProfile, options: FlameGraphOptions) {
        let ordered = Self.order(profile.stacks, options: options)
        var open: [LaidOutFrame] = []
        var time = 0.0
        for entry in ordered {
            var names: [Substring] = [""]
            names.append(contentsOf: entry.stack.split(separator: ";", omittingEmptySubsequences: false))
            var shared = 0
            while shared < open.count, shared < names.count, open[shared].name == names[shared] { shared += 1 }
            close(&open, downTo: shared, at: time)
            let delta = entry.before.map { entry.count - $0 }
            if let delta { maxDelta = max(maxDelta, abs(delta)) }
            for depth in shared..<names.count {
                let isLeaf = depth == names.count - 1
                open.append(
                    LaidOutFrame(
                        name: names[depth], depth: depth, start: time, end: time,
                        delta: delta.map { isLeaf ? $0 : 0 }))
            }
            time += entry.count
        }
        close(&open, downTo: 0, at: time)
        total = time
        frames.sort { ($0.depth, $0.start) < ($1.depth, $1.start) }
    }

    /// Drops frames narrower than `minimum` counts and records the deepest depth left.
    mutating func prune(narrowerThan minimum: Double) {
        if minimum > 0 { frames.removeAll { $0.width < minimum } }
        maxDepth = frames.reduce(0) { max($0, $1.depth) }
    }

    private mutating func close(_ open: inout [LaidOutFrame], downTo depth: Int, at time: Double) {
        while open.count > depth {
            var frame = open.removeLast()
            frame.end = time
            frames.append(frame)
        }
    }

    /// The stacks in drawing order: byte-sorted (after reversing each stack for `reverse`), or the input order
    /// reversed for a flame chart.
    static func order(_ stacks: [ProfileStack], options: FlameGraphOptions) -> [ProfileStack] {
        var result = stacks.filter { !$0.stack.isEmpty }
        if options.reverse {
            for index in result.indices {
                result[index].stack = result[index].stack.split(separator: ";", omittingEmptySubsequences: false)
                    .reversed().joined(separator: ";")
            }
        } else if options.flameChart {
            return result.reversed()
        }
        result.sort { $0.stack.utf8.lexicographicallyPrecedes($1.stack.utf8) }
        return result
    }
}
