import Foundation
import StallFormat
import Testing
@testable import StallAnalysis

/// pprof export read back by a tiny protobuf reader, gzip, and (when installed) protoc and go tool pprof; the
/// speedscope export against speedscope's schema when Python's jsonschema is installed.
@Suite struct PprofExportTests {
    static func profile(_ timeline: Timeline, gzip: Bool = false) throws -> [UInt8] {
        var options = PprofExporter.Options()
        options.gzip = gzip
        var diagnostics = Diagnostics()
        return try PprofExporter(options: options).export(timeline, diagnostics: &diagnostics)
    }

    /// The gzip member's trailer: the CRC-32 of the data (the standard check value for "123456789") and its size.
    @Test func theGzipTrailerHoldsTheStandardCheckValueAndTheSize() {
        let member = Gzip.wrap(Array("123456789".utf8))
        let trailer = member.suffix(8).map(UInt32.init)
        #expect(member.prefix(2) == [0x1F, 0x8B])
        #expect(trailer[0] | trailer[1] << 8 | trailer[2] << 16 | trailer[3] << 24 == 0xCBF4_3926)
        #expect(trailer[4] | trailer[5] << 8 | trailer[6] << 16 | trailer[7] << 24 == 9)
    }

    @Test func profileHasTypesSamplesLabelsMappingAndLocations() throws {
        let capture = try ExportTests.mixedCapture()
        let timeline = ExportTests.timeline(capture)
        let profile = try #require(ProtoMessage(try Self.profile(timeline)))
        let strings = profile.strings(6)
        #expect(strings.first == "")
        let types = profile.messages(1).map { (strings[Int($0.int(1))], strings[Int($0.int(2))]) }
        #expect(types.map(\.0) == ["samples", "wall"] && types.map(\.1) == ["count", "nanoseconds"])
        let samples = profile.messages(2)
        let counts = samples.map { $0.integers(2) }
        #expect(counts.allSatisfy { $0.count == 2 })
        #expect(counts.reduce(0) { $0 + $1[0] } == UInt64(timeline.sampleCount))
        let labelKeys = Set(samples.flatMap { $0.messages(3).map { strings[Int($0.int(1))] } })
        #expect(labelKeys == ["stall", "kind", "state"])
        let states = Set(samples.flatMap { $0.messages(3).filter { strings[Int($0.int(1))] == "state" }.map { strings[Int($0.int(2))] } })
        #expect(states == ["busy", "blocked"])
        let mappings = profile.messages(3)
        #expect(strings[Int(mappings.first?.int(5) ?? 0)] == ReportFixtures.ownImage.path)
        #expect(mappings.allSatisfy { $0.int(7) == 1 })  // has_functions
        let locations = profile.messages(4)
        let locationIDs = Set(locations.map { $0.int(1) })
        #expect(samples.allSatisfy { Set($0.integers(1)).isSubset(of: locationIDs) })
        let functions = Dictionary(uniqueKeysWithValues: profile.messages(5).map { ($0.int(1), strings[Int($0.int(2))]) })
        #expect(functions.values.contains("stallprof_fixture_layout_pass"))
        #expect(locations.allSatisfy { $0.messages(4).allSatisfy { functions[$0.int(1)] != nil } })
        #expect(profile.int(9) == ReportFixtures.startWallNs && profile.int(12) == 10_000_000)
        #expect(strings[Int(profile.int(14))] == "wall")
    }

    @Test func severalCapturesLabelEachSampleWithItsCaptureAndPid() throws {
        var capture = try ExportTests.mixedCapture()
        var timeline = ExportTests.timeline(capture)
        capture.source = "second.stalls"
        capture.process?.pid = 4321
        timeline.append(ExportTests.timeline(capture))
        let profile = try #require(ProtoMessage(try Self.profile(timeline)))
        let strings = profile.strings(6)
        func label(_ sample: ProtoMessage, _ key: String) -> ProtoMessage? {
            sample.messages(3).first { strings[Int($0.int(1))] == key }
        }
        let samples = profile.messages(2)
        let captures = samples.compactMap { label($0, "capture").map { strings[Int($0.int(2))] } }
        #expect(captures.count == samples.count && Set(captures).count == 2 && captures.contains("second.stalls"))
        let pids = Set(samples.compactMap { label($0, "pid")?.int(3) })
        #expect(pids.count == 2 && pids.contains(4321))
        // One capture alone: no such labels (every sample would carry the same one).
        let single = try #require(ProtoMessage(try Self.profile(ExportTests.timeline(capture))))
        #expect(single.messages(2).allSatisfy { $0.messages(3).count == 3 || $0.messages(3).count == 2 })
    }

