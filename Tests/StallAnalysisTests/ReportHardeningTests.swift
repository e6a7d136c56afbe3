import Foundation
import StallFormat
import Testing

@testable import StallAnalysis

/// Inputs a corrupt or hostile capture can hold: the report must render them, never trap or hang.
@Suite struct ReportHardeningTests {
    /// A capture whose process started at `startNs` (wall clock `wallNs`), closed at `closedAtNs`, holding
    /// one finished busy stall from `beginNs` to `endNs`.
    func capture(startNs: UInt64 = 1_000_000_000, wallNs: UInt64 = 1_796_072_400_123_000_000, closedAtNs: UInt64,
                 beginNs: UInt64, endNs: UInt64) -> Capture {
        var capture = Capture(source: "hostile.stalls")
        capture.process = ProcessRecord(pid: 1, startMonotonicNs: startNs, startWallNs: wallNs, thresholdNs: 250_000_000,
                                        sampleIntervalNs: 10_000_000, executable: "/nonexistent/app")
        capture.closedCleanly = true
        capture.closedAtNs = closedAtNs
        capture.stalls = [Stall(
            begin: StallBeginRecord(stallID: 1, startNs: beginNs, detectedNs: beginNs, threadID: 1),
            end: StallEndRecord(stallID: 1, endNs: endNs, cpuNs: 0, measuredNs: 0, state: .busy, sampleCount: 0,
                                missedCount: 0))]
        return capture
    }

    /// An episode that ends centuries after a close record 1 ns after the start: a hang rate of ~1e22 s per
    /// hour. The text used to trap converting it to Int.
    @Test func anAbsurdHangRateStillRenders() throws {
        let report = StallReport(captures: [capture(closedAtNs: 1_000_000_001, beginNs: 1_000_000_000, endNs: .max)])
        let rate = try #require(report.summary.stallSecondsPerHour)
        #expect(rate > 1e20 && rate.isFinite)
        let line = try #require(report.text().split(separator: "\n").first { $0.hasPrefix("hang rate: ") })
        #expect(line.contains("e+"))
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.json().utf8)) as? [String: Any])
        #expect((json["summary"] as? [String: Any])?["stallSecondsPerHour"] is Double)
    }

    /// A wall-clock start near the end of 64-bit time plus an episode's offset used to wrap to 1970.
    @Test func aWallClockThatWouldWrapIsUnknown() throws {
        let wall = UInt64.max - 1_000_000_000
        let report = StallReport(captures: [capture(
            wallNs: wall, closedAtNs: 20_000_000_000, beginNs: 11_000_000_000, endNs: 12_000_000_000)])
        #expect(report.episodes.count == 1 && report.episodes[0].startWallNs == nil)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.json().utf8)) as? [String: Any])
        let episode = try #require((json["episodes"] as? [[String: Any]])?.first)
        #expect(episode["startWall"] is NSNull && episode["startMs"] as? Double == 10_000)
        #expect(!report.text().contains("1970"))
    }

    /// Each level used to write its nested containers twice (once to try a one-line form), so the time
    /// doubled with every level: 60 levels never finished. Now one pass, the same output.
    @Test func deeplyNestedJSONIsWrittenOnce() throws {
        var value = JSONValue.array([.int(1)])
        for depth in 0..<60 { value = depth % 2 == 0 ? .object([("k", value)]) : .array([value, .string("s")]) }
        let text = value.written()
        #expect(text.filter { $0 == "[" }.count == 31 && text.filter { $0 == "{" }.count == 30)
        #expect(try JSONSerialization.jsonObject(with: Data(text.utf8)) is [Any])
        #expect(JSONValue.array([.int(1), .string("a")]).written() == "[1, \"a\"]")
        #expect(JSONValue.object([("a", .array([.int(1)]))]).written() == "{\n  \"a\": [1]\n}")
    }
}

