import Testing
@testable import StallAnalysis

/// The format table drives detection and dispatch: every row's format is detected from a sample of it and read by
/// its own importer when forced, `--format` takes exactly the rows' names, and `--format auto` tries the rows in
/// their detection order.
@Suite struct InputFormatTableTests {
    /// A sample input of every format, by `--format` name: a new row needs a sample here.
    static let samples = [
        "stallprof": "captures/stall-demo-busy.stalls", "perf": "perf-script.txt", "sample": "sample-report.txt",
        "folded": "folded-mixed.txt", "speedscope": "speedscope/pyspy-sampled.json",
    ]

    @Test func everyRowIsDetectedFromASampleAndReadByItsImporter() throws {
        #expect(Set(Self.samples.keys) == Set(InputFormat.table.map(\.format.rawValue)))
        for row in InputFormat.table {
            let name = try #require(Self.samples[row.format.rawValue], "no sample input of \(row.format)")
            let stream = try InputSource(path: FoldFixture.path(name)).open()
            #expect(try Folder.resolve(.auto, stream: stream) == row.format, "\(name)")
            // No row tried before it claims the sample: detection reaches this row.
            let head = try InputSource(path: FoldFixture.path(name)).open().peek(Folder.detectionBytes)
            let before = InputFormat.detectionRows.prefix { $0.format != row.format }
            #expect(before.allSatisfy { !$0.recognizes(head) }, "\(name)")
            // Forced with --format, the sample folds as detected: the row's importer reads it.
            var forced = FoldOptions()
            forced.format = row.format
            let detected = try FoldFixture.fold([name]).text
            let read = try FoldFixture.fold([name], forced).text
            #expect(!detected.isEmpty && read == detected, "\(name)")
        }
    }

    @Test func formatNamesAreTheRows() {
        #expect(InputFormat.allCases.map(\.rawValue) == ["auto", "stallprof", "perf", "sample", "folded", "speedscope"])
        #expect(InputFormat.allCases.dropFirst().map(\.rawValue) == InputFormat.table.map(\.format.rawValue))
        for format in InputFormat.allCases { #expect(InputFormat(rawValue: format.rawValue) == format) }
        #expect(InputFormat(rawValue: "pprof") == nil)
        #expect(InputFormat.perf.displayName == "perf script" && InputFormat.sample.displayName == "macOS sample")
    }

    @Test func undetectableInputNamesTheRowsInDetectionOrder() {
        let tried = InputFormat.table.sorted { $0.detectionOrder < $1.detectionOrder }.map(\.format.rawValue)
        let failure = FoldFixture.badData { try FoldFixture.foldBytes(Array("hello world\n".utf8)) }
        #expect(failure?.reason.contains("(tried \(tried.joined(separator: ", ")))") == true)
    }
}
