import Foundation
import StallFormat
import Testing

@testable import StallAnalysis

/// Outputs with source lines and inlined frames, compared with golden files: fold, the report (text and JSON) and
/// each export of a real capture. The capture is stall-demo's busy stall (the release build, so the compiler
/// inlined functions), made self-contained with `stallprof symbolicate` (Fixtures/captures/stall-demo-busy.stalls):
/// its names, lines and inlined frames are in the file, so the outputs do not depend on the binaries of the machine
/// the tests run on. `STALLPROF_BLESS=1 swift test` rewrites the goldens.
@Suite struct LinesGoldenTests {
    static func capture() throws -> Capture {
        let path = FoldFixture.path("captures/stall-demo-busy.stalls")
        return try CaptureReader.parse(CaptureReader.readWholeFile(path), source: "stall-demo-busy.stalls")
    }

    /// Importer options: lines in names unless `lines` is false, inlined frames of their own when `inlines`;
    /// short names when `short`.
    static func options(lines: Bool = true, inlines: Bool = true, short: Bool = false) -> StallCaptureImporter.Options {
        var options = StallCaptureImporter.Options()
        (options.symbolizer.lines, options.symbolizer.inlines) = (lines, inlines)
        if short { options.symbolizer.names = .short }
        return options
    }

    @Test func theFixtureIsSymbolicatedAndHasInlinedFrames() throws {
        let capture = try Self.capture()
        #expect(capture.symbolication != nil)
        #expect(capture.symbols.values.contains { $0.frames.count > 1 }, "no inlined frame in the fixture")
    }

    @Test func fold() throws {
        var stacks = FoldedStacks()
        var diagnostics = Diagnostics()
        StallCaptureImporter(options: Self.options(short: true)).fold(try Self.capture(), into: &stacks, diagnostics: &diagnostics)
        Golden.check(stacks.rendered(), "fold/capture-lines-inline-short")
    }

    @Test func reportText() throws {
        var options = StallReportOptions()
        options.capture.symbolizer.names = .short  // the CLI's text
        Golden.check(StallReport(captures: [try Self.capture()], options: options).text(), "report/lines-text")
    }

    @Test func reportJSON() throws {
        Golden.check(StallReport(captures: [try Self.capture()]).json(), "report/lines-json")
    }

    static func timeline(lines: Bool = true, inlines: Bool) throws -> Timeline {
        var diagnostics = Diagnostics()
        return TimelineBuilder.build(try capture(), options: options(lines: lines, inlines: inlines), diagnostics: &diagnostics)
    }

    @Test func speedscope() throws {
        var diagnostics = Diagnostics()
        let bytes = try SpeedscopeExporter(options: .init()).export(try Self.timeline(inlines: false), diagnostics: &diagnostics)
        Golden.check(String(decoding: bytes, as: UTF8.self), "export/speedscope-lines")
    }

    @Test func chromeTrace() throws {
        var diagnostics = Diagnostics()
        let bytes = try ChromeTraceExporter(options: .init()).export(try Self.timeline(inlines: true), diagnostics: &diagnostics)
        Golden.check(String(decoding: bytes, as: UTF8.self), "export/chrome-trace-lines-inline")
    }

    /// pprof is binary: the golden lists each location (address, then its lines innermost first, as `go tool pprof
    /// -lines` reads them) and each sample (its locations, leaf first, and values). Its lines need no `--lines`
    /// (which would put them in the function names too, as fold does); `-lines` checked the inlined frames (each
    /// `<compiler-generated>`, line 0, as `llvm-symbolizer --inlining` gives them).
    @Test func pprof() throws {
        let profile = try #require(ProtoMessage(try PprofExportTests.profile(try Self.timeline(lines: false, inlines: false))))
        let strings = profile.strings(6)
        let functions = Dictionary(uniqueKeysWithValues: profile.messages(5).map {
            ($0.int(1), "\(strings[Int($0.int(2))]) \(strings[Int($0.int(4))])")
        })
        var text = "types " + profile.messages(1).map { "\(strings[Int($0.int(1))])/\(strings[Int($0.int(2))])" }
            .joined(separator: " ") + "\n"
        for location in profile.messages(4) {
            text += "location \(location.int(1)) 0x\(String(location.int(3), radix: 16))\n"
            for line in location.messages(4) { text += "  \(functions[line.int(1)] ?? "?"):\(line.int(2))\n" }
        }
        for sample in profile.messages(2) {
            text += "sample \(sample.integers(1).map(String.init).joined(separator: ",")) = "
                + sample.integers(2).map(String.init).joined(separator: ",") + "\n"
        }
        Golden.check(text, "export/pprof-lines")
    }
}