/// Free text from a capture (a thread name, a detail) reaches the terminal through the text report.
@Suite struct ReportTerminalTests {
    @Test func controlCharactersInCapturedTextAreNotPrinted() throws {
        let records = ReportFixtures.records(
            ReportFixtures.episode(1, at: 1_000, durationMs: 500, state: .blocked, cpuPerMille: 0,
                                   samples: Array(repeating: [ReportFixtures.systemLeaf, ReportFixtures.pass], count: 3))
            + [.blockedOn(BlockedOnRecord(
                stallID: 1, timestampNs: ReportFixtures.startNs + 1_300_000_000, waitKind: .mutex,
                syscall: ReportFixtures.futexNumber, ownerTID: 77, ownerName: "evil\u{1B}]0;owned\u{7}\r\nline",
                ownerState: UInt8(ascii: "S"), detail: "x\u{9B}2J"))])
        let report = StallReport(captures: [try ReportFixtures.capture(records, name: "control")])
        let text = report.text()
        #expect(!text.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" || (0x7F...0x9F).contains($0.value) })
        #expect(text.contains("held by thread 77 (evil?]0;owned??line)"))
        #expect(text.split(separator: "\n").allSatisfy { $0.count <= StallReport.textWidth })
        #expect(report.episodes[0].blockedOn?.ownerName == "evil\u{1B}]0;owned\u{7}\r\nline")  // JSON escapes it
    }
}

/// The same capture must give the same report in every run: ties are never left to a dictionary's order (its
/// seed changes with every process).
@Suite struct ReportDeterminismTests {
    @Test func equallyCommonCyclesNameTheSmallestOne() {
        for i in 0..<24 {
            let (a, b) = ("A\(i)", "B\(i)")
            var builder = ProfileBuilder()
            for _ in 0..<3 {
                builder.add(names: ["root", a, b, a], app: [false, true, true, true])
                builder.add(names: ["root", b, a, b], app: [false, true, true, true])
            }
            let hints = builder.profile(kind: .stall, state: .busy).hints.map(\.text)
            #expect(hints.contains { $0.hasSuffix(": \(a) -> \(b) -> \(a)") }, "\(hints)")
        }
    }
}

/// The warning about an episode the file ends in names its kind, and only episodes the selection keeps.
@Suite struct UnfinishedWarningTests {
    @Test func theWarningNamesTheKindAndFollowsTheSelection() throws {
        let records = ReportFixtures.records(
            ReportFixtures.episode(1, kind: .saturated, at: 1_000, durationMs: 500, state: .busy,
                                   samples: [[ReportFixtures.height, ReportFixtures.pass]], finished: false),
            recordedMs: nil)
        let capture = try ReportFixtures.capture(records, name: "unfinished")
        func warnings(_ kind: EpisodeKindFilter) -> (warnings: [String], stacks: Int) {
            var options = StallCaptureImporter.Options()
            options.selection.kind = kind
            var stacks = FoldedStacks(), diagnostics = Diagnostics()
            StallCaptureImporter(options: options).fold(capture, into: &stacks, diagnostics: &diagnostics)
            return (diagnostics.warnings, Int(stacks.total))
        }
        let all = warnings(.all)
        #expect(all.stacks == 1 && all.warnings.contains { $0.hasSuffix("saturated episode 1 is unfinished (the file ends during it); its 1 samples are kept") })
        let stalls = warnings(.stall)
        #expect(stalls.stacks == 0 && !stalls.warnings.contains { $0.contains("unfinished") })
    }
}

/// What a blocked episode waited for does not depend on its samples: a `--range` that keeps none of them
/// must not hide the lock owner.
@Suite struct BlockedWithoutSamplesTests {
    @Test func theOwnerSentenceStaysWhenNoSampleIsInTheWindow() throws {
        let capture = try ReportFixtures.capture(ReportFixtures.mixedRecords(), name: "window")
        var options = StallReportOptions()
        options.capture.selection.stallIDs = [4]
        options.capture.selection.window = 100_000_000_000...200_000_000_000
        let text = StallReport(captures: [capture], options: options).text()
        #expect(text.contains("no samples with a stack"))
        #expect(text.contains("blocked: waiting for a mutex held by thread 4321 (lock-holder)"))
    }
}

/// Image paths come from capture files: one that names a FIFO used to block `fold` and `report` forever in
/// open(2), waiting for a writer.
@Suite struct SpecialFileImageTests {
    @Test func aFIFOAsAnImageIsUnreadableNotABlock() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fifo-\(getpid())-\(UUID().uuidString)").path
        #expect(mkfifo(path, 0o600) == 0)
        defer { unlink(path) }
        #expect(ELFSymbols(path: path) == nil)
        let image = ImageRecord(path: path, loadBias: 0x1000, start: 0x1000, end: 0x9000, buildID: [])
        let symbolizer = Symbolizer(images: [image], options: SymbolizerOptions())
        #expect(symbolizer.rootFirstNames(leafFirst: [0x2000]).first?.hasPrefix("[fifo-") == true)
    }
}
