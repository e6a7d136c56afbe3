/// The frames and stacks of a ``Timeline``, each stored once: every distinct frame in ``frames``, and every distinct
/// stack as a node of one prefix tree (a node is a frame under its parent node), so stacks that begin alike share
/// their beginning. A sample names its stack by its leaf node; node 0 is the empty stack. A million folded stacks
/// of a dozen frames cost a few bytes a frame here, not a `TimelineFrame` each.
public struct TimelineStacks: Sendable {
    /// The distinct frames, by frame number.
    public private(set) var frames: [TimelineFrame] = []
    private var frameNumbers: [TimelineFrame: Int32] = [:]
    /// The stacks: nodes, each a frame number under its parent node.
    public private(set) var tree = StackTree()
    /// Each node's parent (node 0, the empty stack, is its own).
    public var parents: [Int32] { tree.parents }
    /// Each node's frame number (node 0: -1).
    public var nodeFrames: [Int32] { tree.nodeFrames }

    /// An empty set: only the empty stack.
    public init() {}

    /// Number of nodes, the empty stack included.
    public var nodeCount: Int { tree.nodeCount }

    /// The number of `frame`, added when it is new.
    public mutating func number(of frame: TimelineFrame) -> Int32 {
        if let known = frameNumbers[frame] { return known }
        frames.append(frame)
        frameNumbers[frame] = Int32(frames.count - 1)
        return Int32(frames.count - 1)
    }

    /// The node for frame number `frame` called from `parent`, added when it is new.
    public mutating func child(of parent: Int32, frame: Int32) -> Int32 { tree.child(of: parent, frame: frame) }

    /// The leaf node of `frames` (root first), adding what is missing; 0 for no frames.
    public mutating func node(for frames: [TimelineFrame]) -> Int32 { tree.node(for: frames.map { number(of: $0) }) }

    /// The leaf node of the stack of frame numbers `frames` (root first), adding what is missing; 0 for none.
    public mutating func node(for frames: [Int32]) -> Int32 { tree.node(for: frames) }

    /// The frames of `node`'s stack, root first.
    public func frames(of node: Int32) -> [TimelineFrame] { tree.frames(of: node).map { frames[Int($0)] } }

    /// The nodes of `node`'s stack, leaf first, in `path` (its contents replaced).
    func path(of node: Int32, into path: inout [Int32]) { tree.path(of: node, into: &path) }

    /// Adds every node of `other` and returns, for each of `other`'s nodes, its number here.
    mutating func add(_ other: TimelineStacks) -> [Int32] {
        let frameMap = other.frames.map { number(of: $0) }
        var nodeMap: [Int32] = [0]
        nodeMap.reserveCapacity(other.nodeCount)
        // A parent is always numbered before its children.
        for node in 1..<other.nodeCount {
            nodeMap.append(child(of: nodeMap[Int(other.parents[node])], frame: frameMap[Int(other.nodeFrames[node])]))
        }
        return nodeMap
    }

    /// Frames grouped by what an exporter tells apart (`key`: speedscope's name, image, file and line; Chrome's name
    /// and image): each frame's group, numbered from 0 in frame order, and each group's first frame.
    func groups<Key: Hashable>(by key: (TimelineFrame) -> Key) -> (groupOf: [Int32], firstFrame: [Int32]) {
        var numbers: [Key: Int32] = [:]
        var firstFrame: [Int32] = []
        let groupOf = frames.indices.map { index -> Int32 in
            let value = key(frames[index])
            if let known = numbers[value] { return known }
            numbers[value] = Int32(firstFrame.count)
            firstFrame.append(Int32(index))
            return Int32(firstFrame.count - 1)
        }
        return (groupOf, firstFrame)
    }

    /// The prefix tree over frame groups (`groupOf`, from ``groups(by:)``): each node's node in that tree, where two
    /// stacks whose frames are alike group by group are one. Nil when every frame is its own group: the trees are
    /// the same then.
    func merged(by groupOf: [Int32], groups: Int) -> [Int32]? {
        guard groups < frames.count else { return nil }
        var tree = StackTree()
        var result: [Int32] = [0]
        result.reserveCapacity(nodeCount)
        for node in 1..<nodeCount {
            result.append(tree.child(of: result[Int(parents[node])], frame: groupOf[Int(nodeFrames[node])]))
        }
        return result
    }
}

/// A walk over samples' stacks in sample order that gives each node once: for each stack, the nodes not met before,
/// leaf first. Every other node of the stack was met earlier, so what exporters number by first appearance (root
/// first or leaf first) comes out as a walk over every frame of every sample would number it.
struct NewNodes {
    private var seen: [Bool]
    /// The nodes not met before of the last ``callAsFunction(_:in:)``, leaf first.
    private(set) var chain: [Int32] = []

    /// A walk over `stacks`, nothing met yet.
    init(_ stacks: TimelineStacks) { seen = [true] + Array(repeating: false, count: stacks.nodeCount - 1) }

    /// Sets ``chain`` to the nodes of the stack ending at `leaf` not met before, leaf first, and marks them met.
    mutating func callAsFunction(_ leaf: Int32, in stacks: TimelineStacks) {
        chain.removeAll(keepingCapacity: true)
        var node = leaf
        while !seen[Int(node)] {
            seen[Int(node)] = true
            chain.append(node)
            node = stacks.parents[Int(node)]
        }
    }
}
