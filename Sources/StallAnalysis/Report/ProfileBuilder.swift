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
    /// Every name met, by number (names are numbered once; stacks are kept as numbers), and what is counted for it.
    private var texts: [String] = []
    private var names: [Name] = []
    private var numbers: [String: Int32] = [:]
    /// The stacks met, as nodes of one tree; per node: the weight of the stack ending there, and whether one did.
    private var stacks = StackTree()
    private var stackCounts: [Double] = [0]
    private var isStack: [Bool] = [false]
    /// The nodes where a stack ended, in order, and the app flags each came with first (none: all app code).
    private var stackEnds: [Int32] = []
    private var stackApp: [Int32: [Bool]] = [:]
    /// The heaviest of the stacks added as distinct (kept out of the tree), with its app flags.
    private var heaviestDistinct: Stack?
    private var cycles: [[Int32]: Double] = [:]
    private var withoutApp = 0.0
    /// Weight of the samples whose stack was cut short (root frame `[truncated]`).
    private var truncated = 0.0
    /// Samples added so far (each name remembers the last sample it was an app frame of).
    private var sampleCount = 0
    /// The app frames of the sample being added, root first.
    private var appSequence: [Int32] = []
    /// Where the samples without app code spend their time, by library module (neither the app's nor the system's).
    private var libraries = LibraryTally()
    /// Where in their source the frames were, when the samples said (captures whose images have DWARF).
    private var sourcePlaces = SourceTally()
    /// The app's modules (``AppCodeRule/appModules``) of every capture whose samples were added, sorted; nil when
    /// none told them apart (every module counted as the app's).
    private(set) var appModules: [String]?

    /// What is counted per name. The fields every frame of every sample touches (``Visit``) are kept apart, in
    /// 24 bytes a name, so a profile of many names stays in the caches.
    private struct Name {
        /// As a leaf; nil when it never was one.
        var selfCount: Double?
        /// As the outermost app frame; nil when it never was.
        var outermost: Double?
        /// As the innermost app frame; nil when it never was.
        var innermost: Double?
        var isGlue: Bool
        /// The Swift module, when a sample gave one (``AppCodeRule/Frame/module``).
        var module: String? = nil
        /// An unresolved frame (`[image]`): they all read alike, and prove no recursion.
        var isUnresolved: Bool
    }
    private var visits: [Visit] = []

    /// A name as an app frame: its weight, once per sample, and whether it ever was one; its depths summed (the
    /// first in each sample); the last sample it was in and its last position among that sample's app frames.
    private struct Visit {
        var appCount = 0.0
        var appDepth = 0
        var sample = -1
        var position: Int32 = 0
        var isApp = false
    }

    /// The number of `name`, given when it is new.
    mutating func number(of name: String) -> Int32 {
        if let known = numbers[name] { return known }
        texts.append(name)
        names.append(Name(isGlue: Self.isGlue(name), isUnresolved: name.hasPrefix("[")))
        visits.append(Visit())
        numbers[name] = Int32(names.count - 1)
        return Int32(names.count - 1)
    }

    /// How many names were met.
    var nameCount: Int { texts.count }

    /// The number of `name` when it was met; nil otherwise.
    func existingNumber(of name: String) -> Int32? { numbers[name] }

    /// The name numbered `number`.
    func name(_ number: Int32) -> String { texts[Int(number)] }

    /// Adds one sample of `weight` (default 1): `names` root first, `app[i]` true when `names[i]` is app code,
    /// `modules[i]` its Swift module (nil: unknown or none), `places[i]` where in its source it was (nil: not
    /// known; the array empty: none known). An empty stack (folded input's ` 2` line) counts in the total only, as
    /// flamegraph.pl counts it.
    mutating func add(
        names: [String], app: [Bool], modules: [String?]? = nil, places: [SourcePlace?] = [], weight: Double = 1
    ) {
        add(frames: names.map { number(of: $0) }, app: app, modules: modules, weight: weight, places: places)
    }

    /// Takes `modules` (a capture's ``AppCodeRule/appModules``) among the app's modules; nil adds none.
    mutating func addAppModules(_ modules: [String]?) {
        guard let modules else { return }
        appModules = Array(Set(modules).union(appModules ?? [])).sorted()
    }

    /// Adds one sample of `weight`: `frames` root first, numbers from ``number(of:)``; `app[i]` true when frame `i`
    /// is app code (nil: every frame is), `modules[i]` its Swift module. `distinct`: the caller knows no other
    /// sample has these frames (a folded file's stacks, when no two names are one): the stack is not looked up,
    /// only weighed against the heaviest.
    mutating func add(
        frames: [Int32], app: [Bool]?, modules: [String?]? = nil, weight: Double, distinct: Bool = false,
        places: [SourcePlace?] = []
    ) {
        total += weight
        guard let leaf = frames.last else { return }
        if texts[Int(frames[0])] == TruncatedStack.rootFrame { truncated += weight }
        if distinct {
            let stack = Stack(frames: frames, count: weight, app: app)
            if let best = heaviestDistinct, best.count == weight, best.joined == nil {
                let spelled = joined(best)  // ties are common (counts of 1): the best is spelled out once
                heaviestDistinct?.joined = spelled
            }
            if heaviestDistinct.map({ isLighter($0, than: stack) }) ?? true { heaviestDistinct = stack }
        } else {
            let node = addToTree(frames, app: app, weight: weight)
            if !places.isEmpty { sourcePlaces.add(frames: frames, places: places, node: node, weight: weight) }
        }
        names[Int(leaf)].selfCount = (names[Int(leaf)].selfCount ?? 0) + weight
        sampleCount += 1
        appSequence.removeAll(keepingCapacity: true)
        var cycle: [Int32]? = nil
        for (depth, frame) in frames.enumerated() where app?[depth] ?? true {
            let index = Int(frame)
            let previous = visits[index].sample == sampleCount ? Int(visits[index].position) : nil
            visits[index].sample = sampleCount
            visits[index].position = Int32(truncatingIfNeeded: appSequence.count)
            if previous == nil {
                visits[index].appCount += weight
                visits[index].appDepth += depth
                visits[index].isApp = true
            }
            if cycle == nil, let previous, !names[index].isUnresolved {
                cycle = Array(appSequence[previous...]) + [frame]
            }
            appSequence.append(frame)
        }
        // The outermost app frame that names a function (not a closure or a thunk around it): what a loop across
        // run-loop turns keeps re-entering.
        if let first = appSequence.first(where: { !names[Int($0)].isGlue }) ?? appSequence.first {
            names[Int(first)].outermost = (names[Int(first)].outermost ?? 0) + weight
        } else {
            withoutApp += weight
            if let modules { libraries.add(frames: frames, modules: modules, weight: weight) }
        }
        if let modules {
            for (depth, module) in modules.enumerated() where module != nil && names[Int(frames[depth])].module == nil {
                names[Int(frames[depth])].module = module
            }
        }
        if let last = appSequence.last { names[Int(last)].innermost = (names[Int(last)].innermost ?? 0) + weight }
        if let cycle { cycles[cycle, default: 0] += weight }
    }

    /// Adds `weight` to the stack `frames` in the tree (its first app flags kept); returns its node.
    private mutating func addToTree(_ frames: [Int32], app: [Bool]?, weight: Double) -> Int32 {
        let node = stacks.node(for: frames)
        if stackCounts.count < stacks.nodeCount {
            stackCounts += repeatElement(0, count: stacks.nodeCount - stackCounts.count)
            isStack += repeatElement(false, count: stacks.nodeCount - isStack.count)
        }
        if !isStack[Int(node)] {
            isStack[Int(node)] = true
            stackEnds.append(node)
            if let app { stackApp[node] = app }
        }
        stackCounts[Int(node)] += weight
        return node
    }

    /// Closures, thunks and forwarders: frames that only carry a call to the function that matters.
    static func isGlue(_ name: String) -> Bool {
        ["closure #", "implicit closure #", "partial apply", "reabstraction thunk", "thunk for", "@objc "]
            .contains { name.hasPrefix($0) }
    }

    /// `frames` spelled out.
    private func text(_ frames: [Int32]) -> [String] { frames.map { texts[Int($0)] } }

    /// A stack with its weight and app flags (nil: all app code).
    private struct Stack {
        var frames: [Int32]
        var count: Double
        var app: [Bool]?
        /// Its node in the tree; nil for a stack added as distinct.
        var node: Int32? = nil
        /// The names joined by `;`, once a tie needed them.
        var joined: String? = nil
    }

    /// The order of heaviness: fewer samples, then (ties) the byte-larger joined names.
    private func isLighter(_ a: Stack, than b: Stack) -> Bool {
        a.count != b.count ? a.count < b.count : joined(a) > joined(b)
    }

    /// `stack`'s names joined by `;`.
    private func joined(_ stack: Stack) -> String { stack.joined ?? text(stack.frames).joined(separator: ";") }

    /// The heaviest stack: most samples, ties broken by the byte-smallest joined names.
    private var heaviest: Stack? {
        let inTree = stackEnds.map {
            Stack(frames: stacks.frames(of: $0), count: stackCounts[Int($0)], app: stackApp[$0], node: $0)
        }
        return (inTree + [heaviestDistinct].compactMap { $0 }).max(by: isLighter)
    }

    /// What episodes with the same shape share: the heaviest stack's app frames, root first, each named once,
    /// or its three leaf-most frames when it has no app code.
    var fingerprint: String {
        guard let heaviest else { return "(no samples)" }
        let names = text(heaviest.frames)
        let app = heaviest.app ?? Array(repeating: true, count: names.count)
        var seen = Set<String>()
        let appNames = names.indices.filter { app[$0] && seen.insert(names[$0]).inserted }.map { names[$0] }
        return appNames.isEmpty ? names.suffix(3).joined(separator: " > ") : appNames.joined(separator: " > ")
    }

    /// The profile, with hints worded for an episode of `kind` in `state`; `kind` nil: a profile that is not a
    /// capture's (only the recursion and truncation hints apply), its weight called `weightName` in hints
    /// (`samples`, `the time`, `cycles`).
    func profile(kind: EpisodeKind?, state: StallState?, weightName: String = "samples") -> SampleProfile {
        let denominator = total > 0 ? total : 1
        let share = { (number: Int, value: Double, asLeaf: Bool) in
            FunctionShare(function: texts[number], samples: Self.whole(value), share: value / denominator, count: value,
                          module: names[number].module, place: sourcePlaces.place(of: Int32(number), asLeaf: asLeaf))
        }
        let topSelf = names.indices.compactMap { number in names[number].selfCount.map { share(number, $0, true) } }
            .sorted { ($0.count, $1.function) > ($1.count, $0.function) }
        let appFrames = names.indices
            .compactMap { number in
                visits[number].isApp ? (share: share(number, visits[number].appCount, false), depth: visits[number].appDepth) : nil
            }
            .filter { $0.share.share >= Self.minimumAppShare }
            .sorted { a, b in
                if a.share.count != b.share.count { return a.share.count > b.share.count }
                return a.depth != b.depth ? a.depth < b.depth : a.share.function < b.share.function
            }
            .map(\.share)
        let appSelf = names.indices.compactMap { number in names[number].innermost.map { share(number, $0, false) } }
            .filter { $0.share >= Self.minimumAppShare }
            .sorted { ($0.count, $1.function) > ($1.count, $0.function) }
        let noApp = total == 0 ? 0 : withoutApp / denominator
        let heaviest = heaviest
        return SampleProfile(
            analyzedSamples: Self.whole(total), heaviestStack: heaviest.map { text($0.frames) } ?? [],
            heaviestStackSamples: Self.whole(heaviest?.count ?? 0), topSelf: topSelf, appFrames: appFrames,
            appSelf: appSelf, noAppCodeShare: noApp,
            hints: hints(kind: kind, state: state, noApp: noApp, weightName: weightName),
            total: total, heaviestStackCount: heaviest?.count ?? 0,
            heaviestStackPlaces: heaviest?.node.map(sourcePlaces.places(ofStack:)) ?? [])
    }

    /// `value` as an Int, rounded, saturating at Int's bounds (0 for NaN).
    static func whole(_ value: Double) -> Int {
        guard !value.isNaN else { return 0 }
        return value >= 9.2e18 ? Int.max : value <= -9.2e18 ? Int.min : Int(value.rounded())
    }

    /// What the hints are worded from: the most common cycle (then the shortest, then the smallest names: never
    /// the dictionary's order), the outermost app frame with the most weight, where samples without app code went.
    private func hints(kind: EpisodeKind?, state: StallState?, noApp: Double, weightName: String) -> [ReportHint] {
        guard total > 0 else { return [] }
        let cycle = cycles.map { (frames: text($0.key), weight: $0.value) }.max { a, b -> Bool in
            if a.weight != b.weight { return a.weight < b.weight }
            if a.frames.count != b.frames.count { return a.frames.count > b.frames.count }
            return a.frames.joined(separator: "\n") > b.frames.joined(separator: "\n")
        }
        let outermost = names.indices.compactMap { number in names[number].outermost.map { (frame: texts[number], weight: $0) } }
            .max { ($0.weight, $1.frame) < ($1.weight, $0.frame) }
        return ReportHint.profileHints(HintFacts(
            kind: kind, state: state, weightName: weightName, total: total, cycle: cycle,
            cycleWeight: cycles.values.reduce(0, +), outermost: outermost, noApp: noApp, appModules: appModules,
            library: libraries.heaviest(named: name), truncated: truncated))
    }
}
