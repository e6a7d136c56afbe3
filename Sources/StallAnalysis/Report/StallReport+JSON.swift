import StallFormat

extension StallReport {
    /// The schema name written as `schema`.
    public static let jsonSchema = "stallprof.report/v2"

    /// The report as JSON (schema `stallprof.report/v2`, docs/REPORT.md), ending with a newline. Times in
    /// milliseconds (three decimals), shares in [0, 1] (four decimals), names as `stallprof fold` prints them.
    public func json() -> String {
        let document: JSONValue = .object([
            ("schema", .string(Self.jsonSchema)),
            ("captures", .array(captures.map(Self.json(capture:)))),
            ("episodes", .array(episodes.map(json(episode:)))),
            ("groups", .array(groups.map(json(group:)))),
            ("starvations", .array(starvations.map(json(starvation:)))),
            ("markers", .array(markers.map { Self.json(marker: $0, withCapture: true) })),
            ("summary", .object([
                ("stalls", .int(summary.stalls)), ("saturated", .int(summary.saturated)),
                ("p50Ms", .number(summary.p50Ms.map(Self.ms))), ("p90Ms", .number(summary.p90Ms.map(Self.ms))),
                ("maxMs", .number(summary.maxMs.map(Self.ms))),
                ("stallSecondsPerHour", .number(summary.stallSecondsPerHour.map { ReportFormat.rounded($0, 3) })),
                ("busy", .int(summary.busy)), ("blocked", .int(summary.blocked)),
                ("totalMs", .double(Self.ms(summary.totalMs))),
                ("recordedSeconds", .double(ReportFormat.rounded(summary.recordedSeconds, 3))),
            ])),
        ])
        return document.written() + "\n"
    }

    private static func ms(_ value: Double) -> Double { ReportFormat.rounded(value, 3) }
    private static func share(_ value: Double) -> Double { ReportFormat.rounded(min(max(value, 0), 1), 4) }

    private static func json(capture: CaptureSummary) -> JSONValue {
        let p = capture.process
        return .object([
            ("path", .string(capture.path)), ("pid", p.map { .int(Int($0.pid)) } ?? .null),
            ("executable", .text(p?.executable)), ("startWall", .text(p.map { ReportFormat.iso8601($0.startWallNs) })),
            ("thresholdMs", .number(p.map { Double($0.thresholdNs) / 1e6 })),
            ("sampleIntervalMs", .number(p.map { Double($0.sampleIntervalNs) / 1e6 })),
            ("closedCleanly", .bool(capture.closedCleanly)),
            ("recordedMs", .double(ms(Double(capture.recordedNs) / 1e6))),
            ("markersLost", .array(capture.markersLost.map {
                .object([("tid", .int(Int($0.tid))), ("count", .int(Int(clamping: $0.count)))])
            })),
            ("appModules", capture.appModules.map(JSONValue.strings) ?? .null),
            ("symbolication", capture.symbolication.map { record in
                .object([
                    ("at", .string(ReportFormat.iso8601(record.wallNs))),
                    ("images", .array(record.sources.map { source in
                        .object([
                            ("image", .string(source.image)),
                            ("symbols", source.symbols.isEmpty ? .null : .string(source.symbols)),
                            ("lines", source.lines.isEmpty ? .null : .string(source.lines)),
                        ])
                    })),
                ])
            } ?? .null),
        ])
    }

    /// `[{function, share, file, line, inlined}]`; `withModule`: also `module` (app frames).
    private static func json(shares: [FunctionShare], withModule: Bool = false) -> JSONValue {
        .array(shares.map {
            .object([("function", .string($0.function)), ("share", .double(share($0.share)))]
                + (withModule ? [("module", .text($0.module))] : []) + json(place: $0.place))
        })
    }

    /// `file`, `line` (`null` when not known) and `inlined` (`[{function, file, line}]`, outermost first) of a
    /// frame's place in its source.
    private static func json(place: SourcePlace?) -> [(String, JSONValue)] {
        let line = { (line: Int) -> JSONValue in line > 0 ? .int(line) : .null }
        return [
            ("file", .text(place?.file)), ("line", place.map { line($0.line) } ?? .null),
            ("inlined", .array((place?.inlined ?? []).map { frame in
                .object([("function", .string(frame.function)), ("file", .text(frame.file)), ("line", line(frame.line))])
            })),
        ]
    }

    /// A stack's frames (root first) with their places: `[{function, file, line, inlined}]`.
    private static func json(frames names: [String], places: [SourcePlace?]) -> JSONValue {
        .array(names.enumerated().map { index, function in
            .object([("function", .string(function))] + json(place: index < places.count ? places[index] : nil))
        })
    }

