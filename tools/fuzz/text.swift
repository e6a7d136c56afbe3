// libFuzzer target for one text parser, chosen at build time: -D FUZZ_PERF, FUZZ_SAMPLE, FUZZ_SPEEDSCOPE or
// FUZZ_FOLDED. What the parser folds then goes through every command's output: the report (text and JSON), the
// flame graph, and the speedscope, Chrome trace and pprof exports (counts at the limit of 2^64 reach them all);
// perf text also as a timed timeline through every export, Perfetto's included.
// Built by tools/fuzz.sh with -sanitize=fuzzer,address against the StallFormat and StallAnalysis sources.
@testable import StallAnalysis

#if FUZZ_PERF
let format = InputFormat.perf
#elseif FUZZ_SAMPLE
let format = InputFormat.sample
#elseif FUZZ_SPEEDSCOPE
let format = InputFormat.speedscope
#else
let format = InputFormat.folded
#endif

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzText(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    for requested in [format, .auto] {
        var options = FoldOptions()
        options.format = requested
        var stacks = FoldedStacks()
        var diagnostics = Diagnostics()
        guard (try? Folder.fold(ByteStream(bytes: bytes, name: "fuzz"), options: options, into: &stacks,
                                diagnostics: &diagnostics)) != nil else { continue }
        _ = stacks.sorted
        _ = stacks.rendered()
        let report = ProfileReport(stacks, inputs: [ProfileInput(path: "fuzz", format: requested)])
        _ = report.text()
        _ = report.json()
        _ = SVGFlameGraph().render(OrderedStacks(stacks), diagnostics: &diagnostics)
        let timeline = TimelineBuilder.build(folded: stacks, name: "fuzz")
        _ = try? SpeedscopeExporter(options: .init()).export(timeline, diagnostics: &diagnostics)
        _ = try? ChromeTraceExporter(options: .init()).export(timeline, diagnostics: &diagnostics)
        _ = try? PprofExporter(options: .init()).export(timeline, diagnostics: &diagnostics)
        #if FUZZ_PERF
        // perf text timed: every sample at its time on its thread, with its addresses, in every format.
        if let input = try? Folder.detect(ByteStream(bytes: bytes, name: "fuzz"), format: .perf, diagnostics: &diagnostics),
            let (timed, _) = try? PerfTimelineBuilder.build(input, options: options, diagnostics: &diagnostics), let timed
        {
            _ = try? SpeedscopeExporter(options: .init()).export(timed, diagnostics: &diagnostics)
            _ = try? ChromeTraceExporter(options: .init()).export(timed, diagnostics: &diagnostics)
            _ = try? PprofExporter(options: .init()).export(timed, diagnostics: &diagnostics)
            _ = try? PerfettoExporter(options: .init()).export(timed, diagnostics: &diagnostics)
        }
        #endif
        options.transforms.mergeRecursion = true
        options.transforms.demangleSwift = true
        _ = options.transforms.apply(to: stacks, diagnostics: &diagnostics)
    }
    return 0
}
