/// Stacks of numbered frames stored as one prefix tree: a node is a frame number under its parent node, so every
/// distinct stack is one node (its leaf) and stacks that begin alike share their beginning. Node 0 is the empty
/// stack. Nodes are numbered as they are added, a parent always before its children. The export's
/// ``TimelineStacks`` and the reports' ``ProfileBuilder`` keep their stacks in one.
public struct StackTree: Sendable {
    /// Each node's parent (node 0, the empty stack, is its own).
    public private(set) var parents: [Int32] = [0]
    /// Each node's frame number (node 0: -1).
    public private(set) var nodeFrames: [Int32] = [-1]
    /// An open-addressing table of the nodes by parent and frame (node 0, never a child, marks an empty slot); a
    /// power of two in size, at most 3/4 full. The key is in the slot: a look-up touches one place in memory.
    private var slots = [Slot](repeating: Slot(parent: 0, frame: 0, node: 0), count: 1024)
    /// The frames and nodes of the stack ``node(for:)`` gave last: the next one mostly begins alike.
    private var lastFrames: [Int32] = []
    private var lastNodes: [Int32] = []

    private struct Slot {
        var parent: Int32
        var frame: Int32
        var node: Int32
    }

    /// A tree holding only the empty stack.
    public init() {}

    /// Number of nodes, the empty stack included.
    public var nodeCount: Int { parents.count }

    /// The node for frame number `frame` called from `parent`, added when it is new.
    public mutating func child(of parent: Int32, frame: Int32) -> Int32 {
        let mask = slots.count - 1
        var slot = Self.slot(parent, frame) & mask
        while slots[slot].node != 0 {
            if slots[slot].parent == parent && slots[slot].frame == frame { return slots[slot].node }
            slot = (slot + 1) & mask
        }
        parents.append(parent)
        nodeFrames.append(frame)
        slots[slot] = Slot(parent: parent, frame: frame, node: Int32(parents.count - 1))
        if parents.count * 4 > slots.count * 3 { grow() }
        return Int32(parents.count - 1)
    }

    /// The leaf node of `frames` (root first), adding what is missing; 0 for no frames. The frames it shares with
    /// the start of the previous call's are not looked up again.
    public mutating func node(for frames: [Int32]) -> Int32 {
        var shared = 0
        let limit = min(frames.count, lastFrames.count)
        while shared < limit && frames[shared] == lastFrames[shared] { shared += 1 }
        lastFrames.removeAll(keepingCapacity: true)
        lastFrames.append(contentsOf: frames)
        lastNodes.removeSubrange(shared...)
        for frame in frames[shared...] { lastNodes.append(child(of: lastNodes.last ?? 0, frame: frame)) }
        return lastNodes.last ?? 0
    }

    /// The nodes of `node`'s stack, leaf first, in `path` (its contents replaced).
    public func path(of node: Int32, into path: inout [Int32]) {
        path.removeAll(keepingCapacity: true)
        var current = node
        while current != 0 {
            path.append(current)
            current = parents[Int(current)]
        }
    }

    /// The frame numbers of `node`'s stack, root first.
    public func frames(of node: Int32) -> [Int32] {
        var nodes: [Int32] = []
        path(of: node, into: &nodes)
        return nodes.reversed().map { nodeFrames[Int($0)] }
    }

    /// Where the search for a parent's child with `frame` starts (before masking).
    @inline(__always)
    private static func slot(_ parent: Int32, _ frame: Int32) -> Int {
        let key = UInt64(UInt32(bitPattern: parent)) << 32 | UInt64(UInt32(bitPattern: frame))
        let mixed = (key ^ (key >> 29)) &* 0xBF58_476D_1CE4_E5B9
        return Int(truncatingIfNeeded: mixed ^ (mixed >> 32))
    }

    /// Doubles the slots and puts every node back.
    private mutating func grow() {
        let old = slots
        slots = Array(repeating: Slot(parent: 0, frame: 0, node: 0), count: slots.count * 2)
        let mask = slots.count - 1
        for entry in old where entry.node != 0 {
            var slot = Self.slot(entry.parent, entry.frame) & mask
            while slots[slot].node != 0 { slot = (slot + 1) & mask }
            slots[slot] = entry
        }
    }
}
