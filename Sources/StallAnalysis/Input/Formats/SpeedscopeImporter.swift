import StallFormat

/// Reads speedscope's JSON file format (py-spy writes sampled profiles, pyinstrument evented ones, speedscope and
/// `stallprof export` both). A stack is its frames' `name`s, root first; every profile of the file is merged
/// without an extra root frame (``Options/profileRoot`` adds the profile's name as one); the count is the weight
/// in the file's own unit: a sampled profile's sample weights, or for an evented profile the time between
/// consecutive events, given to the frames open then (profiles in different units are merged with a warning).
/// Empty stacks and zero weights add nothing; a weight, or a stack's weights added up, of 2^64 or more is bad data
/// (``FoldedCount``: the limit of every count). A `;` in a
/// frame name becomes `:` (it separates frames in folded stacks), a line break a space. `null` where the
/// schema has an optional field (py-spy's `col`, pyinstrument's `file` and `line`, `activeProfileIndex`) is read.
///
/// Detection looks at the whole document: JSON that is not speedscope (a Chrome trace, a `.cpuprofile`, JSON
/// without speedscope's `$schema`) is bad data naming what it is, never folded into junk.
public struct SpeedscopeImporter: StackImporter {
    /// Options for speedscope input. Every field documents its default.
    public struct Options: Sendable {
        /// Put each profile's `name` as a root frame above its stacks. Default: false.
        public var profileRoot = false
        /// The largest input read, bytes: parsing holds the whole document in memory (about twice its size, plus
        /// the folded stacks). Default: 256 MiB.
        public var maxBytes = 256 << 20

        /// Creates the default options.
        public init() {}
    }

    /// `speedscope`.
    public static let formatName = "speedscope"

    /// The `$schema` value speedscope files carry.
    public static let schemaURL = "https://www.speedscope.app/file-format-schema.json"

    /// JSON: an object (`{` then a key or `}`) or an array of objects or arrays, after white space and a UTF-8
    /// byte order mark. Which JSON format it is, the importer decides from the whole document.
    public static func recognizes(_ head: ArraySlice<UInt8>) -> Bool {
        var bytes = head.drop { $0 == 0xEF || $0 == 0xBB || $0 == 0xBF }.drop(while: isSpace)
        guard let open = bytes.first, open == UInt8(ascii: "{") || open == UInt8(ascii: "[") else { return false }
        bytes = bytes.dropFirst().drop(while: isSpace)
        guard let next = bytes.first else { return head.count > 1 }
        if open == UInt8(ascii: "{") { return next == UInt8(ascii: "\"") || next == UInt8(ascii: "}") }
        // A JSON array of objects, arrays, strings or numbers (named as such, then refused); a folded stack such as
        // `[unknown];main 3` or `[kernel.kallsyms]` goes on with a letter.
        return next == UInt8(ascii: "{") || next == UInt8(ascii: "]") || next == UInt8(ascii: "[")
            || next == UInt8(ascii: "\"") || next == UInt8(ascii: "-") || (next >= 0x30 && next <= 0x39)
    }

    static func isSpace(_ byte: UInt8) -> Bool { byte == 32 || byte == 9 || byte == 10 || byte == 13 }

    /// The options in use.
    public let options: Options

    /// Creates an importer.
    public init(options: Options = Options()) { self.options = options }

    /// An importer with the options of `fold`'s ``FoldOptions/speedscope``.
    public init(_ fold: FoldOptions) { self.init(options: fold.speedscope) }

