// libFuzzer target: folded input as `flamegraph` reads it (FoldedImporter.read: input order, `stack before after`
// lines), drawn as a flame graph and as a flame chart, and StackDiff of two folded profiles (the input split at its
// first NUL byte, or in halves).
// Built by tools/fuzz.sh with -sanitize=fuzzer,address against the StallFormat and StallAnalysis sources.
@testable import StallAnalysis

func folded(_ bytes: ArraySlice<UInt8>) -> FoldedStacks? {
    var options = FoldOptions()
    options.format = .folded
    var stacks = FoldedStacks()
    var diagnostics = Diagnostics()
    guard (try? Folder.fold(ByteStream(bytes: Array(bytes), name: "fuzz"), options: options, into: &stacks,
                            diagnostics: &diagnostics)) != nil else { return nil }
    return stacks
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDiff(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    var profile: [WeightedStack] = []
    var diagnostics = Diagnostics()
    if (try? FoldedImporter().read(ByteStream(bytes: bytes, name: "fuzz"), into: &profile,
                                   diagnostics: &diagnostics)) != nil {
        var options = FlameGraphOptions()
        for chart in [false, true] {
            options.flameChart = chart
            _ = try? SVGFlameGraph(options: options).render(OrderedStacks(stacks: profile), input: "fuzz",
                                                            diagnostics: &diagnostics)
        }
    }
    let split = bytes.firstIndex(of: 0) ?? bytes.count / 2
    guard let before = folded(bytes[..<split]),
        let after = folded(bytes[min(split + 1, bytes.count)...]) else { return 0 }
    for normalize in [false, true] {
        var options = DiffOptions()
        options.normalize = normalize
        options.stripHex = normalize
        _ = StackDiff.diff(before: before, after: after, options: options, diagnostics: &diagnostics)
    }
    return 0
}
