import Testing
@testable import StallAnalysis

/// Format detection and inputs that are not profiles.
@Suite struct DetectionAndBadInputTests {
    @Test func detectsEachFormat() throws {
        for (name, format) in [("perf-script.txt", InputFormat.perf), ("sample-report.txt", .sample),
                               ("folded-mixed.txt", .folded)] {
            let stream = try InputSource(path: FoldFixture.path(name)).open()
            #expect(try Folder.resolve(.auto, stream: stream) == format)
        }
    }

    @Test func undetectableInputNamesTheFormatsAndTheLine() {
        let failure = FoldFixture.badData { try FoldFixture.foldBytes(Array("# header\n\nhello world\n".utf8)) }
        #expect(failure?.position == "line 3")
        #expect(failure?.reason.contains("tried stallprof, speedscope, sample, perf, folded") == true)
        #expect(failure?.reason.contains("\"hello world\"") == true)
    }

    @Test func emptyInputsAreNoStacksAndBinaryInputsAreClearErrors() throws {
        // An empty input is no stacks with a warning (every command treats it so; TrustCLITests), not an error.
        #expect(try FoldFixture.foldBytes([]) == "")
        #expect(try FoldFixture.foldBytes(Array(" \n\r\n".utf8)) == "")
        let binary: [UInt8] = [0x7F, 0x45, 0x4C, 0x46, 0x02, 0x01, 0x01, 0x00, 0x00]
        #expect(FoldFixture.badData { try FoldFixture.foldBytes(binary) }?.reason == "this is an ELF file, not a profile")
        #expect(FoldFixture.badData {
            try FoldFixture.foldBytes(binary) { $0.format = .perf }
        }?.reason == "this is an ELF file, not a profile")
        let unknown: [UInt8] = [0x01, 0x02, 0x00, 0x41]
        #expect(FoldFixture.badData { try FoldFixture.foldBytes(unknown) }?.reason.contains("binary data") == true)
    }

    @Test func sampleCountsThatOverflowOrAreNegativeAreBadData() {
        let overflow = "Call graph:\n    9223372036854775807 Thread_1\n    + 9223372036854775807 main  (in app)\n"
            + "    + 5 other  (in app)\nTotal number in stack\n"
        #expect(FoldFixture.badData { try FoldFixture.foldBytes(Array(overflow.utf8)) }?.reason.contains("overflow") == true)
        let negative = "Call graph:\n    5 Thread_1\n    + -5 main  (in app)\nTotal number in stack\n"
        #expect(FoldFixture.badData { try FoldFixture.foldBytes(Array(negative.utf8)) }?.reason.contains("invalid sample count") == true)
    }

    @Test func longLinesFoldAndOverlongLinesAreRejected() throws {
        let deep = Array(repeating: "frame", count: 200_000).joined(separator: ";") + " 3\n"
        let text = try FoldFixture.foldBytes(Array(deep.utf8))
        #expect(text.hasSuffix("frame 3\n"))
        #expect(text.utf8.count == deep.utf8.count)
        let stream = ByteStream(bytes: [UInt8](repeating: UInt8(ascii: "x"), count: 3 << 20), name: "endless")
        stream.lineLimit = 2 << 20
        var stacks = FoldedStacks()
        var diagnostics = Diagnostics()
        let failure = FoldFixture.badData {
            try FoldedImporter().importStacks(from: stream, into: &stacks, diagnostics: &diagnostics)
        }
        #expect(failure?.reason == "line longer than 2 MiB; is this a text profile?")
    }

    @Test func perfStackCutAtEndOfFileIsKept() throws {
        let cut = "app 1 1.0: 10 cpu-clock:\n\t1 leaf (/a)\n\t2 root (/a)"
        #expect(try FoldFixture.foldBytes(Array(cut.utf8)) { $0.format = .perf } == "app;root;leaf 10\n")
        let stream = ByteStream(bytes: Array(cut.utf8), name: "cut")
        var stacks = FoldedStacks()
        var diagnostics = Diagnostics()
        try PerfScriptImporter().importStacks(from: stream, into: &stacks, diagnostics: &diagnostics)
        #expect(diagnostics.warnings == ["cut: the input ends inside a stack (no blank line after the last event; kept)"])
    }
}
