/// The state of one perf script input: stackcollapse-perf.pl's main loop.
struct PerfFoldState {
    typealias Bytes = UnsafeBufferPointer<UInt8>

    let options: PerfScriptImporter.Options
    let rules: PerfFrameRules
    /// The process frame of the current event (`$pname`); nil between events.
    var pname: [UInt8]? = nil
    /// True when `pname` starts with `java` (Java names lose their `L` prefix).
    var java = false
    /// True while the lines of a filtered-out event are skipped.
    var skipping = false
    /// The weight of the current event.
    var period = FoldedCount.whole(1)
    /// Events dropped because their stack's count would have reached 2^64.
    var overflowed = 0
    /// True once an event was weighted by its period (the counts are then the event's unit, not samples).
    var weighted = false
    /// The event type kept, and whether it was chosen by default.
    var eventFilter: [UInt8]?
    var eventDefaulted: Bool
    var skippedEvent: [UInt8]? = nil
    /// True once an event passed the filter.
    var keptEvent = false
    /// The current stack: the frames of each line (`;f1;f2`), leaf line first, and where each line starts.
    var frames: [UInt8] = []
    var lineStarts: [Int] = []
    /// The current event reached a ``PerfScriptImporter/Options/skipAfter`` frame: its callers are dropped.
    var skippingCallers = false
    /// ``PerfScriptImporter/Options/skipAfter`` as `;name` bytes, as frames are stored.
    lazy var skipAfterKeys: Set<[UInt8]> = Set(options.skipAfter.map { Array((";" + $0).utf8) })
    /// The folded stack being assembled.
    var key: [UInt8] = []
    /// Where samples go instead of the stacks (``PerfScriptImporter/forEachSample(in:diagnostics:_:)``); nil: folded.
    var sampleSink: ((PerfScriptImporter.Sample) -> Void)? = nil
    /// The current event's time, process, thread and command, for ``sampleSink``.
    var eventTime: UInt64? = nil
    var eventPID: Int32? = nil
    var eventTID: Int32? = nil
    var eventComm = ""
    var eventLine = 0
    /// The line being consumed.
    var lineNumber = 0
    /// For ``sampleSink``: each frame line's address and module, by line (as ``lineStarts``).
    var linePlaces: [(address: UInt64, module: Substring)] = []
    var unrecognized: UnrecognizedLines
    /// Folded frames of frame lines already seen, while it pays: it is switched off for 2^22 frame lines when fewer
    /// than a quarter of 2^17 lookups were found (addresses that do not repeat), then tried again.
    var cache = FrameCache()
    var cacheOn = true
    var cacheLookups = 0
    var cacheHits = 0
    var linesWithoutCache = 0

    init(options: PerfScriptImporter.Options, path: String) {
        self.options = options
        rules = PerfFrameRules(includeAddresses: options.includeAddresses, annotateKernel: options.annotateKernel,
                               annotateJIT: options.annotateJIT, markInlined: options.markInlined,
                               repairRust: options.repairRust, perlCompatible: options.perlCompatible)
        eventFilter = options.eventFilter.map { Array($0.utf8) }
        eventDefaulted = options.eventFilter == nil
        unrecognized = UnrecognizedLines(path: path, strict: options.strict)
    }

    /// One line of input.
    mutating func consume(_ line: Bytes, number: Int, into stacks: inout FoldedStacks) throws {
        lineNumber = number
        if line.first == UInt8(ascii: "#") { return }
        if line.isEmpty {
            if pname != nil { emit(into: &stacks) }
            skipping = false
            return
        }
        if pname == nil, !options.perlCompatible, let single = PerfLineSyntax.singleLineEvent(line) {
            guard accepts(event: Bytes(rebasing: line[single.event]), modifiers: false) else { return }
            startEvent(line, comm: single.comm, first: single.pid ?? single.tid, second: single.pid == nil ? nil : single.tid,
                       period: single.period)
            let frame = Bytes(rebasing: line[single.frame])
            if let fields = PerfLineSyntax.frameFields(frame) { addFrame(frame, fields) }
            if !frames.isEmpty { emit(into: &stacks) }
            frames.removeAll(keepingCapacity: true)
            lineStarts.removeAll(keepingCapacity: true)
        linePlaces.removeAll(keepingCapacity: true)
            pname = nil
            return
        }
        if let fields = PerfLineSyntax.eventFields(line) {
            var periodRange: Range<Int>? = nil
            if let (period, event) = PerfLineSyntax.periodAndEvent(line) {
                guard accepts(event: Bytes(rebasing: line[event]), modifiers: true) else { return }
                periodRange = period
            }
            startEvent(line, comm: fields.comm, first: fields.first, second: fields.second, period: periodRange)
        } else if pname != nil, skippingCallers, PerfLineSyntax.frameFields(line) != nil {
            return  // a caller of a --skip-after frame
        } else if pname != nil, cacheOn, cachedFrame(line) {
            noteSkipAfter()
            return
        } else if let fields = PerfLineSyntax.frameFields(line) {
            if pname != nil {
                defer { noteSkipAfter() }
                let start = frames.count
                addFrame(line, fields)
                if cacheOn {
                    cache.insert(Self.trimmed(line), flag: java, value: frames[start...])
                } else {
                    linesWithoutCache += 1
                    if linesWithoutCache == 1 << 22 { cacheOn = true }
                }
            } else if !skipping {
                try unrecognized.record(line, number: number, why: "frame line outside an event")
            }
        } else {
            try unrecognized.record(line, number: number, why: "neither an event line nor a frame line")
        }
    }

