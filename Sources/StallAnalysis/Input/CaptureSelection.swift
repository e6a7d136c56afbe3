import StallFormat

/// Which stalls' samples to keep.
public enum StallStateFilter: String, Sendable, CaseIterable {
    /// Every stall.
    case all
    /// Stalls whose thread burned CPU.
    case busy
    /// Stalls whose thread waited.
    case blocked

    /// True when a stall in `state` passes (an unclassifiable stall passes only `.all`).
    public func accepts(_ state: StallState?) -> Bool {
        switch self {
        case .all: return true
        case .busy: return state == .busy
        case .blocked: return state == .blocked
        }
    }
}

/// Which kinds of episode to keep.
public enum EpisodeKindFilter: String, Sendable, CaseIterable {
    /// Every episode.
    case all
    /// Stalls only: the main queue did not answer within the threshold.
    case stall
    /// Saturated episodes only: the main queue answered, but its thread never rested.
    case saturated

    /// True when an episode of `kind` passes.
    public func accepts(_ kind: EpisodeKind) -> Bool {
        switch self {
        case .all: return true
        case .stall: return kind == .stall
        case .saturated: return kind == .saturated
        }
    }
}

/// Which episodes of a capture, and which of their samples, a command keeps (`--kind`, `--state`, `--stall`,
/// `--target`, `--range`), and the one loop over them that folding, the flame chart, the report and the export share.
public struct CaptureSelection: Sendable {
    /// Keep only the samples of busy or of blocked episodes. Default: `.all`.
    public var state: StallStateFilter = .all
    /// Keep only stalls or only saturated episodes. Default: `.all`.
    public var kind: EpisodeKindFilter = .all
    /// Keep only these episode numbers. Default: empty, every episode.
    public var stallIDs: Set<UInt32> = []
    /// Keep only the episodes of these watched targets (``Stall/target``: `main` for the main queue). Default:
    /// empty, every target.
    public var targets: Set<String> = []
    /// Keep only samples taken this many nanoseconds after their episode's start (both ends included). Default:
    /// nil, every sample.
    public var window: ClosedRange<UInt64>? = nil

    /// Creates the default selection: every episode, every sample.
    public init() {}

    /// True when the episode passes the kind, state, number and target filters.
    public func accepts(_ stall: Stall) -> Bool {
        kind.accepts(stall.kind) && state.accepts(stall.state) && (stallIDs.isEmpty || stallIDs.contains(stall.id))
            && (targets.isEmpty || targets.contains(stall.target))
    }

    /// True when `sample` of `stall` lies in ``window`` (always true without a window).
    public func accepts(_ sample: Sample, of stall: Stall) -> Bool {
        guard let window else { return true }
        return window.contains(sample.timestampNs &- min(sample.timestampNs, stall.begin.startNs))
    }

    /// One selected episode of a capture and its selected samples.
    public struct SelectedEpisode {
        /// Its position in the capture's ``Capture/stalls``.
        public var index: Int
        /// The episode.
        public var episode: Stall
        /// Its samples that have frames and lie in ``CaptureSelection/window``, in time order.
        public var samples: [Sample]
    }

    /// The episodes of `capture` that pass, in capture order, each with its selected samples.
    public func episodes(of capture: Capture) -> [SelectedEpisode] {
        capture.stalls.indices.compactMap { index in
            let stall = capture.stalls[index]
            guard accepts(stall) else { return nil }
            let samples = stall.samples.filter { !$0.frames.isEmpty && accepts($0, of: stall) }
            return SelectedEpisode(index: index, episode: stall, samples: samples)
        }
    }

    /// Warns, in `diagnostics`, about what reading `capture` tolerated and about each selected episode the file
    /// ends during (its samples are kept; one of a target other than the main queue named with it, `stall 3 on
    /// loop-1`): what every command that turns a capture into stacks says first.
    public func warnAboutReading(_ capture: Capture, diagnostics: inout Diagnostics) {
        capture.warnings.forEach { diagnostics.warn($0) }
        for stall in capture.stalls where !stall.isFinished && accepts(stall) {
            let what = stall.kind == .saturated ? "saturated episode" : "stall"
            let on = stall.target == TargetNames.main ? "" : " on \(stall.target)"
            diagnostics.warn("\(capture.source): \(what) \(stall.id)\(on) is unfinished (the file ends during it); "
                + "its \(stall.samples.count) samples are kept")
        }
    }

    /// The ``window`` that `text` names: `FROM..TO` (or `FROM-TO`) in milliseconds after each episode's start,
    /// both ends included; an empty `FROM` is 0, an empty `TO` the episode's end. Nil when `text` is not such a
    /// window (not two non-negative numbers, or `TO` before `FROM`).
    public static func window(milliseconds text: String) -> ClosedRange<UInt64>? {
        guard let (fromText, toText) = split(text) else { return nil }
        guard let from = fromText.isEmpty ? 0 : Double(fromText),
            let to = toText.isEmpty ? Double.infinity : Double(toText), from >= 0, to >= from, !from.isInfinite
        else { return nil }
        let nanoseconds = { (ms: Double) -> UInt64 in
            ms.isInfinite || ms * 1e6 >= Double(UInt64.max) ? UInt64.max : UInt64(ms * 1e6)
        }
        return nanoseconds(from)...nanoseconds(to)
    }

    /// `text` cut at `..`, or else at a `-` that is not a number's exponent sign.
    private static func split(_ text: String) -> (Substring, Substring)? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        if let dots = parts.indices.dropLast().first(where: { parts[$0 + 1].isEmpty && $0 + 2 < parts.count }) {
            // FROM..TO: the numbers themselves may hold one '.' each.
            let from = parts[..<(dots + 1)].joined(separator: "."), to = parts[(dots + 2)...].joined(separator: ".")
            guard !to.contains("..") else { return nil }
            return (Substring(from), Substring(to))
        }
        var previous: Character? = nil
        for index in text.indices {
            if text[index] == "-", previous != "e", previous != "E" {
                return (text[..<index], text[text.index(after: index)...])
            }
            previous = text[index]
        }
        return nil
    }
}