    private func json(episode e: EpisodeSummary) -> JSONValue {
        let profile = e.profile
        let topSelf = profile.topSelf.enumerated()
            .filter { $0.offset == 0 || $0.element.share >= ProfileBuilder.minimumAppShare }
        return .object([
            ("capture", .int(e.capture)), ("id", .int(Int(e.id))), ("kind", .string(e.kind.description)),
            ("state", .text(e.state?.description)), ("startMs", .double(Self.ms(e.startMs))),
            ("durationMs", .double(Self.ms(e.durationMs))), ("unfinished", .bool(e.unfinished)),
            ("cpuRatio", .number(e.cpuRatio.map(Self.share))), ("samples", .int(e.samples)),
            ("missedSamples", .int(e.missedSamples)), ("tid", .int(Int(e.tid))),
            ("heaviestStack", .strings(profile.heaviestStack)), ("heaviestStackFrames", Self.json(frames: profile.heaviestStack, places: profile.heaviestStackPlaces)),
            ("topSelf", Self.json(shares: topSelf.map(\.element))),
            ("appFrames", Self.json(shares: profile.appFrames, withModule: true)),
            ("blockedOn", e.blockedOn.map(Self.json(blockedOn:)) ?? .null),
            ("threads", e.blockedOn.map { Self.json(threads: $0.threads) } ?? .array([])),
            ("threadsTotal", .int(e.blockedOn?.threadsTotal ?? 0)),
            ("startWall", .text(e.startWallNs.map(ReportFormat.iso8601))),
            ("appSelf", Self.json(shares: profile.appSelf)),
            ("activeRatio", .number(e.activeRatio.map(Self.share))), ("pausedMs", .double(Self.ms(e.pausedMs))),
            ("runQueueWaitMs", .number(e.runQueueWaitMs.map(Self.ms))),
            ("analyzedSamples", .int(profile.analyzedSamples)),
            ("heaviestStackShare",
             .double(Self.share(Double(profile.heaviestStackSamples) / Double(max(1, profile.analyzedSamples))))),
            ("noAppCodeShare", .double(Self.share(profile.noAppCodeShare))),
            ("hints", Self.json(hints: profile.hints)), ("group", .int(e.group)),
            ("markers", .array(e.markers.map { Self.json(marker: $0, withCapture: false) })),
            ("memoryStacks", e.memoryStacks.map(Self.json(memoryStacks:)) ?? .null),
        ] + Self.json(turns: e.queueTurns) + Self.json(rateOf: e)
            + [("target", .string(e.target)), ("thresholdMs", .number(e.thresholdMs.map(Self.ms)))])
    }

    /// The sampling-rate keys of an episode (docs/REPORT.md, `samplesPerSecond`).
    private static func json(rateOf e: EpisodeSummary) -> [(String, JSONValue)] {
        let rate = { (value: Double) in ReportFormat.rounded(value, 3) }
        return [
            ("samplesPerSecond", .number(e.samplesPerSecond.map(rate))),
            ("askedSamplesPerSecond", .number(e.askedSamplesPerSecond.map(rate))),
            ("sampleRateLimit", .text(e.sampleRate?.limit.description)),
            ("tickMs", .number(e.sampleRate.flatMap { $0.tickNs > 0 ? Self.ms(Double($0.tickNs) / 1e6) : nil })),
        ]
    }

    /// The queue-turn keys of an episode (docs/REPORT.md, `mainQueueTurns`); every value `null` without turns.
    private static func json(turns t: QueueTurns?) -> [(String, JSONValue)] {
        let int: (Int?) -> JSONValue = { $0.map { .int($0) } ?? .null }
        return [
            ("mainQueueTurns", int(t?.turns)), ("medianTurnMs", .number(t?.medianMs.map(Self.ms))),
            ("longestTurnMs", .number(t?.longestMs.map(Self.ms))), ("turnIntervalMs", .number(t.map { Self.ms($0.intervalMs) })),
            ("turnRanIntervalMs", .number(t.map { Self.ms($0.ranIntervalMs) })),
            ("turnsReused", t.map { .bool($0.reused) } ?? .null), ("samplesInBlocks", int(t?.samples)),
            ("samplesSignalled", int(t?.signalled)),
        ]
    }

    /// `{samples, scanned, stopped: {noUnwindInfo, framePointer, unusable}}`.
    private static func json(memoryStacks m: MemoryStackCounts) -> JSONValue {
        .object([
            ("samples", .int(m.samples)), ("scanned", .int(m.scanned)),
            ("stopped", .object([
                ("noUnwindInfo", .int(m.noUnwindInfo)), ("framePointer", .int(m.framePointer)),
                ("unusable", .int(m.unusable)),
            ])),
        ])
    }

