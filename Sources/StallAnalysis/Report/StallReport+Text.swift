import StallFormat

extension StallReport {
    /// The text width every line fits in.
    public static let textWidth = 80
    /// Episodes listed in a capture's table; the JSON lists every one.
    public static let tableRows = 40

    /// The report as text that fits 80 columns: each capture with a table of its episodes (wall-clock start in
    /// UTC, kind, state, duration, active and CPU shares, samples), figures across them, then one section per
    /// group of alike episodes: top self functions, app frames on the stack, hints and what it waited for. With
    /// episodes of watched targets other than the main queue, tables and sections come target by target
    /// (``sections(_:)``).
    public func text() -> String {
        var lines: [String] = []
        for (index, capture) in captures.enumerated() {
            if index > 0 { lines.append("") }
            lines += header(capture)
            guard episodes.contains(where: { $0.capture == index }) else { continue }
            lines += tables(capture: index, table)
        }
        lines.append("")
        lines += totals()
        lines += sections(section)
        return lines.map(Self.printable).joined(separator: "\n") + "\n"
    }

    /// The table of `rows`, episodes of one capture: at most ``tableRows`` of them.
    private func table(_ rows: [EpisodeSummary]) -> [String] {
        var table = [["#", "start (UTC)", "kind", "state", "duration", "active", "cpu", "samples", "missed"]]
        for e in rows.prefix(Self.tableRows) {
            table.append([
                "\(e.id)" + (e.unfinished ? "*" : ""),
                e.startWallNs.map(ReportFormat.clock) ?? "+" + ReportFormat.seconds(e.startMs / 1000),
                e.kind.description, e.state?.description ?? "?", ReportFormat.seconds(e.durationMs / 1000),
                ReportFormat.percent(e.activeRatio), ReportFormat.percent(e.cpuRatio), "\(e.samples)",
                e.unfinished ? "-" : "\(e.missedSamples)",
            ])
        }
        var lines = Self.columns(table)
        if rows.count > Self.tableRows {
            lines.append("(\(rows.count - Self.tableRows) more episodes; --json lists every one)")
        }
        if rows.contains(where: \.unfinished) { lines.append("* unfinished: the file ends during the episode") }
        return lines
    }

