import StallFormat

/// Reads the inputs of `stallprof flamegraph` and `stallprof diff`: folded text (one or two counts per line) or
/// anything ``Folder`` reads (folded on the fly).
public enum ProfileLoader {
    /// The stacks of every input, in input order, with their counts' unit (``OrderedStacks/unit``): folded inputs
    /// keep their line order; other inputs come in byte order, except captures with `timeOrder`: their samples in
    /// time order, newest first, for a flame chart.
    public static func load(_ inputs: [InputSource], options: FoldOptions, timeOrder: Bool = false) throws
        -> (OrderedStacks, Diagnostics)
    {
        let (profile, _, diagnostics) = try loadChart(inputs, options: options, timeOrder: timeOrder)
        return (profile, diagnostics)
    }

    /// As ``load(_:options:timeOrder:)``, with, for captures read in `timeOrder`, their app markers on the axis
    /// the flame chart draws (all inputs' stacks reversed: the last input's oldest sample at the left edge).
    public static func loadChart(_ inputs: [InputSource], options: FoldOptions, timeOrder: Bool = false) throws
        -> (OrderedStacks, [ChartMarker], Diagnostics)
    {
        var stacks: [WeightedStack] = []
        var loader = InputLoader(options: options)
        var placed: [(stacksEnd: Int, markers: [ChartMarker])] = []
        var unit: CountUnit? = nil
        var places: [String: [String: Int]] = [:]  // samples per place per function, over the captures
        // One input's folded stacks, summed with the others' (counts too large dropped), checked for depth and
        // transformed, after those before.
        func add(_ input: FoldedStacks, of name: String) throws {
            let dropped = Folder.merge(input, of: name, into: &sums, diagnostics: &loader.diagnostics)
            let folded = input.removing(Set(dropped))
            var failure: Error?
            folded.forEach { bytes, _ in
                if failure == nil {
                    do { try checkDepth(ArraySlice(bytes), path: name, position: "a folded stack") } catch { failure = error }
                }
            }
            if let failure { throw failure }
            stacks += OrderedStacks(options.transforms.apply(to: folded, diagnostics: &loader.diagnostics)).stacks
            unit = CountUnit.combined(unit, folded.unit)
        }
        // Every stack's count over the inputs, as `fold` adds them up: the same counts are refused, with the same
        // warnings (a line's count, a stack's sum in one input, the sum over the inputs).
        var sums = FoldedStacks()
        for input in inputs {
            guard let opened = try loader.open(input) else { continue }
            // Folded text keeps its order (for --flamechart) and the two counts of differential lines.
            if opened.format == .folded {
                var read: [WeightedStack] = []
                var part = FoldedStacks()
                var entries: [Int] = []
                try FoldedImporter(options: options.folded)
                    .read(opened.stream, into: &read, sums: &part, entries: &entries, diagnostics: &loader.diagnostics)
                let dropped = Set(Folder.merge(part, of: opened.stream.name, into: &sums, diagnostics: &loader.diagnostics))
                if !dropped.isEmpty { read = zip(read, entries).filter { !dropped.contains($1) }.map(\.0) }
                stacks += options.transforms.apply(to: read)
                continue
            }
            // With lines, a capture's frames stay whole (one per function, as without) and its places go to the
            // tooltips: `fold --lines` splits a function's frames by line instead.
            if opened.format == .stallprof, timeOrder || options.capture.symbolizer.lines {
                var whole = options
                whole.capture.symbolizer.lines = false
                let importer = StallCaptureImporter(options: whole.capture)
                let capture = try StallCaptureImporter.read(opened.stream)
                if options.capture.symbolizer.lines {
                    for (name, counts) in importer.placeCounts(of: capture, diagnostics: &loader.diagnostics) {
                        places[name, default: [:]].merge(counts, uniquingKeysWith: +)
                    }
                }
                if timeOrder {
                    stacks += importer.timeOrdered(capture, diagnostics: &loader.diagnostics)
                    placed.append((stacks.count, ChartMarker.place(capture, options: options.capture)))
                    continue
                }
                var folded = FoldedStacks()
                importer.fold(capture, into: &folded, diagnostics: &loader.diagnostics)
                try add(folded, of: opened.stream.name)
                continue
            }
            var folded = FoldedStacks()
            try Folder.fold(opened, options: options, into: &folded, diagnostics: &loader.diagnostics)
            try add(folded, of: opened.stream.name)
        }
        // Reversed for the chart: an input's samples start after the counts of every stack that follows them.
        var after = [Double](repeating: 0, count: stacks.count + 1)
        for index in stacks.indices.reversed() { after[index] = after[index + 1] + stacks[index].count }
        let markers = placed.flatMap { ChartMarker.shifted($0.markers, by: after[$0.stacksEnd]) }
        var profile = OrderedStacks(stacks: stacks, unit: unit)
        profile.places = StallCaptureImporter.mostCommon(places)
        return (profile, markers, loader.diagnostics)
    }

    /// The deepest stack a flame graph draws: deeper ones (far beyond any real call stack; a frame costs a few
    /// hundred bytes of layout) are bad data, so an absurd input ends with an error instead of gigabytes of memory.
    public static let maxDepth = 16_384

    /// Throws bad data (`path`, `position`) when the folded `stack` has more than ``maxDepth`` frames.
    static func checkDepth<C: Collection>(_ stack: C, path: String, position: String) throws where C.Element == UInt8 {
        var frames = 1
        for byte in stack where byte == UInt8(ascii: ";") {
            frames += 1
            if frames > maxDepth {
                throw StallError.badData(
                    path: path, position: position,
                    reason: "a stack deeper than \(maxDepth) frames; the flame graph draws at most \(maxDepth)")
            }
        }
    }
}
