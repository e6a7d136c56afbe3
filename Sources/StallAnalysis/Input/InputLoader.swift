import StallFormat

/// How every command reads its inputs: each opened and its format detected once
/// (``Folder/open(_:format:diagnostics:)``), an empty one warned about and skipped, a capture told from other
/// profiles; and the rules the commands share: which inputs may be mixed, and when inputs without any stack count
/// are bad data. `fold`, `diff`, `flamegraph`, `report` and `export` all read through it.
public struct InputLoader {
    /// How inputs are read.
    public let options: FoldOptions
    /// The empty inputs, the captures read and every tolerated problem so far.
    public var diagnostics: Diagnostics
    /// True when captures and other profiles cannot be read together (`report` describes one or the other).
    public let capturesApart: Bool
    /// Every input opened so far, empty ones too, in order.
    public private(set) var inputs: [InputSource] = []

    /// A loader with `options`, adding to `diagnostics`; `capturesApart` refuses captures among other profiles.
    public init(options: FoldOptions, diagnostics: Diagnostics = Diagnostics(), capturesApart: Bool = false) {
        self.options = options
        self.diagnostics = diagnostics
        self.capturesApart = capturesApart
    }

    /// Opens `input` and detects its format: nil, with the empty-input warning, when it holds no data. A capture is
    /// recorded (``Diagnostics/captureInputs``). With ``capturesApart``, a capture after another profile, or
    /// another profile after a capture, is ``StallError/usage(_:)``.
    public mutating func open(_ input: InputSource) throws -> DetectedInput? {
        guard let opened = try Folder.open(input, format: options.format, diagnostics: &diagnostics) else {
            inputs.append(input)
            return nil
        }
        let name = opened.stream.name
        let isCapture = opened.format == .stallprof
        if capturesApart, let first = isCapture ? profiles.first : diagnostics.captureInputs.first {
            let (capture, other) = isCapture ? (name, first) : (first, name)
            throw StallError.usage(
                "\(capture) is a stallprof capture and \(other) is not: report describes captures or other "
                    + "profiles, not both at once; report them separately, or fold them together first "
                    + "(stallprof fold \(capture) \(other) | stallprof report -)")
        }
        if isCapture { diagnostics.captureInput(name) }
        inputs.append(input)
        return opened
    }

    /// The inputs opened so far that held data and are not captures, as messages name them.
    public var profiles: [String] {
        Self.profiles(of: inputs, diagnostics: diagnostics)
    }

    /// `inputs` without those `diagnostics` records as empty or as captures, as messages name them.
    static func profiles(of inputs: [InputSource], diagnostics: Diagnostics) -> [String] {
        var skipped = diagnostics.emptyInputs + diagnostics.captureInputs
        return inputs.map(\.description).filter { name in
            guard let index = skipped.firstIndex(of: name) else { return true }
            skipped.remove(at: index)
            return false
        }
    }

    /// The rule of every command for inputs that yield no stack (`found` false): bad data naming the inputs that
    /// held data but are not captures (`no stack counts found`); nil when a stack was found, or every input was
    /// empty or a capture (a run without a stall, or a selection that keeps none, is valid).
    public static func noStackCounts(found: Bool, inputs: [InputSource], diagnostics: Diagnostics) -> StallError? {
        let profiles = profiles(of: inputs, diagnostics: diagnostics)
        guard !found, !profiles.isEmpty else { return nil }
        return .badData(path: profiles.joined(separator: ", "), position: "", reason: "no stack counts found")
    }

    /// The warning for captures from which nothing is selected (`found` false and every input empty or a
    /// capture); nil otherwise.
    public static func emptySelection(found: Bool, inputs: [InputSource], diagnostics: Diagnostics) -> String? {
        let captures = diagnostics.captureInputs
        guard !found, !captures.isEmpty, profiles(of: inputs, diagnostics: diagnostics).isEmpty else { return nil }
        return "\(captures.joined(separator: ", ")): no samples selected (no episode, or none kept by --kind, "
            + "--state, --stall, --target or --range)"
    }

    /// Throws ``noStackCounts(found:inputs:diagnostics:)``'s error for the inputs opened so far, if any.
    public func requireStackCounts(found: Bool) throws {
        if let error = Self.noStackCounts(found: found, inputs: inputs, diagnostics: diagnostics) { throw error }
    }

    /// Captures cannot be exported with the untimed stacks of `untimed` (their samples would not mean the same
    /// thing): ``StallError/usage(_:)`` when both are present.
    public func refuseCaptures(among untimed: [String]) throws {
        let captures = diagnostics.captureInputs
        guard !captures.isEmpty, !untimed.isEmpty else { return }
        throw StallError.usage("cannot export captures (\(captures.joined(separator: ", "))) together with "
            + "untimed stacks (" + untimed.joined(separator: ", ") + "); export them separately")
    }
}
