// libFuzzer target: stallprof capture files (CaptureReader.parse, the importer's fold, the report, chart markers,
// the flame graph and flame chart SVGs, and the speedscope, Chrome trace, pprof and Perfetto exports).
// Built by tools/fuzz.sh with -sanitize=fuzzer,address against the StallFormat and StallAnalysis sources.
@testable import StallAnalysis
@testable import StallFormat

/// Rewrites each record's CRC so mutations reach the record decoders instead of stopping at the checksum.
func withValidChecksums(_ input: [UInt8]) -> [UInt8] {
    var bytes = input
    var offset = 16
    while offset + 5 <= bytes.count {
        let length = Int(bytes[offset + 1]) | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3]) << 16
            | Int(bytes[offset + 4]) << 24
        let end = offset + 5 + length
        guard end + 4 <= bytes.count else { break }
        let crc = bytes.withUnsafeBytes { CRC32.checksum(UnsafeRawBufferPointer(rebasing: $0[offset..<end])) }
        for index in 0..<4 { bytes[end + index] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(index))) }
        offset = end + 4
    }
    return bytes
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCapture(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let raw = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    for bytes in [raw, withValidChecksums(raw)] {
        guard let capture = try? CaptureReader.parse(bytes, source: "fuzz") else { continue }
        var stacks = FoldedStacks()
        var diagnostics = Diagnostics()
        StallCaptureImporter().fold(capture, into: &stacks, diagnostics: &diagnostics)
        _ = ChartMarker.place(capture, options: StallCaptureImporter.Options())
        let report = StallReport(captures: [capture])
        _ = report.text()
        _ = report.json()
        let ordered = StallCaptureImporter().timeOrdered(capture, diagnostics: &diagnostics)
        _ = SVGFlameGraph().render(OrderedStacks(stacks), diagnostics: &diagnostics)
        _ = SVGFlameGraph().render(OrderedStacks(stacks: ordered), diagnostics: &diagnostics)
        let timeline = TimelineBuilder.build(capture, diagnostics: &diagnostics)
        _ = try? SpeedscopeExporter(options: .init()).export(timeline, diagnostics: &diagnostics)
        _ = try? ChromeTraceExporter(options: .init()).export(timeline, diagnostics: &diagnostics)
        _ = try? PprofExporter(options: .init()).export(timeline, diagnostics: &diagnostics)
        _ = try? PerfettoExporter(options: .init()).export(timeline, diagnostics: &diagnostics)
    }
    return 0
}