    /// Reads the whole document, checks it is speedscope and adds every profile's stacks.
    public func importStacks(from stream: ByteStream, into stacks: inout FoldedStacks, diagnostics: inout Diagnostics)
        throws
    {
        if try stream.peek(options.maxBytes + 1).count > options.maxBytes {
            throw StallError.badData(path: stream.name, position: "",
                                        reason: "JSON larger than \(options.maxBytes >> 20) MiB; not read")
        }
        let bytes = try stream.readAll()
        let budget = SpeedscopeFold.budget(forInputBytes: bytes.count)
        let document = try JSONDocument.parse(bytes, name: stream.name)
        guard document["$schema"]?.string == Self.schemaURL else {
            throw StallError.badData(path: stream.name, position: "",
                                        reason: "\(JSONDocument.describe(document)), not a speedscope profile; "
                                            + "stallprof reads speedscope JSON only")
        }
        let shape = JSONShape(path: stream.name)
        let frameList = try shape.array(try shape.object(document["shared"], at: "shared")["frames"], at: "shared.frames")
        let names = try frameList.enumerated().map { index, frame -> String in
            let name = try shape.object(frame, at: "shared.frames[\(index)]")["name"]
            guard let text = name?.string else {
                throw shape.error(at: "shared.frames[\(index)].name", "a frame without a string name")
            }
            let folded = String(text.map { $0.isNewline ? " " : $0 == ";" ? ":" : $0 })
            let file = frame["file"]?.string
            let line = frame["line"]?.number.flatMap { $0 >= 1 && $0 < 1e9 ? Int($0) : nil }
            if file != nil || line != nil, stacks.frameSources[folded] == nil {
                stacks.frameSources[folded] = FrameSource(file: file, line: line)
            }
            return folded
        }
        let profiles = try shape.array(document["profiles"], at: "profiles")
        var units: [String] = []
        for (index, raw) in profiles.enumerated() {
            let at = "profiles[\(index)]"
            let profile = try shape.object(raw, at: at)
            if let unit = profile["unit"]?.string, !units.contains(unit) { units.append(unit) }
            var fold = SpeedscopeFold(names: names, shape: shape, at: at, budget: budget)
            if options.profileRoot { fold.root = profile["name"]?.string.map { [$0] } ?? [] }
            switch profile["type"]?.string {
            case "sampled": try fold.sampled(profile, into: &stacks)
            case "evented": try fold.evented(profile, into: &stacks, diagnostics: &diagnostics)
            default: throw shape.error(at: "\(at).type", "a profile type other than \"sampled\" or \"evented\"")
            }
        }
        if units.count > 1 {
            diagnostics.warn("\(stream.name): profiles in different units (\(units.joined(separator: ", "))) merged; "
                + "each count is in its own profile's unit")
        }
        // The counts' unit for tooltips: the file's when all profiles share one (`none`: plain counts, left nil).
        let unit = units.count > 1 ? CountUnit.named("counts") : units.first.flatMap(CountUnit.speedscope)
        stacks.unit = CountUnit.combined(stacks.unit, unit)
    }
}

/// Folds one speedscope profile: its stacks as frame names, root first, with their weights.
struct SpeedscopeFold {
    /// Frame names by index into `shared.frames`.
    let names: [String]
    let shape: JSONShape
    /// Where the profile sits in the document (`profiles[N]`).
    let at: String
    /// Frames put above every stack (the profile's name with ``SpeedscopeImporter/Options/profileRoot``).
    var root: [String] = []
    /// Bytes of folded stacks this document may still build. A stack is a list of indices into the frame table,
    /// so a small file can name huge stacks; the budget (shared by all profiles) keeps time and memory in
    /// proportion to the input: ``SpeedscopeFold/budget(forInputBytes:)``.
    var budget: Budget

    init(names: [String], shape: JSONShape, at: String, budget: Budget) {
        self.names = names
        self.shape = shape
        self.at = at
        self.budget = budget
    }

    /// What stacks may cost in all: 64 bytes of folded stacks per input byte, plus 1 GiB.
    static func budget(forInputBytes count: Int) -> Budget { Budget(left: (1 << 30) + 64 * count) }

    /// The remaining folded bytes, shared by every profile of a document.
    final class Budget {
        var left: Int
        init(left: Int) { self.left = left }
    }

    /// Adds `frames` with `count`, charging the budget; bad data when a stack is deeper than the deepest one a
    /// flame graph draws or the budget is spent.
    func add(_ frames: [String], count: Double, into stacks: inout FoldedStacks, at location: @autoclosure () -> String)
        throws
    {
        guard frames.count <= ProfileLoader.maxDepth else {
            throw shape.error(at: location(), "a stack deeper than \(ProfileLoader.maxDepth) frames")
        }
        budget.left -= frames.reduce(frames.count) { $0 + $1.utf8.count }
        guard budget.left >= 0 else {
            throw shape.error(at: location(), "the stacks expand to far more than the file's size (more than 64 "
                + "bytes of folded stacks per byte); not folded")
        }
        // Every count as every reader takes it (FoldedCount): a stack's weights summing to 2^64 or more are bad
        // data, never an infinite total.
        guard stacks.add(frames: frames, count: count) else {
            throw shape.error(at: location(), "a weight, or this stack's weights added up, is 2^64 or more (not a finite count); not folded")
        }
    }

    /// The name of frame `raw` (an index into the frame table), or bad data at `location` (built only for the
    /// error).
    func name(_ raw: Double?, at location: @autoclosure () -> String) throws -> String {
        if let raw, raw >= 0, raw < Double(names.count), raw == raw.rounded(.towardZero) { return names[Int(raw)] }
        throw shape.error(at: location(), "not a frame index (0..<\(names.count))")
    }

