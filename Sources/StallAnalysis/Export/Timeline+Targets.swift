/// The watched targets of a capture's episodes (``TimelineEpisode/target``) as exports name them: a timeline whose
/// episodes are all the main queue's reads as one without targets.
extension Timeline {
    /// True when some episode is of a watched target other than the main queue: then exports give every capture
    /// episode its target (a slice argument, a pprof label), the main queue's too, so a viewer can filter by it.
    public var namesTargets: Bool { episodes.contains { ($0.target ?? TargetNames.main) != TargetNames.main } }

    /// What the sampled thread `tid` of process `pid` watched: its episodes' targets, comma-separated, `main queue`
    /// for the main queue's (first), the others by name (`loop-1`); `main queue` for a thread without episodes
    /// (one that only set markers).
    public func watchedName(pid: Int32, tid: Int32) -> String {
        let mine = episodes.lazy.filter { ($0.pid == nil || $0.pid == pid) && $0.tid == tid }.compactMap(\.target)
        let names = TargetNames.ordered(mine).map { $0 == TargetNames.main ? "main queue" : $0 }
        return names.isEmpty ? "main queue" : names.joined(separator: ", ")
    }
}

extension TimelineEpisode {
    /// ` on NAME` for an episode of a watched target other than the main queue (`stall 7 on loop-1`); empty
    /// otherwise.
    var onTarget: String { target.map { $0 == TargetNames.main ? "" : " on \($0)" } ?? "" }
}