    @Test func speedscopeFilesAndLinesBecomeFunctionFilesAndLines() throws {
        // py-spy's frames carry file and line: `main (app.py:12)` is in app.py at line 12.
        let (stacks, _) = try Folder.fold([InputSource(path: FoldFixture.path("speedscope/pyspy-sampled.json"))],
                                          options: FoldOptions())
        let profile = try #require(ProtoMessage(try Self.profile(TimelineBuilder.build(folded: stacks, name: "py"))))
        let strings = profile.strings(6)
        let functions = Dictionary(uniqueKeysWithValues: profile.messages(5).map { ($0.int(1), $0) })
        let main = try #require(functions.values.first { strings[Int($0.int(2))] == "main (app.py:12)" })
        #expect(strings[Int(main.int(4))] == "app.py")
        let lines = profile.messages(4).flatMap { $0.messages(4) }.filter { $0.int(1) == main.int(1) }
        #expect(!lines.isEmpty && lines.allSatisfy { $0.int(2) == 12 })
        // Folded input has no sources: no file, line 0.
        var folded = FoldedStacks()
        folded.add(folded: "main;a", count: 1)
        let plain = try #require(ProtoMessage(try Self.profile(TimelineBuilder.build(folded: folded, name: "f"))))
        #expect(plain.messages(5).allSatisfy { $0.int(4) == 0 })
    }

    @Test func untimedCountsRoundToWholeSamplesWithAWarning() throws {
        var stacks = FoldedStacks()
        stacks.add(folded: "main;a", count: 2.5)
        stacks.add(folded: "main;b", count: 4)
        var diagnostics = Diagnostics()
        let bytes = try PprofExporter(options: .init()).export(
            TimelineBuilder.build(folded: stacks, name: "in"), diagnostics: &diagnostics)
        #expect(diagnostics.warnings.contains { $0.contains("1 fractional count rounded") })
        let (status, raw, _) = try ExportTools.run("/bin/gzip", ["-dc"], input: bytes)
        #expect(status == 0)
        let profile = try #require(ProtoMessage(raw))
        #expect(profile.messages(2).map { $0.integers(2)[0] }.sorted() == [3, 4])
        #expect(profile.strings(6)[Int(profile.int(14))] == "samples")
    }

    @Test func untimedCountsKeepTheirUnitAsTheSampleType() throws {
        for (unit, type, scale) in [(CountUnit.time(nanosecondsPerCount: 1_000), ("cpu", "nanoseconds"), UInt64(1_000)),
                                    (.named("cycles"), ("cycles", "count"), 1)] {
            var stacks = FoldedStacks()
            stacks.add(folded: "main;a", count: 5)
            stacks.add(folded: "", count: 2)  // kept: a sample without locations
            stacks.unit = unit
            let profile = try #require(ProtoMessage(try Self.profile(TimelineBuilder.build(folded: stacks, name: "in"))))
            let strings = profile.strings(6)
            let types = profile.messages(1).map { (strings[Int($0.int(1))], strings[Int($0.int(2))]) }
            #expect(types.count == 1 && types.first?.0 == type.0 && types.first?.1 == type.1)
            #expect(profile.messages(2).map { $0.integers(2) }.flatMap { $0 }.reduce(0, +) == 7 * scale)
            #expect(strings[Int(profile.int(14))] == type.0)
        }
    }

