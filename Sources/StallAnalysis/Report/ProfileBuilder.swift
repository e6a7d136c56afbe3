import StallFormat

/// Accumulates samples (root-first names with an app-code flag per frame, each with a weight: 1 for a capture's
/// sample, a stack's count for other profiles) and turns them into a ``SampleProfile``: shares, the heaviest
/// stack, app frames and hints. Weights are summed as Doubles: exact for integers up to 2^53.
struct ProfileBuilder {
    /// A sample share at or above which a hint is given about recursion or re-entry.
    static let loopShare = 0.5
    /// A share of samples without app code at or above which the report says the loop is in framework code.
    static let frameworkShare = 0.9
    /// App frames below this total share are left out.
    static let minimumAppShare = 0.01

    private var total = 0.0
    /// Weight per stack, with the stack's app flags (one hash of the whole stack per sample).
    private var stacks: [[String]: (count: Double, app: [Bool])] = [:]
    private var selfCounts: [String: Double] = [:]
    private var appCounts: [String: Double] = [:]
    private var appDepth: [String: Int] = [:]
    private var outermostApp: [String: Double] = [:]
    private var innermostApp: [String: Double] = [:]
    private var cycles: [[String]: Double] = [:]
    private var withoutApp = 0.0
    /// Weight of the samples whose stack was cut short (root frame `[truncated]`).
    private var truncated = 0.0

    /// Adds one sample of `weight` (default 1): `names` root first, `app[i]` true when `names[i]` is app code. An
    /// empty stack (folded input's ` 2` line) counts in the total only, as flamegraph.pl counts it.
    mutating func add(names: [String], app: [Bool], weight: Double = 1) {
        total += weight
        guard let leaf = names.last else { return }
        if names.first == TruncatedStack.rootFrame { truncated += weight }
        stacks[names, default: (0, app)].count += weight
        selfCounts[leaf, default: 0] += weight
        var lastIndex: [String: Int] = [:]  // also: the app names already counted in this sample
        lastIndex.reserveCapacity(names.count)
        var appSequence: [String] = []
        var cycle: [String]? = nil
        for (depth, name) in names.enumerated() where app[depth] {
            let previous = lastIndex.updateValue(appSequence.count, forKey: name)
            if previous == nil {
                appCounts[name, default: 0] += weight
                appDepth[name, default: 0] += depth
            }
            // Unresolved frames (`[image]`) all read alike: they prove no recursion.
            if cycle == nil, !name.hasPrefix("["), let previous {
                cycle = Array(appSequence[previous...]) + [name]
            }
            appSequence.append(name)
        }
        // The outermost app frame that names a function (not a closure or a thunk around it): what a loop across
        // run-loop turns keeps re-entering.
        if let first = appSequence.first(where: { !Self.isGlue($0) }) ?? appSequence.first {
            outermostApp[first, default: 0] += weight
        } else {
            withoutApp += weight
        }
        if let last = appSequence.last { innermostApp[last, default: 0] += weight }
        if let cycle { cycles[cycle, default: 0] += weight }
    }

    /// Closures, thunks and forwarders: frames that only carry a call to the function that matters.
    static func isGlue(_ name: String) -> Bool {
        ["closure #", "implicit closure #", "partial apply", "reabstraction thunk", "thunk for", "@objc "]
            .contains { name.hasPrefix($0) }
    }

    /// The heaviest stack: most samples, ties broken by the byte-smallest joined names.
    private var heaviest: (names: [String], count: Double)? {
        stacks.max { a, b in
            a.value.count != b.value.count
                ? a.value.count < b.value.count : a.key.joined(separator: ";") > b.key.joined(separator: ";")
        }.map { ($0.key, $0.value.count) }
    }

    /// What episodes with the same shape share: the heaviest stack's app frames, root first, each named once,
    /// or its three leaf-most frames when it has no app code.
    var fingerprint: String {
        guard let (names, _) = heaviest else { return "(no samples)" }
        let app = stacks[names]?.app ?? []
        var seen = Set<String>()
        let appNames = names.indices.filter { app[$0] && seen.insert(names[$0]).inserted }.map { names[$0] }
        return appNames.isEmpty ? names.suffix(3).joined(separator: " > ") : appNames.joined(separator: " > ")
    }

