/// Where in their source the frames of a profile's samples were (``SourcePlace``), counted per function and per
/// stack frame, so that a report can name the line that most of a function's samples were at.
struct SourceTally {
    /// Per name number: each place with its weight, anywhere on the stack and as the leaf.
    private var anywhere: [Int32: [SourcePlace: Double]] = [:]
    private var leaf: [Int32: [SourcePlace: Double]] = [:]
    /// Per stack (its node in the builder's tree): per depth, each place with its weight.
    private var stacks: [Int32: [[SourcePlace: Double]]] = [:]

    /// True when no place was added.
    var isEmpty: Bool { anywhere.isEmpty }

    /// Adds one sample's places (`places[i]` of `frames[i]`, root first; nil: not known) of `weight`; `node`: its
    /// stack's node in the tree, when it has one.
    mutating func add(frames: [Int32], places: [SourcePlace?], node: Int32?, weight: Double) {
        guard places.count == frames.count else { return }
        // A place with neither a line nor an inlined function (compiler-generated code, line 0) says nothing the
        // frame's other places would not: it never outweighs a line.
        let places = places.map { $0.flatMap { $0.line > 0 || !$0.inlined.isEmpty ? $0 : nil } }
        for (depth, place) in places.enumerated() {
            guard let place else { continue }
            anywhere[frames[depth], default: [:]][place, default: 0] += weight
            if depth == frames.count - 1 { leaf[frames[depth], default: [:]][place, default: 0] += weight }
        }
        guard let node else { return }
        var perDepth = stacks[node] ?? Array(repeating: [:], count: places.count)
        for (depth, place) in places.enumerated() where depth < perDepth.count {
            if let place { perDepth[depth][place, default: 0] += weight }
        }
        stacks[node] = perDepth
    }

    /// The place most of the function's weight was at, anywhere on the stack (`asLeaf`: as the leaf); nil when
    /// none is known.
    func place(of name: Int32, asLeaf: Bool = false) -> SourcePlace? {
        (asLeaf ? leaf : anywhere)[name].flatMap(Self.mostCommon)
    }

    /// The place most samples of the stack at `node` were at, per frame, root first; empty when none is known.
    func places(ofStack node: Int32) -> [SourcePlace?] {
        stacks[node]?.map(Self.mostCommon) ?? []
    }

    /// The heaviest place; ties: the smallest file, then line (never the dictionary's order).
    private static func mostCommon(_ counts: [SourcePlace: Double]) -> SourcePlace? {
        counts.max { a, b in
            if a.value != b.value { return a.value < b.value }
            return (a.key.file ?? "", a.key.line, a.key.inlined.count) > (b.key.file ?? "", b.key.line, b.key.inlined.count)
        }?.key
    }
}