    @Test func gzipOutputDecompressesToTheProtobuf() throws {
        let timeline = ExportTests.timeline(try ExportTests.mixedCapture())
        let plain = try Self.profile(timeline)
        let zipped = try Self.profile(timeline, gzip: true)
        #expect(zipped.starts(with: [0x1F, 0x8B]))
        let (status, raw, _) = try ExportTools.run("/bin/gzip", ["-dc"], input: zipped)
        #expect(status == 0 && raw == plain)
        // Larger than one stored block (64 KiB).
        let big = (0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let (bigStatus, bigRaw, _) = try ExportTools.run("/bin/gzip", ["-dc"], input: Gzip.wrap(big))
        #expect(bigStatus == 0 && bigRaw == big)
    }

    @Test(.enabled(if: ExportTools.which("protoc") != nil && ExportTools.formats != nil, "protoc or ../shared/formats missing"))
    func protocDecodesTheProfile() throws {
        let raw = try Self.profile(ExportTests.timeline(try ExportTests.mixedCapture()))
        let (status, text, errors) = try ExportTools.run(
            ExportTools.which("protoc")!, ["--proto_path=\(ExportTools.formats!)", "--decode", "perftools.profiles.Profile",
                                           "profile.proto"], input: raw)
        #expect(status == 0, "\(errors)")
        #expect(String(decoding: text, as: UTF8.self).contains("string_table: \"stallprof_fixture_layout_pass\""))
    }

    @Test(.enabled(if: ExportTools.which("go") != nil, "go (golang-go) not installed"))
    func goToolPprofReadsTheProfile() throws {
        let path = try ExportTools.temporary(try Self.profile(ExportTests.timeline(try ExportTests.mixedCapture()), gzip: true), suffix: ".pb.gz")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (status, out, errors) = try ExportTools.run(ExportTools.which("go")!, ["tool", "pprof", "-top", path],
                                                        environment: ["HOME": NSTemporaryDirectory()])
        #expect(status == 0, "\(errors)")
        #expect(String(decoding: out, as: UTF8.self).contains("stallprof_fixture_markdown_height"))
    }

    @Test(.enabled(if: ExportTools.which("python3") != nil, "python3 not installed"))
    func chromeTraceOfACapturePassesTheTraceEventCheck() throws {
        var diagnostics = Diagnostics()
        var timeline = ExportTests.timeline(try ExportTests.mixedCapture())
        timeline.markers = [TimelineMarker(name: "tap", extent: .instant, startNs: 2_100_000_000, pid: 4242, tid: 4242)]
        let bytes = try ChromeTraceExporter(options: .init()).export(timeline, diagnostics: &diagnostics)
        let path = try ExportTools.temporary(bytes, suffix: ".json")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (status, out, errors) = try ExportTools.run(
            ExportTools.which("python3")!, [ExportTools.toolsDirectory + "/export_validate.py", "chrome-trace", path])
        let report = String(decoding: out, as: UTF8.self)
        #expect(status == 0, "\(report) \(errors)")
        #expect(report.contains("6 slices, 1 instants, \(timeline.sampleCount) samples"))
    }

    @Test(.enabled(if: ExportTools.pythonWithJSONSchema != nil && ExportTools.formats != nil, "jsonschema not installed"))
    func speedscopeExportsValidateAgainstTheSchema() throws {
        var diagnostics = Diagnostics()
        let timed = try SpeedscopeExporter(options: .init()).export(ExportTests.timeline(try ExportTests.mixedCapture()), diagnostics: &diagnostics)
        var stacks = FoldedStacks()
        stacks.add(folded: "main;a \"quoted\";b\\c", count: 0.5)
        let untimed = try SpeedscopeExporter(options: .init()).export(TimelineBuilder.build(folded: stacks, name: "x"), diagnostics: &diagnostics)
        for bytes in [timed, untimed] {
            let path = try ExportTools.temporary(bytes, suffix: ".json")
            defer { try? FileManager.default.removeItem(atPath: path) }
            let (status, out, errors) = try ExportTools.run(
                ExportTools.pythonWithJSONSchema!, [ExportTools.toolsDirectory + "/export_validate.py", "speedscope", path],
                environment: ["FORMATS": ExportTools.formats!])
            #expect(status == 0, "\(String(decoding: out, as: UTF8.self)) \(errors)")
        }
    }
}