    /// Hints as `[{kind, text}]`; a `no-app-code` hint also has `module`.
    private static func json(hints: [ReportHint]) -> JSONValue {
        .array(hints.map {
            .object([("kind", .string($0.kind)), ("text", .string($0.text))]
                + ($0.kind == "no-app-code" ? [("module", .text($0.module))] : []))
        })
    }

    private static func json(blockedOn b: BlockedOnSummary) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("kind", .string(b.kind)), ("syscall", .text(b.syscall)),
            ("syscallNumber", b.syscallNumber.map(JSONValue.int) ?? .null),
            ("argument", .string("0x" + String(b.argument, radix: 16))), ("detail", .string(b.detail)),
        ]
        if b.ownerTid != nil {
            members += [
                ("ownerTid", b.ownerTid.map(JSONValue.int) ?? .null), ("ownerName", .string(b.ownerName)),
                ("ownerState", .text(b.ownerState)), ("ownerSyscall", .text(b.ownerSyscall)),
                ("ownerFrame", .text(b.ownerFrame)), ("ownerStack", .strings(b.ownerStack)),
                ("ownerStackFrames", Self.json(frames: b.ownerStack, places: b.ownerStackPlaces)),
                ("ownerStackSource", .text(b.ownerStackSource)), ("ownerStackTruncated", .bool(b.ownerStackTruncated)),
            ]
        }
        if b.kind == "dispatch-sync" { members.append(("queueLabel", .string(b.queueLabel))) }
        members.append(("waitsFor", .array(b.waitsFor.map { w in
            .object([("tid", .int(w.tid)), ("name", .string(w.name)), ("state", .string(w.state)),
                     ("certain", .bool(w.certain)), ("frame", .text(w.frame)), ("stack", .strings(w.stack)),
                     ("stackFrames", Self.json(frames: w.stack, places: w.stackPlaces))])
        })))
        if !b.deadlock.isEmpty {
            members.append(("deadlock", .object([("cycle", .array(b.deadlock.map { link in
                .object([("tid", .int(link.tid)), ("name", .string(link.name)),
                         ("holds", .string("0x" + String(link.holds, radix: 16))),
                         ("wants", .string("0x" + String(link.wants, radix: 16))), ("frame", .text(link.frame))])
            })), ("sentence", .text(b.deadlockSentence))])))
        }
        members.append(("sentence", .string(b.sentence)))
        return .object(members)
    }

    /// A blocked episode's snapshot (`threads`): each thread with its state, call, CPU during the episode, stack.
    private static func json(threads: [ThreadSummary]) -> JSONValue {
        .array(threads.map { t in
            .object([("tid", .int(t.tid)), ("name", .string(t.name)), ("state", .string(t.state)),
                     ("syscall", .text(t.syscall)), ("detail", .string(t.detail)), ("waitKind", .string(t.waitKind)),
                     ("cpuMs", .number(t.cpuMs.map(Self.ms))), ("why", .string(t.why)), ("frame", .text(t.frame)),
                     ("stack", .strings(t.stack)), ("stackFrames", Self.json(frames: t.stack, places: t.stackPlaces))])
        })
    }

    private func json(starvation s: PoolStarvation) -> JSONValue {
        .object([
            ("capture", .int(s.capture)),
            ("episodes", .array(s.episodes.map { .int(Int(episodes[$0].id)) })),
            ("startMs", .double(Self.ms(s.startMs))), ("durationMs", .double(Self.ms(s.durationMs))),
            ("threads", .int(s.threads)), ("blocked", .int(s.blocked)), ("busy", .int(s.busy)),
            ("wait", .text(s.wait)), ("under", .text(s.under)), ("blockedAlike", .int(s.blockedAlike)),
            ("busyIn", .text(s.busyIn)), ("busyAlike", .int(s.busyAlike)),
            ("sentence", .string(s.sentence)),
        ])
    }

    private func json(group: EpisodeGroup) -> JSONValue {
        let members = group.episodes.map { episodes[$0] }
        return .object([
            ("fingerprint", .string(group.fingerprint)), ("count", .int(members.count)),
            ("episodes", .array(members.map { .object([("capture", .int($0.capture)), ("id", .int(Int($0.id)))]) })),
            ("totalMs", .double(Self.ms(members.reduce(0) { $0 + $1.durationMs }))),
            ("maxMs", .double(Self.ms(members.map(\.durationMs).max() ?? 0))),
            ("topSelf", Self.json(shares: Array(group.profile.topSelf.prefix(options.topFunctions)))),
            ("appFrames", Self.json(shares: group.profile.appFrames, withModule: true)),
            ("appSelf", Self.json(shares: group.profile.appSelf)),
            ("hints", Self.json(hints: group.profile.hints)), ("target", .string(group.target)),
        ])
    }
}