    /// `line` with every character that holds a control character (ESC, CR, LF, DEL, C1) shown as `?`, one
    /// column each: thread names, details and symbol names come from files, and a terminal must not act on them.
    static func printable(_ line: String) -> String {
        let isControl = { (scalar: Unicode.Scalar) in scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) }
        guard line.unicodeScalars.contains(where: isControl) else { return line }
        return String(line.map { $0.unicodeScalars.contains(where: isControl) ? "?" : $0 })
    }

    private func header(_ capture: CaptureSummary) -> [String] {
        guard let p = capture.process else { return ["capture \(capture.path): no process record"] }
        var lines = ["capture " + ReportFormat.fit(capture.path, width: Self.textWidth - 8)]
        let started = "\(ReportFormat.date(p.startWallNs)) \(ReportFormat.clock(p.startWallNs)) UTC"
        lines.append("  pid \(p.pid), started \(started)")
        lines.append("  " + ReportFormat.fit(p.executable, width: Self.textWidth - 2))
        lines += Self.wrap("threshold \(ReportFormat.milliseconds(p.thresholdNs)), sample interval "
            + "\(ReportFormat.milliseconds(p.sampleIntervalNs)), recorded \(ReportFormat.seconds(capture.recordedNs)), "
            + (capture.closedCleanly ? "closed cleanly" : "not closed (the process was killed or crashed)"),
            first: "  ", indent: "  ")
        if let modules = capture.appModules {
            lines += Self.wrap("app code: module\(modules.count == 1 ? "" : "s") " + modules.joined(separator: ", "),
                               first: "  ", indent: "    ")
        }
        if let symbolication = capture.symbolication { lines += Self.symbolicated(symbolication) }
        if !capture.markersLost.isEmpty {
            let lost = capture.markersLost.prefix(4).map { entry in
                "\(entry.count) of " + (entry.tid == 0 ? "threads without a ring of their own" : "thread \(entry.tid)")
            }.joined(separator: ", ") + (capture.markersLost.count > 4 ? ", ..." : "")
            lines += Self.wrap("app markers lost (marked faster than the watchdog drained them): " + lost,
                               first: "  ", indent: "    ")
        }
        return lines
    }

    /// `symbolicated 2026-12-05 18:10:00 UTC: names from stall-demo.debug, libc.so.6; lines from
    /// stall-demo.debug; none for libfoo.so`, wrapped: the files by name, each once.
    static func symbolicated(_ record: SymbolicationRecord) -> [String] {
        let base = { (path: String) in path.split(separator: "/").last.map(String.init) ?? path }
        // A debug file found by build-id is named for its image: its own name is the build-id.
        let label = { (image: String, file: String) in
            file.contains("/.build-id/") ? base(image) + " (debug file)"
                : file.hasPrefix("(") ? base(image) + " " + file : base(file)
        }
        func names(_ labels: [String]) -> String {
            var seen = Set<String>()
            return labels.filter { seen.insert($0).inserted }.joined(separator: ", ")
        }
        let symbols = record.sources.filter { !$0.symbols.isEmpty }.map { label($0.image, $0.symbols) }
        let lines = record.sources.filter { !$0.lines.isEmpty }.map { label($0.image, $0.lines) }
        let none = record.sources.filter(\.symbols.isEmpty).map { base($0.image) }
        let text = "symbolicated \(ReportFormat.date(record.wallNs)) \(ReportFormat.clock(record.wallNs)) UTC: "
            + (symbols.isEmpty ? "no names" : "names from " + names(symbols)) + "; "
            + (lines.isEmpty ? "no lines" : "lines from " + names(lines))
            + (none.isEmpty ? "" : "; nothing for " + names(none))
        return wrap(text, first: "  ", indent: "    ")
    }

    private func totals() -> [String] {
        let s = summary
        let count = episodes.count
        var lines = Self.wrap("\(count) episode\(count == 1 ? "" : "s"): \(s.stalls) stall\(s.stalls == 1 ? "" : "s"), "
            + "\(s.saturated) saturated (\(s.busy) busy, \(s.blocked) blocked), "
            + "\(ReportFormat.seconds(s.totalMs / 1000)) frozen in all", indent: "  ")
        if let p50 = s.p50Ms, let p90 = s.p90Ms, let max = s.maxMs {
            lines.append("durations: p50 \(ReportFormat.seconds(p50 / 1000)), p90 \(ReportFormat.seconds(p90 / 1000)), "
                + "max \(ReportFormat.seconds(max / 1000))")
        }
        if let rate = s.stallSecondsPerHour {
            lines.append("hang rate: \(Self.oneDecimal(rate)) s frozen per hour of recorded time "
                + "(\(ReportFormat.seconds(s.recordedSeconds)) recorded)")
        }
        if groups.count < count { lines.append("\(count) episodes in \(groups.count) groups of alike stacks") }
        return lines
    }

    private func section(_ group: EpisodeGroup) -> [String] {
        let members = group.episodes.map { episodes[$0] }
        guard let first = members.first else { return [] }
        let profile = group.profile
        var heading: String
        if members.count == 1 {
            heading = "\(label(first)) (\(first.state?.description ?? "unclassified"), "
                + "\(ReportFormat.seconds(first.durationMs / 1000))"
                + (first.startWallNs.map { " at " + ReportFormat.clock($0) + " UTC" } ?? "")
                + (first.pausedMs > 0 ? ", the process stopped " + ReportFormat.seconds(first.pausedMs / 1000) + " more" : "")
                + ", thread \(first.tid)): " + Self.samples(profile.analyzedSamples)
        } else {
            let names = members.prefix(4).map { label($0, target: false) }.joined(separator: ", ")
                + (members.count > 4 ? " and \(members.count - 4) more" : "")
            heading = "\(members.count) alike \(first.kind == .stall ? "stalls" : "saturated episodes")"
                + Self.on(group.target) + " "
                + "(\(first.state?.description ?? "unclassified"), "
                + "\(ReportFormat.seconds(members.reduce(0) { $0 + $1.durationMs } / 1000)) "
                + "in all, max \(ReportFormat.seconds((members.map(\.durationMs).max() ?? 0) / 1000))): \(names); "
                + Self.samples(profile.analyzedSamples)
        }
        var lines = Self.wrap(heading, indent: "  ") + SamplingShortfall.lines(members) + missed(members)
        if let turns = QueueTurns(summing: members.compactMap(\.queueTurns)) {
            lines += Self.wrap(turns.line, first: "  ", indent: "    ")
        }
        if let line = MemoryStackCounts(summing: members.compactMap(\.memoryStacks))?.line {
            lines += Self.wrap(line, first: "  ", indent: "    ")
        }
        let blocked = (members.lazy.compactMap(\.blockedOn).first.map(blockedLines) ?? []) + timelines(members)
        let hints = profile.hints.flatMap { Self.wrap("hint: " + $0.text, first: "  ", indent: "    ") }
        guard profile.analyzedSamples > 0 else { return lines + ["  no samples with a stack"] + hints + blocked }
        lines.append("  top self functions")
        lines += shareRows(profile.topSelf.prefix(options.topFunctions))
        lines.append("  app frames on the stack (total: anywhere on it; inner: nearest the leaf)")
        let appLimit = options.topFunctions + 5
        let inner = Dictionary(profile.appSelf.map { ($0.function, $0.share) }, uniquingKeysWith: max)
        lines.append(profile.appFrames.isEmpty ? "    (none)" : "    total  inner  function")
        lines += profile.appFrames.prefix(appLimit).flatMap { share in
            let cells = [ReportFormat.percent(share.share), ReportFormat.percent(inner[share.function] ?? 0)]
            let prefix = "    " + cells.map { $0 + String(repeating: " ", count: max(1, 7 - $0.count)) }.joined()
            return Self.row(prefix, share)
        }
        let more = profile.appFrames.count - appLimit
        if more > 0 { lines.append("    (\(more) more in --json)") }
        return lines + hints + blocked
    }

    /// "missed: the thread waited 0.700 s for a CPU (12 samples)" when samples of the episodes were missed.
    private func missed(_ members: [EpisodeSummary]) -> [String] {
        let count = members.reduce(0) { $0 + $1.missedSamples }
        guard count > 0 else { return [] }
        let samples = count == 1 ? "1 sample" : "\(count) samples"
        let waits = members.compactMap(\.runQueueWaitMs)
        let wait = waits.reduce(0, +)
        guard waits.count == members.count, wait >= 1 else {
            return ["  missed: \(samples) (the thread did not answer in time)"]
        }
        return ["  missed: the thread waited \(ReportFormat.seconds(wait / 1000)) for a CPU (\(samples))"]
    }

    /// `prefix` and a share's function, fitted to the text's width, ending with the line of it most of its samples
    /// were at, when known: `BusyWork.burn(until:) at Workloads.swift:70` (for code inlined into it, the line of the
    /// call; the inlined frames are in --json); on a row of its own below, under the function, when the two do not fit
    /// on one.
    private static func row(_ prefix: String, _ share: FunctionShare) -> [String] {
        let function = prefix + ReportFormat.fit(share.function, width: textWidth - prefix.count)
        guard let location = share.place?.shortLocation else { return [function] }
        let suffix = " at " + location
        if function.columns + suffix.count <= textWidth { return [function + suffix] }
        return [function, String(repeating: " ", count: prefix.count) + "at " + location]
    }

    private func shareRows(_ shares: some Collection<FunctionShare>) -> [String] {
        shares.flatMap { share in
            let cell = ReportFormat.percent(share.share)
            return Self.row("    " + cell + String(repeating: " ", count: max(1, 6 - cell.count)), share)
        }
    }

    /// `1 sample`, `2 samples`.
    static func samples(_ count: Int) -> String { count == 1 ? "1 sample" : "\(count) samples" }

    private func blockedLines(_ b: BlockedOnSummary) -> [String] {
        let sentence = b.sentence(naming: { ReportFormat.fit($0, width: Self.textWidth - 10) })
        var lines = Self.wrap("blocked: " + sentence, first: "  ", indent: "    ")
        if let deadlock = b.deadlockSentence {
            lines += Self.wrap(deadlock, first: "    ", indent: "      ")
            for link in b.deadlock {
                lines.append("      " + ReportFormat.fit("\(link.name) [\(link.tid)] in ", then: link.frame ?? "?", width: Self.textWidth - 6))
            }
        }
        if !b.ownerStack.isEmpty {
            let shown = b.ownerStack.suffix(8)
            let via = b.ownerStackSource.map { ", taken from \($0 == "signal" ? "a signal" : "its stack memory")" } ?? ""
            lines.append("    owner's stack, leaf last (\(shown.count) of \(b.ownerStack.count) frames\(via)):")
            if shown.count < b.ownerStack.count { lines.append("      ...") }
            lines += shown.map { "      " + ReportFormat.fit($0, width: Self.textWidth - 6) }
        }
        let candidates = b.waitsFor.filter { !$0.certain }
        if !candidates.isEmpty {
            lines.append("    candidates (not certain), best first:")
            lines += candidates.map {
                "      " + ReportFormat.fit("\($0.name.isEmpty ? "thread" : $0.name) [\($0.tid)] \($0.state), in ",
                                         then: $0.frame ?? "?", width: Self.textWidth - 6)
            }
        }
        return lines + threadLines(b)
    }

    /// The snapshot: the threads that matter, one line each, the rest counted.
    private func threadLines(_ b: BlockedOnSummary) -> [String] {
        guard !b.threads.isEmpty else { return [] }
        let shown = b.threads.filter { !$0.why.isEmpty }.prefix(12)
        var lines = ["    threads (\(b.threadsTotal) in all; those that matter first):"]
        for thread in shown {
            let cpu = thread.cpuMs.map { ", \(ReportFormat.milliseconds(UInt64(max(0, $0) * 1e6))) CPU" } ?? ""
            // Futex waits by their kind (the address is in the JSON); calls on descriptors and sleeps by their detail.
            let futexWaits: Set<String> = ["mutex", "dispatch-sync", "join", "rwlock", "semaphore", "group", "condition", "futex"]
            let wait = futexWaits.contains(thread.waitKind) ? "\(thread.waitKind) wait" : thread.detail
            let line = "\(thread.name.isEmpty ? "thread" : thread.name) [\(thread.tid)] \(thread.why): \(thread.state) "
                + wait + cpu + (thread.frame == nil ? "" : ", in ")
            lines.append("      " + ReportFormat.fit(line, then: thread.frame ?? "", width: Self.textWidth - 6))
        }
        let rest = max(0, b.threadsTotal - shown.count)
        if rest > 0 { lines.append("      and \(rest) more thread\(rest == 1 ? "" : "s") (--json lists each)") }
        return lines
    }

    private static func oneDecimal(_ value: Double) -> String {
        // A corrupt capture (an episode ending long after the close record) can give any finite rate.
        let scaled = (value * 10).rounded()
        guard scaled.isFinite, abs(scaled) < 1e15 else { return "\(value.rounded())" }
        let tenths = Int(scaled)
        return "\(tenths / 10).\(tenths % 10)"
    }

    /// `text` broken at spaces into lines of at most 80 columns: the first line starts with `first`, the
    /// others with `indent`; a word longer than a line is cut to fit.
    static func wrap(_ text: String, first: String = "", indent: String) -> [String] {
        var lines: [String] = [], line = first, lineHasWord = false
        // "97 %" stays on one line.
        for glued in text.replacingAll(" %", by: "\u{A0}%").split(separator: " ") {
            let word = String(glued).replacingAll("\u{A0}", by: " ")
            let room = textWidth - (lineHasWord ? line.columns + 1 : line.columns)
            if lineHasWord && word.columns > room {
                lines.append(line)
                line = indent
                lineHasWord = false
            }
            let fitted = ReportFormat.fit(word, width: textWidth - line.columns)
            line += (lineHasWord ? " " : "") + fitted
            lineHasWord = true
        }
        lines.append(line)
        return lines
    }

    /// Left-aligned columns separated by two spaces; the last column is not padded.
    static func columns(_ rows: [[String]]) -> [String] {
        guard let width = rows.first?.count else { return [] }
        let widths = (0..<width).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { index, cell in
                index == width - 1 ? cell : cell + String(repeating: " ", count: widths[index] - cell.count)
            }.joined(separator: "  ")
        }
    }
}
