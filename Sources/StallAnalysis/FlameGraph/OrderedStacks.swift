/// One weighted stack of an ``OrderedStacks``: the folded text (`root;...;leaf`), its count and, for a
/// differential profile, the count it had before.
public struct WeightedStack: Sendable, Equatable {
    /// Frames root first, joined by `;`.
    public var stack: String
    /// The count (for a differential profile: the count after).
    public var count: Double
    /// The count before, for a differential profile (`stack before after` lines); nil otherwise.
    public var before: Double?
    /// The count exactly, when it is an integer read from folded text (a Double rounds beyond 2^53); nil
    /// otherwise. The same count as ``count``, so it takes no part in equality.
    public var exact: UInt64?

    /// Creates an entry.
    public init(stack: String, count: Double, before: Double? = nil, exact: UInt64? = nil) {
        self.stack = stack
        self.count = count
        self.before = before
        self.exact = exact
    }

    /// Equal stacks, counts and before counts.
    public static func == (lhs: WeightedStack, rhs: WeightedStack) -> Bool {
        lhs.stack == rhs.stack && lhs.count == rhs.count && lhs.before == rhs.before
    }
}

/// Weighted stacks in a meaningful order: what the flame graph draws. The order matters only to time-ordered
/// outputs (a flame chart); others sort as they need. ``FoldedStacks`` sums stacks by their folded text;
/// exports read a ``Timeline``, whose ``TimelineStacks`` name each sample's stack.
public struct OrderedStacks: Sendable, Equatable {
    /// The stacks, in input order.
    public var stacks: [WeightedStack]
    /// What the counts measure (``CountUnit``); nil: samples, or unknown (folded text). Default: nil.
    public var unit: CountUnit? = nil
    /// Where in the source each function was, by frame name (`Workloads.swift:71`: where most of its samples
    /// were), for the flame graph's tooltips and search; captures read with ``SymbolizerOptions/lines`` fill it.
    /// Default: none.
    public var places: [String: String] = [:]

    /// Creates a profile from stacks in input order, counted in `unit`.
    public init(stacks: [WeightedStack] = [], unit: CountUnit? = nil) {
        self.stacks = stacks
        self.unit = unit
    }

    /// A profile of `folded`'s stacks in byte order, in its unit.
    public init(_ folded: FoldedStacks) {
        stacks = folded.sortedWeightedStacks
        unit = folded.unit
    }

    /// Sum of all counts.
    public var total: Double { stacks.reduce(0) { $0 + $1.count } }

    /// The stacks summed by folded text (before counts are dropped; a count that would take its stack to 2^64 or
    /// more is left out, as ``FoldedStacks/add(folded:count:)`` refuses it).
    public var folded: FoldedStacks {
        var result = FoldedStacks()
        for entry in stacks { result.add(folded: entry.stack, count: entry.count) }
        return result
    }
}

/// An output format drawn from an ``OrderedStacks``: the SVG flame graph. Formats that need episodes, times and
/// per-sample stacks (speedscope, Chrome trace, pprof) are ``ProfileExporter``s over a ``Timeline`` instead.
public protocol StackRenderer {
    /// The format's options.
    associatedtype Options: Sendable

    /// The options this renderer was made with.
    var options: Options { get }

    /// Creates a renderer.
    init(options: Options)

    /// The whole output for `profile`. Tolerated problems go to `diagnostics`.
    func render(_ profile: OrderedStacks, diagnostics: inout Diagnostics) -> String
}
