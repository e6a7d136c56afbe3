/// One frame with its place in the source: a function, and the file and line it was at. Where the compiler inlined
/// a function into another, one address holds several frames: the inlined one (``inlined``) and the function it
/// was inlined into, at the call's line.
public struct SourceFrame: Sendable, Hashable {
    /// The function's name, demangled as the symbolizer's options say.
    public var function: String
    /// The source file as the debug information records it (usually absolute); nil when not known.
    public var file: String?
    /// The line in ``file``; 0 when not known.
    public var line: Int
    /// True when the compiler inlined this frame into the frame before it (toward the root): it has no machine
    /// frame of its own.
    public var inlined: Bool

    /// Creates a frame.
    public init(function: String, file: String? = nil, line: Int = 0, inlined: Bool = false) {
        (self.function, self.file, self.line, self.inlined) = (function, file, line, inlined)
    }

    /// `Workloads.swift:66`: the file's last path component and the line; nil without a file or a line.
    public var shortLocation: String? {
        guard let file, line > 0 else { return nil }
        return "\(file.split(separator: "/").last.map(String.init) ?? file):\(line)"
    }
}

/// Where in its source a machine frame was: the file and line of its own function (for code the compiler inlined
/// there, the line of the call), and the frames inlined at that spot, outermost first, each at its own line.
public struct SourcePlace: Sendable, Hashable {
    /// The function's source file (as recorded: usually absolute); nil when not known.
    public var file: String?
    /// The line in ``file``; 0 when not known.
    public var line: Int
    /// The functions inlined at this spot, outermost first; the last is where the code was.
    public var inlined: [SourceFrame]

    /// The place of ``Symbolizer/sourceFrames(for:isReturnAddress:)``'s frames; nil when they name no file, no
    /// line and no inlined function.
    public init?(_ frames: [SourceFrame]) {
        guard let outer = frames.first, outer.line > 0 || frames.count > 1 || outer.file != nil else { return nil }
        (file, line, inlined) = (outer.file, outer.line, Array(frames.dropFirst()))
    }

    /// `Workloads.swift:66`, or nil without a line (``SourceFrame/shortLocation``).
    public var shortLocation: String? { SourceFrame(function: "", file: file, line: line).shortLocation }
}