    /// A sampled profile: each sample's stack with its weight.
    func sampled(_ profile: JSONNode, into stacks: inout FoldedStacks) throws {
        let samples = try shape.array(profile["samples"], at: "\(at).samples")
        let weights = try shape.numbers(profile["weights"], at: "\(at).weights")
        guard samples.count == weights.count else {
            throw shape.error(at: "\(at).weights", "\(weights.count) weights for \(samples.count) samples")
        }
        var frames: [String] = root
        for (index, raw) in samples.enumerated() {
            let stack = try shape.numbers(raw, at: "\(at).samples[\(index)]")
            let weight = weights[index]
            guard weight.isFinite, weight >= 0 else {
                throw shape.error(at: "\(at).weights[\(index)]", "not a finite weight of at least 0")
            }
            frames.removeSubrange(root.count...)
            for (depth, frame) in stack.enumerated() {
                frames.append(try name(frame, at: "\(at).samples[\(index)][\(depth)]"))
            }
            if weight > 0 && !stack.isEmpty {
                try add(frames, count: weight, into: &stacks, at: "\(at).samples[\(index)]")
            }
        }
    }

    /// An evented profile: the time between consecutive events goes to the frames open then. Frames still open at
    /// the end are closed at `endValue` with a warning. Time is summed in a tree of open-frame paths (one node per
    /// distinct path, its time added in O(1) per event) and each path is folded once at the end, so a deep stack
    /// costs its depth once, not at every event.
    func evented(_ profile: JSONNode, into stacks: inout FoldedStacks, diagnostics: inout Diagnostics) throws {
        let events = try shape.array(profile["events"], at: "\(at).events")
        // Node 0 is the root (no frame open); every other node is (parent, frame index).
        var nodes: [(parent: Int, frame: Int, time: Double)] = [(0, -1, 0)]
        var children: [Pair: Int] = [:]
        var current = 0, depth = 0
        var last: Double? = nil
        func attribute(until time: Double) {
            if let last, time > last, current != 0 { nodes[current].time += time - last }
        }
        for (number, raw) in events.enumerated() {
            let event = try shape.object(raw, at: "\(at).events[\(number)]")
            var path: String { "\(at).events[\(number)]" }
            guard let time = event["at"]?.number, time.isFinite else {
                throw shape.error(at: "\(path).at", "not a finite time")
            }
            if let last, time < last { throw shape.error(at: "\(path).at", "events out of time order (\(time) after \(last))") }
            let frame = event["frame"]?.number
            let frameName = try name(frame, at: "\(path).frame")
            let index = Int(frame!)
            attribute(until: time)
            last = time
            switch event["type"]?.string {
            case "O":
                guard depth + root.count < ProfileLoader.maxDepth else {
                    throw shape.error(at: path, "a stack deeper than \(ProfileLoader.maxDepth) frames")
                }
                let key = Pair(parent: current, frame: index)
                if let known = children[key] {
                    current = known
                } else {
                    nodes.append((current, index, 0))
                    children[key] = nodes.count - 1
                    current = nodes.count - 1
                }
                depth += 1
            case "C":
                guard current != 0, nodes[current].frame == index else {
                    throw shape.error(at: path, "closes frame \(index) (\(frameName)) but the innermost open frame is "
                        + (current == 0 ? "none" : "\(nodes[current].frame) (\(names[nodes[current].frame]))"))
                }
                current = nodes[current].parent
                depth -= 1
            default: throw shape.error(at: "\(path).type", "an event type other than \"O\" or \"C\"")
            }
        }
        if depth > 0 {
            let end = profile["endValue"]?.number.flatMap { $0.isFinite ? $0 : nil }
            if let end { attribute(until: end) }
            diagnostics.warn("\(shape.path): \(at): \(depth) frame\(depth == 1 ? "" : "s") never closed; "
                + (end == nil ? "no endValue, so the time after the last event is left out" : "closed at the profile's endValue"))
        }
        for node in nodes.indices.dropFirst() where nodes[node].time > 0 {
            var frames: [String] = []
            var walk = node
            while walk != 0 {
                frames.append(names[nodes[walk].frame])
                walk = nodes[walk].parent
            }
            try add(root + frames.reversed(), count: nodes[node].time, into: &stacks, at: "\(at).events")
        }
    }

    /// A node of the open-frame tree: its parent and its frame index.
    private struct Pair: Hashable {
        var parent: Int
        var frame: Int
    }
}
