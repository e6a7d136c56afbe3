// libFuzzer target for one text parser, chosen at build time: -D FUZZ_PERF, FUZZ_SAMPLE, FUZZ_SPEEDSCOPE or
// FUZZ_FOLDED.
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
        options.transforms.mergeRecursion = true
        options.transforms.demangleSwift = true
        _ = options.transforms.apply(to: stacks)
    }
    return 0
}
