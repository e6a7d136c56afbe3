import StallFormat

/// Builds a ``Timeline`` from a capture (its episodes, samples and images, names resolved by the same
/// ``Symbolizer`` `fold` uses) or from folded stacks (one untimed episode).
public enum TimelineBuilder {
    /// The timeline of `capture`'s episodes that pass `options` (kind, state, number, window), with names
    /// resolved by `options.symbolizer`. Unfinished episodes are kept with a warning, as `fold` keeps them.
    public static func build(_ capture: Capture, options: StallCaptureImporter.Options = .init(),
                             diagnostics: inout Diagnostics) -> Timeline {
        options.selection.warnAboutReading(capture, diagnostics: &diagnostics)
        let origin = capture.originNs
        let relative = { (ns: UInt64) in ns &- min(ns, origin) }
        let symbolizer = Symbolizer(capture: capture, options: options.symbolizer)
        let architecture = SyscallNames.architecture(of: capture)
        let rule = AppCodeRule(capture: capture, lookup: options.symbolizer)
        let interval = capture.process?.sampleIntervalNs
        var episodes: [TimelineEpisode] = []
        var stacks = TimelineStacks()
        var end: UInt64 = capture.closedAtNs.map(relative) ?? 0
        for selected in options.selection.episodes(of: capture) {
            let (stall, kept) = (selected.episode, selected.samples)
            let episodeEnd = stall.endNs
            var samples: [TimelineSample] = []
            samples.reserveCapacity(kept.count)
            for (index, sample) in kept.enumerated() {
                // The sample stands for the time to the next one (the last: to the episode's end, at most one
                // sampling interval).
                let next = index + 1 < kept.count ? kept[index + 1].timestampNs : episodeEnd
                var wall = next &- min(next, sample.timestampNs)
                if index + 1 == kept.count, let interval, interval > 0 { wall = min(wall, interval) }
                if wall == 0 { wall = interval ?? 0 }
                samples.append(TimelineSample(
                    timestampNs: relative(sample.timestampNs), wallNs: wall, count: 1,
                    stack: stacks.node(for: frames(of: sample, symbolizer: symbolizer))))
            }
            let blocked = stall.blockedOn.map {
                BlockedOnSummary($0, stall: stall, symbolizer: symbolizer, rule: rule, architecture: architecture).sentence
            }
            let start = relative(stall.begin.startNs)
            end = max(end, relative(stall.endNs))
            var episode = TimelineEpisode(
                id: stall.id, kind: stall.kind, state: stall.state, startNs: start, durationNs: stall.durationNs,
                pid: capture.process?.pid, tid: stall.begin.threadID, cpuRatio: stall.cpuRatio, blockedOn: blocked, samples: samples)
            episode.source = capture.source
            episode.target = stall.target
            episodes.append(episode)
        }
        symbolizer.warnings.forEach { diagnostics.warn("\(capture.source): \($0)") }
        end = capture.markers.reduce(end) { max($0, relative($1.endNs)) }
        // Every marker of the capture, whichever episodes are selected: they are the app's own timeline. An
        // interval whose end is not in the file lasts to the end of the timeline.
        let markers = capture.markers.map { marker in
            let start = relative(marker.startNs)
            let extent: TimelineMarker.Extent = marker.kind == .instant
                ? .instant : .interval(durationNs: marker.durationNs ?? end &- min(end, start))
            return TimelineMarker(
                name: marker.name, extent: extent, startNs: start, pid: capture.process?.pid, tid: marker.tid)
        }
        // The main binary first: pprof treats the first mapping as the program.
        let executable = capture.process?.executable
        let images = capture.images.filter { $0.path == executable } + capture.images.filter { $0.path != executable }
        return Timeline(
            name: capture.source, isTimed: true, startWallNs: capture.process?.startWallNs,
            durationNs: end, sampleIntervalNs: interval, executable: executable, episodes: episodes, stacks: stacks,
            markers: markers, images: images)
    }

    /// One sample's frames, root first: names as `fold` prints them (with `[truncated]` in front of a stack cut at
    /// the frame limit), each with its image, the address looked up and where in the source it was
    /// (``TimelineFrame/place``; with ``SymbolizerOptions/lines``, its line and file too). With
    /// ``SymbolizerOptions/inlines`` each inlined function is a frame of its own, at the same address.
    static func frames(of sample: Sample, symbolizer: Symbolizer) -> [TimelineFrame] {
        let names = symbolizer.rootFirstNames(leafFirst: sample.frames)
        let options = symbolizer.options
        var frames: [TimelineFrame] = []
        frames.reserveCapacity(names.count + 1)
        if sample.flags.contains(.truncated) { frames.append(TimelineFrame(name: TruncatedStack.rootFrame)) }
        var position = 0  // in `names`
        for index in stride(from: sample.frames.count - 1, through: 0, by: -1) where position < names.count {
            let raw = sample.frames[index]
            let address = index > 0 && raw > 0 ? raw - 1 : raw
            let image = symbolizer.image(containing: raw)?.path
            let source = symbolizer.sourceFrames(for: raw, isReturnAddress: index > 0)
            for frame in options.inlines ? source : [source[0]] where position < names.count {
                // Inlined frames (with --inline) each at their own line; the machine frame with those inlined in it.
                let line = options.lines && frame.line > 0 ? frame.line : nil
                frames.append(TimelineFrame(
                    name: names[position], image: image, address: address, line: line,
                    file: line == nil ? nil : frame.file, place: options.inlines ? SourcePlace([frame]) : SourcePlace(source)))
                position += 1
            }
        }
        return frames
    }

    /// An untimed timeline of folded stacks: one episode whose samples are the distinct stacks in byte order,
    /// each with its count, in the stacks' ``FoldedStacks/unit``; stacks whose count is not above 0 are left out.
    /// Frames are the `;`-separated names; they carry no image nor address, and a file and line where
    /// ``FoldedStacks/frameSources`` has them. An empty stack (py-spy's idle line) is kept as a sample without
    /// frames, so totals match. Each name is made a frame once, each stack a node of ``Timeline/stacks``.
    public static func build(folded stacks: FoldedStacks, name: String) -> Timeline {
        var tree = TimelineStacks()
        var names = FoldedFrameNames()
        var samples: [TimelineSample] = []
        samples.reserveCapacity(stacks.count)
        let order = stacks.sortedIndices()
        stacks.withEntries { entry in
            for index in order {
                let (bytes, whole, fraction) = entry(index)
                let count = Double(whole) + fraction
                guard count > 0 else { continue }
                names.split(bytes) { name in
                    let source = stacks.frameSources.isEmpty ? nil : stacks.frameSources[name]
                    return tree.number(of: TimelineFrame(name: name, line: source?.line, file: source?.file))
                }
                samples.append(TimelineSample(count: count, exact: fraction == 0 ? whole : nil,
                                              stack: tree.node(for: names.frames)))
            }
        }
        return Timeline(name: name, isTimed: false, episodes: [TimelineEpisode(id: 0, samples: samples)], stacks: tree,
                        countUnit: stacks.unit == .samples ? nil : stacks.unit)
    }
}
