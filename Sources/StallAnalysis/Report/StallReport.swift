import StallFormat

/// Options of `stallprof report`. Every field documents its default.
public struct StallReportOptions: Sendable {
    /// How many functions the text lists per section. Default: 5.
    public var topFunctions = 5
    /// Which episodes and samples to describe (kind, state, numbers, window) and how names read. Default:
    /// ``StallCaptureImporter/Options/init()`` (everything, full demangled names).
    public var capture = StallCaptureImporter.Options()
    /// The Swift modules that are the app's code (`--app-module`, repeatable). Default: empty, meaning the module
    /// of the executable's `@main` entry point, else the module named after the executable when it defines
    /// symbols of it (top-level code), else every module (docs/REPORT.md, "App code").
    public var appModules: [String] = []

    /// Creates the default options.
    public init() {}
}

/// What captures say about their freezes, computed once: every selected episode with where its samples were
/// (self and total shares, app frames, hints, what it waited for), episodes grouped by stack shape, and
/// figures across them. ``text()`` and ``json()`` render it.
public struct StallReport: Sendable {
    /// The options used.
    public let options: StallReportOptions
    /// The captures, in the order given.
    public private(set) var captures: [CaptureSummary] = []
    /// Every selected episode, capture by capture, in the order they began.
    public private(set) var episodes: [EpisodeSummary] = []
    /// Episodes by target and fingerprint, largest group first (ties: the group whose first episode came first).
    public private(set) var groups: [EpisodeGroup] = []
    /// Figures across every selected episode.
    public private(set) var summary: ReportSummary
    /// Every app marker of every capture, capture by capture, by start time.
    public private(set) var markers: [MarkerSummary] = []
    /// Problems resolving names (a missing or rebuilt file), `capture: problem`, once per image.
    public private(set) var warnings: [String] = []

    /// Builds the report, resolving names from each capture's image map. Captures are analyzed in parallel (names
    /// resolved, samples collected: the costly part); episodes are then grouped in capture order.
    public init(captures input: [Capture], options: StallReportOptions = StallReportOptions()) {
        self.options = options
        let analyzed = Parallel.map(Array(input.enumerated())) { index, capture in
            CaptureAnalysis(capture, index: index, options: options)
        }.map { try! $0.get() }  // the analysis throws nothing
        typealias Accumulator = (
            target: String, key: String, builder: ProfileBuilder, episodes: [Int], kind: EpisodeKind, state: StallState?,
            signalMask: SignalMaskRecord?, signalled: Int, keyHints: [ReportHint], floodEntry: String?
        )
        var builders: [Accumulator] = []
        var groupIndex: [String: Int] = [:]
        for capture in analyzed {
            captures.append(capture.summary)
            markers += capture.markers
            for var episode in capture.episodes {
                // Groups never mix targets: alike stacks on two targets are two freezes.
                let target = episode.summary.target, groupKey = target + "\u{0}" + episode.key
                let group = groupIndex[groupKey] ?? builders.count
                if group == builders.count {
                    groupIndex[groupKey] = group
                    builders.append((target, episode.key, ProfileBuilder(), [], episode.summary.kind, episode.summary.state,
                                     episode.signalMask, 0, episode.keyHints, episode.floodEntry))
                }
                builders[group].signalled += episode.signalled
                builders[group].builder.addAppModules(capture.summary.appModules)
                for sample in episode.samples {
                    builders[group].builder.add(
                        names: sample.names, app: sample.app, modules: sample.modules, places: sample.places)
                }
                builders[group].episodes.append(episodes.count)
                episode.summary.group = group
                episodes.append(episode.summary)
            }
            warnings += capture.warnings
        }
        let order = builders.indices.sorted { (builders[$0].episodes.count, $1) > (builders[$1].episodes.count, $0) }
        var renumber = [Int](repeating: 0, count: builders.count)
        for (position, old) in order.enumerated() { renumber[old] = position }
        let selected = episodes
        groups = order.map { old in
            let entry = builders[old]
            var profile = entry.builder.profile(kind: entry.kind, state: entry.state)
            if let hint = ReportHint.signalBlocked(
                entry.signalMask, stacks: profile.analyzedSamples, signalled: entry.signalled)
            {
                profile.hints.insert(hint, at: 0)
            }
            profile.hints += entry.keyHints.map { hint in  // every episode of the group has them (its key says so)
                // A flood's count is the group's, over all its episodes.
                guard hint.kind == "flood", let turns = QueueTurns(summing: entry.episodes.compactMap { selected[$0].queueTurns })
                else { return hint }
                return turns.floodHint(entry: entry.floodEntry)
            }
            return EpisodeGroup(target: entry.target, fingerprint: entry.key, episodes: entry.episodes, profile: profile)
        }
        for index in episodes.indices { episodes[index].group = renumber[episodes[index].group] }
        summary = Self.summarize(episodes, recordedNs: captures.reduce(0) { $0 + $1.recordedNs })
    }

