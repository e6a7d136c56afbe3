import StallFormat

/// Reads the text report of macOS `sample` (the "Call graph:" section) and folds each call tree node's self count.
///
/// Unlike inferno and stackcollapse-sample.awk, stacks whose leaf is a waiting symbol (`__ulock_wait`,
/// `mach_msg_trap`, ...) are kept by default: a blocked main thread is what a stall profiler looks for.
/// `filterWaiting` drops them like the peers. Thread frames keep their label (`Thread_123 DispatchQueue_1:
/// com.apple.main-thread (serial)`), so the main thread is recognizable.
public struct MacSampleImporter: StackImporter {
    /// Options for `sample` reports. Every field documents its default.
    public struct Options: Sendable {
        /// `--filter-waiting`: drop stacks whose leaf is a waiting symbol, like inferno. Default: false (kept).
        public var filterWaiting = false
        /// `--no-modules`: frames are `function` instead of `module`function``. Default: false (with modules).
        public var noModules = false
        /// Repair partially demangled Rust symbols, as inferno always does. Default: true.
        public var repairRust = true

        /// Creates the default options.
        public init() {}
    }

    /// The leaf symbols of waiting threads that inferno hides.
    public static let waitingSymbols = [
        "__psynch_cvwait", "__select", "__semwait_signal", "__ulock_wait", "__wait4", "__workq_kernreturn", "kevent",
        "mach_msg_trap", "read", "semaphore_wait_trap",
    ]

    /// `sample`.
    public static let formatName = "sample"

    static let startLine = Array("Call graph:".utf8)
    static let endLine = Array("Total number in stack".utf8)

    /// A `sample` report: starts with "Analysis of sampling" or has a "Call graph:" line.
    public static func recognizes(_ head: ArraySlice<UInt8>) -> Bool {
        head.starts(with: "Analysis of sampling".utf8)
            || head.split(separator: 10).contains { $0.starts(with: startLine) }
    }

    /// The options in use.
    public let options: Options

    /// Creates an importer.
    public init(options: Options = Options()) { self.options = options }

    /// An importer with the options of `fold`'s ``FoldOptions/sample``.
    public init(_ fold: FoldOptions) { self.init(options: fold.sample) }

    /// One node of the call tree on the path being read.
    private struct Node {
        var frame: String
        var count: Int
        var childCount = 0
    }

    /// Streams the report and adds each node's self count.
    public func importStacks(from stream: ByteStream, into stacks: inout FoldedStacks, diagnostics: inout Diagnostics)
        throws
    {
        var section = 0  // 0 before "Call graph:", 1 inside, 2 after
        var path: [Node] = []
        var refused = 0
        func bad(_ number: Int, _ reason: String, _ line: UnsafeBufferPointer<UInt8>) -> StallError {
            .badData(path: stream.name, position: "line \(number)", reason: "\(reason): \(UnrecognizedLines.quote(line))")
        }
        try stream.forEachLine { line, number in
            switch section {
            case 0:
                if line.starts(with: Self.startLine) { section = 1 }
            case 1:
                if line.allSatisfy(PerfLineSyntax.isSpace) { return }
                if line.starts(with: Self.endLine) {
                    pop(to: 0, path: &path, into: &stacks, refused: &refused)
                    section = 2
                    return
                }
                guard line.count > 4, line.prefix(4).allSatisfy({ $0 == 32 }) else {
                    throw bad(number, "call graph line does not start with four spaces", line)
                }
                var indent = 4
                while indent < line.count, [32, 43, 124, 58, 33].contains(line[indent]) { indent += 1 }  // " +|:!"
                guard indent < line.count else { throw bad(number, "call graph line holds only tree characters", line) }
                guard (indent - 4) % 2 == 0 else { throw bad(number, "odd indentation", line) }
                let depth = (indent - 4) / 2
                guard depth <= path.count else { throw bad(number, "indentation skips a level", line) }
                let text = String(decoding: UnsafeBufferPointer(rebasing: line[indent...]), as: UTF8.self)
                let parts = text.split(separator: " ", maxSplits: 1)
                guard parts.count == 2 else { throw bad(number, "no function after the sample count", line) }
                guard parts[0].first?.isNumber == true, let count = Int(parts[0]) else {
                    throw bad(number, "invalid sample count", line)
                }
                pop(to: depth, path: &path, into: &stacks, refused: &refused)
                if depth > 0 {
                    let (sum, overflow) = path[depth - 1].childCount.addingReportingOverflow(count)
                    guard !overflow else { throw bad(number, "sample counts overflow", line) }
                    path[depth - 1].childCount = sum
                }
                path.append(Node(frame: depth == 0 ? Self.threadLabel(parts[1]) : frame(parts[1]), count: count))
            default:
                return
            }
        }
        if refused > 0 {
            diagnostics.warn("\(stream.name): \(refused) call graph node\(refused == 1 ? "" : "s") skipped: the stack's "
                + "count would exceed 2^64-1")
        }
        switch section {
        case 0: diagnostics.warn("\(stream.name): no \"Call graph:\" section; nothing folded")
        case 1:
            throw StallError.badData(path: stream.name, position: "end of input",
                                        reason: "the call graph is cut short (no \"Total number in stack\" line)")
        default: break
        }
    }

    /// Leaves the nodes deeper than `depth`, adding each one's self count.
    /// `refused` counts the self counts left out because their stack's count would have reached 2^64.
    private func pop(to depth: Int, path: inout [Node], into stacks: inout FoldedStacks, refused: inout Int) {
        while path.count > depth {
            let node = path[path.count - 1]
            let own = node.count - node.childCount
            if own > 0 && !(options.filterWaiting && Self.waitingSymbols.contains(where: { node.frame.hasSuffix($0) })) {
                if !stacks.add(frames: path.map(\.frame), count: Double(own)) { refused += 1 }
            }
            path.removeLast()
        }
    }

    /// A thread line's label with runs of spaces made single: `Thread_123 DispatchQueue_1: ... (serial)`.
    static func threadLabel(_ text: Substring) -> String {
        String(text.split(separator: " ").joined(separator: " ").map { $0 == ";" ? ":" : $0 })
    }

    /// A frame line's `module`function`: the function up to its first `(`, the module from `(in module)` without
    /// `.dylib`.
    func frame(_ text: Substring) -> String {
        var function = String(text[..<(text.firstIndex(of: "(") ?? text.endIndex)])
        while function.last == " " { function.removeLast() }
        if options.repairRust { function = RustSymbols.repaired(function) }
        function = String(function.map { $0 == ";" ? ":" : $0 })
        let bytes = Array(text.utf8)
        let marker = Array("(in ".utf8)
        guard !options.noModules, bytes.count >= marker.count,
              let at = (0...(bytes.count - marker.count)).last(where: { bytes[$0..<($0 + marker.count)].elementsEqual(marker) }),
              let close = bytes[(at + marker.count)...].firstIndex(of: UInt8(ascii: ")"))
        else { return function }
        var module = String(decoding: bytes[(at + marker.count)..<close], as: UTF8.self)
        if module.hasSuffix(".dylib") { module.removeLast(6) }
        return module.isEmpty ? function : "\(module)`\(function)"
    }
}