    /// The profile, with hints worded for an episode of `kind` in `state`; `kind` nil: a profile that is not a
    /// capture's (only the recursion and truncation hints apply), its weight called `weightName` in hints
    /// (`samples`, `the time`, `cycles`).
    func profile(kind: EpisodeKind?, state: StallState?, weightName: String = "samples") -> SampleProfile {
        let denominator = total > 0 ? total : 1
        let shares = { (counts: [String: Double]) in
            counts.map {
                FunctionShare(function: $0.key, samples: Self.whole($0.value), share: $0.value / denominator,
                              count: $0.value)
            }
        }
        let topSelf = shares(selfCounts)
            .sorted { ($0.count, $1.function) > ($1.count, $0.function) }
        let appFrames = shares(appCounts)
            .filter { $0.share >= Self.minimumAppShare }
            .sorted { a, b in
                if a.count != b.count { return a.count > b.count }
                let (depthA, depthB) = (appDepth[a.function] ?? 0, appDepth[b.function] ?? 0)
                return depthA != depthB ? depthA < depthB : a.function < b.function
            }
        let appSelf = shares(innermostApp)
            .filter { $0.share >= Self.minimumAppShare }
            .sorted { ($0.count, $1.function) > ($1.count, $0.function) }
        let noApp = total == 0 ? 0 : withoutApp / denominator
        return SampleProfile(
            analyzedSamples: Self.whole(total), heaviestStack: heaviest?.names ?? [],
            heaviestStackSamples: Self.whole(heaviest?.count ?? 0), topSelf: topSelf, appFrames: appFrames,
            appSelf: appSelf, noAppCodeShare: noApp,
            hints: hints(kind: kind, state: state, noApp: noApp, weightName: weightName),
            total: total, heaviestStackCount: heaviest?.count ?? 0)
    }

    /// `value` as an Int, rounded, saturating at Int's bounds (0 for NaN).
    static func whole(_ value: Double) -> Int {
        guard !value.isNaN else { return 0 }
        return value >= 9.2e18 ? Int.max : value <= -9.2e18 ? Int.min : Int(value.rounded())
    }

    private func hints(kind: EpisodeKind?, state: StallState?, noApp: Double, weightName: String) -> [ReportHint] {
        guard total > 0 else { return [] }
        let short = { (name: String) in ReportFormat.fit(name, width: 60) }
        let denominator = total
        let counted = weightName == "samples"
        var hints: [ReportHint] = []
        // The most common cycle, then the shortest, then the smallest names: never the dictionary's order.
        if let (cycle, count) = cycles.max(by: { a, b in
            a.value != b.value ? a.value < b.value
                : a.key.count != b.key.count ? a.key.count > b.key.count
                : a.key.joined(separator: "\n") > b.key.joined(separator: "\n")
        }),
            Double(cycles.values.reduce(0, +)) / denominator >= Self.loopShare
        {
            let share = ReportFormat.percentSpaced(cycles.values.reduce(0, +) / denominator)
            if cycle.count == 2 {
                hints.append(ReportHint(kind: "recursion", text: "recursion: \(short(cycle[0])) calls itself (in \(share) of \(weightName))"))
            } else {
                let this = counted ? "\(Self.whole(count)) samples" : ReportFormat.percentSpaced(count / denominator)
                hints.append(ReportHint(kind: "recursion", text: "recursion: the same \(kind == nil ? "" : "app ")frames "
                    + "keep cycling on the stack (in \(share) of \(weightName); \(this) show this cycle): "
                    + cycle.map(short).joined(separator: " -> ")))
            }
        }
        if kind == .saturated, let (frame, count) = outermostApp.max(by: { ($0.value, $1.key) < ($1.value, $0.key) }),
            Double(count) / denominator >= Self.loopShare
        {
            hints.append(ReportHint(kind: "run-loop-reentry", text: "loop across run-loop turns: the run loop keeps "
                + "re-entering \(short(frame)) (the outermost app frame in "
                + "\(ReportFormat.percentSpaced(Double(count) / denominator)) of samples); find what schedules it again"))
        }
        if kind != nil, noApp >= Self.frameworkShare {
            let what = state == .blocked
                ? "the wait is in framework code" : "the loop is in framework code; bisect the components"
            hints.append(ReportHint(
                kind: "no-app-code", text: "no app code on the stack in \(ReportFormat.percentSpaced(noApp)) of samples: \(what)"))
        }
        if truncated > 0 {
            let what = counted ? "\(Self.whole(truncated)) of \(Self.whole(total)) samples"
                : "\(ReportFormat.percentSpaced(truncated / denominator)) of \(weightName)"
            hints.append(ReportHint(kind: "truncated", text: "\(what) \(TruncatedStack.rootFrame): deeper than the "
                + "capture's frame limit, their outermost frames are missing"))
        }
        return hints
    }
}