    /// One sample as the report keeps it: names root first, whether each is app code, its Swift module, and where
    /// in its source it was (empty: none known).
    struct CollectedSample: Sendable {
        var names: [String]
        var app: [Bool]
        var modules: [String?]
        var places: [SourcePlace?]
    }

    /// What one capture contributes, computed on its own (in parallel with the others).
    struct CaptureAnalysis: Sendable {
        /// One selected episode: its summary (group not yet known), grouping key and collected samples.
        struct Episode: Sendable {
            var summary: EpisodeSummary
            var key: String
            var samples: [CollectedSample]
            /// The thread's signal mask when it blocks the capture signal (the key says so too); nil otherwise.
            var signalMask: SignalMaskRecord?
            /// Collected samples the signal took (not read from the thread's memory).
            var signalled: Int
            /// Hints its key names, so every episode of its group has them: self-wait, flood.
            var keyHints: [ReportHint]
            /// A flood's block entry (``QueueTurns/blockEntry(rootFirst:)``), when the stacks show one.
            var floodEntry: String?
        }

        var summary: CaptureSummary
        var markers: [MarkerSummary]
        var episodes: [Episode] = []
        var warnings: [String]

        init(_ capture: Capture, index: Int, options: StallReportOptions) {
            summary = CaptureSummary(
                path: capture.source, process: capture.process, closedCleanly: capture.closedCleanly,
                recordedNs: StallReport.recordedNs(capture))
            summary.markersLost = capture.droppedMarkersByThread.map { ($0.key, $0.value) }
                .sorted { ($0.count, $1.tid) > ($1.count, $0.tid) }
            // One name per frame, without its line: the report gives each frame's place (its line, what was inlined
            // there) apart, and its app flags are per frame (--inline and --lines shape fold's names only).
            var names = options.capture.symbolizer
            (names.inlines, names.lines) = (false, false)
            let symbolizer = Symbolizer(capture: capture, options: names)
            let rule = AppCodeRule(capture: capture, appModules: options.appModules, lookup: names)
            summary.appModules = rule.appModules
            summary.symbolication = capture.symbolication
            let architecture = SyscallNames.architecture(of: capture)
            let captureMarkers = MarkerIndex(StallReport.markers(of: capture, index: index))
            markers = captureMarkers.markers
            for selected in options.capture.selection.episodes(of: capture) {
                let stall = selected.episode
                var builder = ProfileBuilder()
                builder.addAppModules(rule.appModules)
                var collected: [CollectedSample] = []
                var signalled = 0
                var blockEntries: [String: Int] = [:]
                for sample in selected.samples {
                    let frames = sample.frames
                    var (app, modules) = rule.judge(leafFirst: frames)
                    let names = TruncatedStack.names(symbolizer.rootFirstNames(leafFirst: frames), of: sample)
                    if names.count > app.count {  // `[truncated]` is no app code
                        app.insert(false, at: 0)
                        modules.insert(nil, at: 0)
                    }
                    // Where in its source each frame was; none with --inline (then names are more than frames).
                    var places = symbolizer.rootFirstPlaces(leafFirst: frames)
                    if !places.isEmpty, names.count == places.count + 1 { places.insert(nil, at: 0) }  // `[truncated]`
                    collected.append(CollectedSample(names: names, app: app, modules: modules, places: places))
                    if sample.flags.isSignalled { signalled += 1 }
                    if sample.turn != 0, let entry = QueueTurns.blockEntry(rootFirst: names) {
                        blockEntries[entry, default: 0] += 1
                    }
                    builder.add(names: names, app: app, modules: modules, places: places)
                }
                // What a busy episode's thread waited for in passing is not what froze it.
                let blockedOn = stall.blockedOn.flatMap { stall.state == .busy ? nil : $0 }.map {
                    BlockedOnSummary($0, stall: stall, symbolizer: symbolizer, rule: rule, architecture: architecture)
                }
                var key = "\(stall.kind) \(stall.state?.description ?? "unclassified"): \(builder.fingerprint)"
                if let blockedOn {
                    let owner = blockedOn.ownerFrame.map { "held in \($0)" }
                    key += "; waiting: "
                        + [blockedOn.kind, blockedOn.syscall, owner].compactMap { $0 }.joined(separator: " ")
                }
                // A thread that blocks the capture signal is never signalled: its episodes say so, apart.
                var profile = builder.profile(kind: stall.kind, state: stall.state)
                var keyHints: [ReportHint] = []
                var floodEntry: String?
                if let selfWait = blockedOn?.selfWaitHint {
                    keyHints.append(selfWait)
                    key += "; self-wait"
                }
                // Turns are the main queue's blocks: another target's thread runs none of them.
                let turns = stall.target == StallBeginRecord.mainTarget
                    ? QueueTurns(stall.samples, queueAnswered: stall.kind == .saturated) : nil
                if let turns, turns.isFlood {
                    floodEntry = blockEntries.max { ($0.value, $1.key) < ($1.value, $0.key) }?.key
                    keyHints.append(turns.floodHint(entry: floodEntry))
                    key += "; flood"
                }
                profile.hints += keyHints
                let signalHint = ReportHint.signalBlocked(stall.signalMask, stacks: collected.count, signalled: signalled)
                if let signalHint, let mask = stall.signalMask {
                    profile.hints.insert(signalHint, at: 0)
                    key += "; blocks \(SignalNames.name(mask.signal))"
                }
                var episode = StallReport.episode(
                    stall, capture: capture, index: index, profile: profile, blockedOn: blockedOn, turns: turns, group: 0)
                episode.markers = StallReport.markers(captureMarkers, around: episode)
                episodes.append(Episode(summary: episode, key: key, samples: collected,
                                        signalMask: signalHint == nil ? nil : stall.signalMask, signalled: signalled,
                                        keyHints: keyHints, floodEntry: floodEntry))
            }
            warnings = symbolizer.warnings.map { "\(capture.source): \($0)" }
        }
    }

