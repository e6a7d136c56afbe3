import StallFormat

/// The report's watched targets (the main queue, and the event loops, serial queues and cooperative pool an app
/// names): a report whose episodes are all the main queue's reads as one without targets; any other is grouped
/// by target, and names the target of every episode that is not the main queue's.
extension StallReport {
    /// True when the text groups episodes by target: some selected episode is not the main queue's.
    public var showsTargets: Bool { episodes.contains { $0.target != TargetNames.main } }

    /// The targets of the selected episodes: `main` first, then the others in byte order of their names.
    public var targets: [String] { TargetNames.ordered(episodes.map(\.target)) }

    /// How the text names an episode: `stall 3`, `capture 2 saturated 5`, and ` on NAME` after it when its
    /// target is not the main queue (`stall 7 on loop-1`); `target` false leaves the target out (the list of a
    /// group's episodes: the group's heading names it).
    func label(_ e: EpisodeSummary, target: Bool = true) -> String {
        (captures.count > 1 ? "capture \(e.capture + 1) " : "") + "\(e.kind) \(e.id)" + (target ? Self.on(e.target) : "")
    }

    /// ` on NAME` for a target other than the main queue; empty for the main queue.
    static func on(_ target: String) -> String {
        target == TargetNames.main ? "" : " on " + shown(target)
    }

    /// A target's name as the text shows it: at most 40 columns (a name comes from the app, of any length).
    static func shown(_ target: String) -> String { ReportFormat.fit(target, width: 40) }

    /// `capture`'s episode table, one per target when ``showsTargets`` (each under `target NAME: N episodes`),
    /// else one for all; `table` draws the rows it is given.
    func tables(capture: Int, _ table: ([EpisodeSummary]) -> [String]) -> [String] {
        let rows = episodes.filter { $0.capture == capture }
        guard showsTargets else { return [""] + table(rows) }
        return targets.flatMap { target -> [String] in
            let mine = rows.filter { $0.target == target }
            guard !mine.isEmpty else { return [] }
            return ["", "target \(Self.shown(target)): " + Self.episodes(mine.count)]
                + table(mine)
        }
    }

    /// The sections of every group, `section` drawing one: when ``showsTargets``, target by target, each target's
    /// under a heading with its figures (`target loop-1: 2 episodes, 2.600 s (1 stall, 1 saturated; 2 busy, 0
    /// blocked)`); each section follows a blank line.
    func sections(_ section: (EpisodeGroup) -> [String]) -> [String] {
        guard showsTargets else { return groups.flatMap { [""] + section($0) } }
        return targets.flatMap { target -> [String] in
            let members = episodes.filter { $0.target == target }
            let count = { (test: (EpisodeSummary) -> Bool) in members.filter(test).count }
            let (stalls, saturated) = (count { $0.kind == .stall }, count { $0.kind == .saturated })
            let (busy, blocked) = (count { $0.state == .busy }, count { $0.state == .blocked })
            let heading = "target \(Self.shown(target)): \(Self.episodes(members.count)), "
                + "\(ReportFormat.seconds(members.reduce(0) { $0 + $1.durationMs } / 1000)) "
                + "(\(stalls) stall\(stalls == 1 ? "" : "s"), \(saturated) saturated; \(busy) busy, \(blocked) blocked)"
                + threshold(of: members)
            // The pool: one sentence per starvation, before its groups of alike stacks.
            let starved = target == TargetNames.pool ? starvations.flatMap { starvation in
                Self.wrap((captures.count > 1 ? "capture \(starvation.capture + 1): " : "") + starvation.sentence,
                    indent: "  ")
            } : []
            return [""] + Self.wrap(heading, indent: "  ") + starved
                + groups.filter { $0.target == target }.flatMap { [""] + section($0) }
        }
    }

    /// The cooperative pool's starvations among the selected episodes (``PoolStarvation``), in capture and start
    /// order.
    public var starvations: [PoolStarvation] { PoolStarvation.find(in: episodes) }

    /// `, threshold 20 ms` when some of `members` (one target's episodes) were watched with a threshold other than
    /// their capture's (the main queue's, in its heading): theirs, or `thresholds 20-250 ms` when they differ
    /// (several captures, or records that do not say). Empty otherwise.
    func threshold(of members: [EpisodeSummary]) -> String {
        let differs = members.contains { e in
            e.thresholdMs != captures[e.capture].process.map { Double($0.thresholdNs) / 1e6 }
        }
        let all = members.compactMap(\.thresholdMs)
        guard differs, let low = all.min(), let high = all.max() else { return "" }
        func ms(_ value: Double) -> String { ReportFormat.milliseconds(UInt64((value * 1e6).rounded())) }
        return low == high ? ", threshold \(ms(low))" : ", thresholds \(ms(low))-\(ms(high))"
    }

    /// `1 episode`, `2 episodes`.
    static func episodes(_ count: Int) -> String { count == 1 ? "1 episode" : "\(count) episodes" }
}