    /// The event filter: the first event type seen unless one was given. Event lines name events with their
    /// modifiers (`cycles:u`) and are compared whole, like the reference; an event line that carries its frame is
    /// compared without modifiers, like inferno, which names it so.
    private mutating func accepts(event: Bytes, modifiers: Bool) -> Bool {
        guard let filter = eventFilter else {
            eventFilter = Array(event)
            return true
        }
        if modifiers ? event.elementsEqual(filter) : event.elementsEqual(filter.prefix { $0 != UInt8(ascii: ":") }) {
            keptEvent = true
            return true
        }
        if skippedEvent == nil { skippedEvent = Array(event) }
        skipping = true
        return false
    }

    /// An event line: the process frame and the weight (the frames gathered so far stay, like the reference).
    private mutating func startEvent(_ line: Bytes, comm: Range<Int>, first: Range<Int>, second: Range<Int>?,
                                     period: Range<Int>?) {
        skipping = false
        skippingCallers = false
        var name = Array(line[comm])
        // `if (not $tid)`: no second number, or "0", means the first one is the tid.
        let hasPID = second.map { !(line[$0].count == 1 && line[$0.lowerBound] == UInt8(ascii: "0")) } ?? false
        if options.includeTID || options.includePID {
            name.append(UInt8(ascii: "-"))
            if hasPID { name.append(contentsOf: line[first]) } else { name.append(UInt8(ascii: "?")) }
            if options.includeTID {
                name.append(UInt8(ascii: "/"))
                name.append(contentsOf: line[hasPID ? second! : first])
            }
        }
        if sampleSink != nil {
            func number(_ range: Range<Int>) -> Int32? { Int32(String(decoding: line[range], as: UTF8.self)) }
            eventPID = hasPID ? number(first) : nil
            // A pid that does not fit is no usable thread either: the file is then exported untimed.
            eventTID = hasPID && eventPID == nil ? nil : number(hasPID ? second! : first)
            eventTime = PerfLineSyntax.timestamp(line, from: (second ?? first).upperBound)
            eventComm = String(decoding: line[comm], as: UTF8.self)
            eventLine = lineNumber
        }
        for i in name.indices where name[i] == UInt8(ascii: " ") { name[i] = UInt8(ascii: "_") }
        java = name.starts(with: [106, 97, 118, 97])  // "java"
        pname = name
        self.period = .whole(1)
        if !options.countSamples, let period, !(period.count == 1 && line[period.lowerBound] == UInt8(ascii: "0")) {
            // Read as every count is read (FoldedCount): exact up to 2^64-1; a larger one (perf's periods are 64-bit,
            // so never from perf) counts as 1 rather than poisoning every total.
            self.period = FoldedCount(digits: UnsafeBufferPointer(rebasing: line[period])) ?? .whole(1)
            weighted = true
        }
    }

    /// The line without its indentation, which does not change how it folds.
    @inline(__always) static func trimmed(_ line: Bytes) -> Bytes {
        var start = 0
        while start < line.count && (line[start] == 9 || line[start] == 32) { start += 1 }
        return Bytes(rebasing: line[start...])
    }

    /// A frame line folded before: its frames appended from the cache; false when it was not seen yet.
    private mutating func cachedFrame(_ line: Bytes) -> Bool {
        let start = frames.count
        cacheLookups += 1
        if cacheLookups == 1 << 17 {
            cacheOn = cacheHits >= cacheLookups / 4
            if !cacheOn {
                cache = FrameCache()
                linesWithoutCache = 0
            }
            cacheLookups = 0
            cacheHits = 0
            if !cacheOn { return false }
        }
        guard cache.append(Self.trimmed(line), flag: java, to: &frames) else { return false }
        cacheHits += 1
        lineStarts.append(start)
        if sampleSink != nil { notePlace(line, PerfLineSyntax.frameFields(line)) }
        return true
    }

