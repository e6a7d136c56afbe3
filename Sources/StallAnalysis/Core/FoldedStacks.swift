/// Weighted stacks keyed by their folded form (`root;...;leaf`): what every importer produces and every output
/// consumes.
public struct FoldedStacks: Sendable, Equatable {
    /// Count per folded stack.
    public private(set) var counts: [String: Double] = [:]

    /// Creates an empty set.
    public init() {}

    /// Adds `count` to the stack made of `frames`, root first.
    public mutating func add<S: Sequence>(frames: S, count: Double = 1) where S.Element == String {
        add(folded: frames.joined(separator: ";"), count: count)
    }

    /// Adds `count` to an already folded stack.
    public mutating func add(folded: String, count: Double) {
        counts[folded, default: 0] += count
    }

    /// Adds every stack of `other`.
    public mutating func merge(_ other: FoldedStacks) {
        for (stack, count) in other.counts { counts[stack, default: 0] += count }
    }

    /// Number of distinct stacks.
    public var count: Int { counts.count }

    /// Sum of all counts.
    public var total: Double { counts.values.reduce(0, +) }

    /// Stacks in byte order of their folded text (the order `sort` gives with `LC_ALL=C`).
    public var sorted: [(stack: String, count: Double)] {
        counts.map { (stack: $0.key, count: $0.value) }
            .sorted { Array($0.stack.utf8).lexicographicallyPrecedes(Array($1.stack.utf8)) }
    }

    /// The folded text: `stack count` lines, byte-sorted, each ending in a newline.
    public func rendered() -> String {
        var out = ""
        for (stack, count) in sorted {
            out += stack
            out += " "
            out += Self.format(count)
            out += "\n"
        }
        return out
    }

    /// A count as folded files write it: integers without a fraction, others in shortest form.
    public static func format(_ count: Double) -> String {
        if count == count.rounded(), abs(count) < 1e18 { return String(Int64(count)) }
        return String(count)
    }
}