    /// Recorded time: process start to the close record, or to the last time the file mentions.
    static func recordedNs(_ capture: Capture) -> UInt64 {
        guard let start = capture.process?.startMonotonicNs else { return 0 }
        var last = capture.closedAtNs ?? start
        if capture.closedAtNs == nil {
            for stall in capture.stalls {
                last = max(last, stall.begin.detectedNs, stall.end?.endNs ?? 0, stall.samples.last?.timestampNs ?? 0,
                           stall.blockedOn?.timestampNs ?? 0)
            }
        }
        return last > start ? last - start : 0
    }

    fileprivate static func episode(
        _ stall: Stall, capture: Capture, index: Int, profile: SampleProfile, blockedOn: BlockedOnSummary?,
        turns: QueueTurns?, group: Int
    ) -> EpisodeSummary {
        let origin = capture.originNs
        let offset = stall.begin.startNs &- min(origin, stall.begin.startNs)
        let clamp: (Double?) -> Double? = { $0.flatMap { $0.isFinite ? min(max($0, 0), 1) : nil } }
        var episode = EpisodeSummary(
            capture: index, id: stall.id, kind: stall.kind, state: stall.state, startMs: Double(offset) / 1e6,
            startWallNs: capture.process.flatMap { p in
                let (wall, overflow) = p.startWallNs.addingReportingOverflow(offset)
                return overflow ? nil : wall
            },
            durationMs: Double(stall.durationNs) / 1e6,
            unfinished: !stall.isFinished, cpuRatio: clamp(stall.cpuRatio), activeRatio: clamp(stall.activeRatio),
            samples: stall.samples.count, missedSamples: Int(stall.end?.missedCount ?? 0), tid: stall.begin.threadID,
            profile: profile, blockedOn: blockedOn, group: group)
        episode.target = stall.target
        // A record that does not say: the process record's is the main queue's, not another target's.
        let threshold = stall.thresholdNs ?? (stall.target == TargetNames.main ? capture.process?.thresholdNs : nil)
        episode.thresholdMs = threshold.map { Double($0) / 1e6 }
        episode.pausedMs = Double(stall.pausedNs) / 1e6
        episode.memoryStacks = MemoryStackCounts(stall.samples)
        episode.queueTurns = turns
        episode.runQueueWaitMs = stall.missedRunQueueNs.map { Double($0) / 1e6 }
        episode.samplesPerSecond = stall.samplesPerSecond
        episode.askedSamplesPerSecond = capture.process.flatMap { $0.sampleIntervalNs > 0 ? 1e9 / Double($0.sampleIntervalNs) : nil }
        episode.sampleRate = stall.end?.sampleRate
        return episode
    }

    private static func summarize(_ episodes: [EpisodeSummary], recordedNs: UInt64) -> ReportSummary {
        let durations = episodes.map(\.durationMs).sorted()
        func percentile(_ p: Double) -> Double? {
            guard !durations.isEmpty else { return nil }
            let rank = Int((p * Double(durations.count)).rounded(.up))
            return durations[min(max(rank, 1), durations.count) - 1]
        }
        let total = durations.reduce(0, +)
        let recordedSeconds = Double(recordedNs) / 1e9
        return ReportSummary(
            stalls: episodes.filter { $0.kind == .stall }.count,
            saturated: episodes.filter { $0.kind == .saturated }.count,
            busy: episodes.filter { $0.state == .busy }.count, blocked: episodes.filter { $0.state == .blocked }.count,
            p50Ms: percentile(0.5), p90Ms: percentile(0.9), maxMs: durations.last, totalMs: total,
            recordedSeconds: recordedSeconds,
            stallSecondsPerHour: recordedSeconds > 0 ? total / 1000 / recordedSeconds * 3600 : nil)
    }
}