    /// After a frame line of the current event: its callers are dropped when it is a `--skip-after` frame.
    private mutating func noteSkipAfter() {
        guard !options.skipAfter.isEmpty, let start = lineStarts.last else { return }
        if skipAfterKeys.contains(Array(frames[start...])) { skippingCallers = true }
    }

    /// A frame line of the current event.
    private mutating func addFrame(_ line: Bytes, _ fields: PerfLineSyntax.FrameFields) {
        lineStarts.append(frames.count)
        if sampleSink != nil { notePlace(line, fields) }
        rules.append(line: line, fields: fields, java: java, to: &frames)
    }

    /// The end of an event: its stack, root first, counted with its weight.
    private mutating func emit(into stacks: inout FoldedStacks) {
        key.removeAll(keepingCapacity: true)
        key.reserveCapacity((pname?.count ?? 0) + frames.count)
        if let pname { key.append(contentsOf: pname) }
        if frames.isEmpty && options.markEmptyStacks { key.append(contentsOf: Self.noStack) }
        frames.withUnsafeBufferPointer { frames in
            var end = frames.count
            for start in lineStarts.reversed() {
                key.append(contentsOf: UnsafeBufferPointer(rebasing: frames[start..<end]))
                end = start
            }
        }
        if let sampleSink {
            // Each line's place once per frame it made, root first (lines are leaf first).
            var places: [(address: UInt64, module: Substring)] = []
            var end = frames.count
            for (line, start) in lineStarts.enumerated().reversed() {
                let made = frames[start..<end].reduce(0) { $1 == UInt8(ascii: ";") ? $0 + 1 : $0 }
                places += repeatElement(linePlaces[line], count: made)
                end = start
            }
            key.withUnsafeBytes {
                sampleSink(.init(stack: $0, weight: period, timeNs: eventTime, pid: eventPID, tid: eventTID,
                                 comm: Substring(eventComm), line: eventLine, places: places))
            }
        } else if key.withUnsafeBytes({ stacks.add(bytes: $0, period) }) == nil {
            overflowed += 1
        }
        frames.removeAll(keepingCapacity: true)
        lineStarts.removeAll(keepingCapacity: true)
        linePlaces.removeAll(keepingCapacity: true)
        pname = nil
    }

    /// The frame ``PerfScriptImporter/Options/markEmptyStacks`` adds.
    static let noStack = Array(";[no stack]".utf8)

    /// The end of the input: the last stack even without a blank line after it (inferno), then the report.
    mutating func finish(into stacks: inout FoldedStacks, diagnostics: inout Diagnostics) {
        if pname != nil && !frames.isEmpty {
            diagnostics.warn("\(unrecognized.path): the input ends inside a stack (no blank line after the last event; "
                + (options.perlCompatible ? "dropped, as stackcollapse-perf.pl does)" : "kept)"))
            if !options.perlCompatible { emit(into: &stacks) }
        }
        if eventDefaulted, let skippedEvent, let eventFilter {
            diagnostics.warn("\(unrecognized.path): several event types; kept only '\(String(decoding: eventFilter, as: UTF8.self))', "
                + "skipped '\(String(decoding: skippedEvent, as: UTF8.self))' and any other (choose with --event-filter)")
        }
        if !eventDefaulted, !keptEvent, let skippedEvent, let eventFilter {
            diagnostics.warn("\(unrecognized.path): no event '\(String(decoding: eventFilter, as: UTF8.self))' "
                + "(--event-filter compares the whole name, modifiers too); the input has "
                + "'\(String(decoding: skippedEvent, as: UTF8.self))'")
        }
        unrecognized.report(to: &diagnostics)
        if overflowed > 0 {
            diagnostics.warn("\(unrecognized.path): \(overflowed) event\(overflowed == 1 ? "" : "s") skipped: the stack's "
                + "count would exceed 2^64-1")
        }
        // Periods are in the event's unit (nanoseconds for cpu-clock); without any, the counts are samples.
        let unit = weighted ? CountUnit.perfPeriods(of: eventFilter.map { String(decoding: $0, as: UTF8.self) } ?? "")
            : CountUnit.samples
        stacks.unit = CountUnit.combined(stacks.unit, unit)
    }
}
