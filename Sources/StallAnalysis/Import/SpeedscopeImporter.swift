/// Reads speedscope's JSON file format (py-spy writes sampled profiles, pyinstrument evented ones, speedscope and
/// `stallprof export` both). A stack is its frames' `name`s, root first; every profile of the file is merged
/// without an extra root frame (``Options/profileRoot`` adds the profile's name as one); the count is the weight
/// in the file's own unit: a sampled profile's sample weights, or for an evented profile the time between
/// consecutive events, given to the frames open then. Empty stacks and zero weights add nothing. `null` where the
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
        return next == UInt8(ascii: "{") || next == UInt8(ascii: "]")
    }

    static func isSpace(_ byte: UInt8) -> Bool { byte == 32 || byte == 9 || byte == 10 || byte == 13 }

    /// The options in use.
    public let options: Options

    /// Creates an importer.
    public init(options: Options = Options()) { self.options = options }

    /// Reads the whole document, checks it is speedscope and adds every profile's stacks.
    public func importStacks(from stream: ByteStream, into stacks: inout FoldedStacks, diagnostics: inout Diagnostics)
        throws
    {
        if try stream.peek(options.maxBytes + 1).count > options.maxBytes {
            throw AnalysisError.badData(path: stream.name, position: "",
                                        reason: "JSON larger than \(options.maxBytes >> 20) MiB; not read")
        }
        let document = try JSONDocument.parse(try stream.readAll(), name: stream.name)
        guard document["$schema"]?.string == Self.schemaURL else {
            throw AnalysisError.badData(path: stream.name, position: "",
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
            return String(text.map { $0.isNewline ? " " : $0 })
        }
        let profiles = try shape.array(document["profiles"], at: "profiles")
        for (index, raw) in profiles.enumerated() {
            let at = "profiles[\(index)]"
            let profile = try shape.object(raw, at: at)
            var fold = SpeedscopeFold(names: names, shape: shape, at: at)
            if options.profileRoot { fold.root = profile["name"]?.string.map { [$0] } ?? [] }
            switch profile["type"]?.string {
            case "sampled": try fold.sampled(profile, into: &stacks)
            case "evented": try fold.evented(profile, into: &stacks, diagnostics: &diagnostics)
            default: throw shape.error(at: "\(at).type", "a profile type other than \"sampled\" or \"evented\"")
            }
        }
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

    init(names: [String], shape: JSONShape, at: String) {
        self.names = names
        self.shape = shape
        self.at = at
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
            if weight > 0 && !stack.isEmpty { stacks.add(frames: frames, count: weight) }
        }
    }

    /// An evented profile: the time between consecutive events goes to the frames open then. Frames still open at
    /// the end are closed at `endValue` with a warning.
    func evented(_ profile: JSONNode, into stacks: inout FoldedStacks, diagnostics: inout Diagnostics) throws {
        let events = try shape.array(profile["events"], at: "\(at).events")
        var open: [(index: Int, name: String)] = []
        var last: Double? = nil
        func attribute(until time: Double) {
            if let last, time > last, !open.isEmpty { stacks.add(frames: root + open.map(\.name), count: time - last) }
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
            case "O": open.append((index, frameName))
            case "C":
                guard let top = open.last, top.index == index else {
                    throw shape.error(at: path, "closes frame \(index) (\(frameName)) but the innermost open frame is "
                        + (open.last.map { "\($0.index) (\($0.name))" } ?? "none"))
                }
                open.removeLast()
            default: throw shape.error(at: "\(path).type", "an event type other than \"O\" or \"C\"")
            }
        }
        if !open.isEmpty {
            if let end = profile["endValue"]?.number, end.isFinite { attribute(until: end) }
            diagnostics.warn("\(shape.path): \(at): \(open.count) frame\(open.count == 1 ? "" : "s") never closed; "
                + "closed at the profile's endValue")
        }
    }
}
