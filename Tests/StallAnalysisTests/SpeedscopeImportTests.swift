import Foundation
import Testing
@testable import StallAnalysis

/// Reading speedscope JSON: sampled (py-spy) and evented (pyinstrument) profiles with the nulls real producers
/// write, detection from the content, and JSON or binary inputs in other formats refused with their name.
@Suite struct SpeedscopeImportTests {
    static func fold(_ text: String, _ configure: (inout FoldOptions) -> Void = { _ in }) throws -> String {
        try FoldFixture.foldBytes(Array(text.utf8), configure)
    }

    static func document(frames: String = #"[{"name":"a"},{"name":"b"},{"name":"c"}]"#, profiles: String) -> String {
        #"{"$schema":"https://www.speedscope.app/file-format-schema.json","shared":{"frames":"# + frames
            + #"},"profiles":["# + profiles + "]}"
    }

    @Test func pySpySampledProfilesMergeWithNulls() throws {
        let text = try FoldFixture.text("speedscope/pyspy-sampled.json")
        // The whole output: Fixtures/golden/fold/speedscope-pyspy-sampled.expected.
        #expect(text.contains(";render (view.py:40) 4.25\n"))
    }

    @Test func profileNamesCanBeRootFrames() throws {
        let text = try FoldFixture.text("speedscope/pyspy-sampled.json") { $0.speedscope.profileRoot = true }
        #expect(text.contains("python app.py (pid 4321);<module> (app.py:1);main (app.py:12);render (view.py:40) 4\n"))
        #expect(text.contains("worker (tid 4400);<module> (app.py:1);main (app.py:12);render (view.py:40) 0.25\n"))
    }

    @Test func pyinstrumentEventedTimeGoesToTheOpenFrames() throws {
        // The whole output: Fixtures/golden/fold/speedscope-pyinstrument-evented.expected.
        #expect(try FoldFixture.text("speedscope/pyinstrument-evented.json").contains("<module>;main;[self] 0.5\n"))
    }

    @Test func emptyStacksAndZeroWeightsAddNothing() throws {
        let text = try Self.fold(Self.document(profiles: #"{"type":"sampled","name":"p","unit":"none","startValue":0,"endValue":4,"samples":[[],[0,1],[0,2],[0]],"weights":[5,0,2,1]}"#))
        #expect(text == "a 1\na;c 2\n")
    }

    @Test func unclosedFramesCloseAtEndValueWithAWarning() throws {
        let path = try ExportTools.temporary(Array(Self.document(profiles: #"{"type":"evented","name":"p","unit":"none","startValue":0,"endValue":10,"events":[{"type":"O","frame":0,"at":2},{"type":"O","frame":1,"at":4}]}"#).utf8), suffix: ".json")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let (stacks, diagnostics) = try Folder.fold([InputSource(path: path)], options: FoldOptions())
        #expect(stacks.rendered() == "a 2\na;b 6\n")
        #expect(diagnostics.warnings.contains { $0.contains("2 frames never closed") })
    }

    @Test func malformedProfilesAreBadDataWithTheirPath() {
        let mismatched = FoldFixture.badData { try Self.fold(Self.document(profiles: #"{"type":"evented","name":"p","unit":"none","startValue":0,"endValue":3,"events":[{"type":"O","frame":0,"at":0},{"type":"O","frame":1,"at":1},{"type":"C","frame":0,"at":2}]}"#)) }
        #expect(mismatched?.position == "profiles[0].events[2]" && mismatched?.reason.contains("innermost open frame is 1 (b)") == true)
        let order = FoldFixture.badData { try Self.fold(Self.document(profiles: #"{"type":"evented","name":"p","unit":"none","startValue":0,"endValue":3,"events":[{"type":"O","frame":0,"at":2},{"type":"C","frame":0,"at":1}]}"#)) }
        #expect(order?.position == "profiles[0].events[1].at")
        let index = FoldFixture.badData { try Self.fold(Self.document(profiles: #"{"type":"sampled","name":"p","unit":"none","startValue":0,"endValue":3,"samples":[[0,7]],"weights":[1]}"#)) }
        #expect(index?.position == "profiles[0].samples[0][1]")
        let weights = FoldFixture.badData { try Self.fold(Self.document(profiles: #"{"type":"sampled","name":"p","unit":"none","startValue":0,"endValue":3,"samples":[[0]],"weights":[1,2]}"#)) }
        #expect(weights?.reason == "2 weights for 1 samples")
        let syntax = FoldFixture.badData { try Self.fold("{\"$schema\": \"x\",\n  \"profiles\": [1, 2,]}") }
        #expect(syntax?.position == "line 2 (byte 37)" && syntax?.reason.hasPrefix("invalid JSON") == true)
    }

    @Test func hugeExpansionsAndDeepStacksAreRefusedNotBuilt() {
        // One 200 KB name referenced 10,000 times: 2 GB of folded stack from a 250 KB file.
        let name = String(repeating: "n", count: 200_000)
        let stack = "[" + Array(repeating: "0", count: 10_000).joined(separator: ",") + "]"
        let bomb = Self.document(frames: #"[{"name":""# + name + #""}]"#, profiles: #"{"type":"sampled","name":"p","unit":"none","startValue":0,"endValue":1,"samples":["# + stack + #"],"weights":[1]}"#)
        #expect(FoldFixture.badData { try Self.fold(bomb) }?.reason.contains("expand to far more than the file's size") == true)
        let opens = (0...ProfileLoader.maxDepth).map { #"{"type":"O","frame":0,"at":\#($0)}"# }.joined(separator: ",")
        let deep = FoldFixture.badData { try Self.fold(Self.document(profiles: #"{"type":"evented","name":"p","unit":"none","startValue":0,"endValue":1,"events":["# + opens + "]}")) }
        #expect(deep?.position == "profiles[0].events[\(ProfileLoader.maxDepth)]" && deep?.reason.contains("deeper than") == true)
    }

    @Test func otherJSONIsNamedNotFolded() {
        let trace = FoldFixture.badData { try Self.fold(#"{"traceEvents":[{"ph":"X","name":"a","ts":0,"dur":1,"pid":1,"tid":1}]}"#) }
        #expect(trace?.reason.hasPrefix("a Chrome trace (traceEvents), not a speedscope profile") == true)
        let array = FoldFixture.badData { try Self.fold(#"[{"ph":"B","name":"a","ts":0,"pid":1,"tid":1}]"#) }
        #expect(array?.reason.hasPrefix("a Chrome trace (a JSON array of trace events)") == true)
        for other in ["[1,2,3]", #"["a","b"]"#, "[[1],[2]]", "[-1]"] {
            #expect(FoldFixture.badData { try Self.fold(other) }?.reason.hasPrefix("a JSON array, not a speedscope profile") == true, "\(other)")
        }
        let cpuprofile = FoldFixture.badData { try Self.fold(#"{"nodes":[],"samples":[],"timeDeltas":[]}"#) }
        #expect(cpuprofile?.reason.hasPrefix("a Chrome .cpuprofile") == true)
        let plain = FoldFixture.badData { try FoldFixture.text("speedscope/not-speedscope.json") }
        #expect(plain?.reason.hasPrefix("JSON without speedscope's $schema (keys: \"frames\", \"profiles\", \"version\")") == true)
        let gzip = FoldFixture.badData { try FoldFixture.foldBytes([0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2]) }
        #expect(gzip?.reason.hasPrefix("the gzip") == true, "\(String(describing: gzip))")  // read decompressed: cut short
    }

    @Test func foldedStacksThatLookLikeBracketsStayFolded() throws {
        #expect(try Self.fold("[unknown];main 3\n{closure};x 2\n") == "[unknown];main 3\n{closure};x 2\n")
    }

    @Test func speedscopeIsDetectedByContent() throws {
        let head = ArraySlice(Array("\u{FEFF}  {\n \"$schema\"".utf8))
        #expect(SpeedscopeImporter.recognizes(head))
        #expect(!SpeedscopeImporter.recognizes(ArraySlice(Array("[unknown];a 1\n".utf8))))
        #expect(try Folder.resolve(.auto, stream: ByteStream(bytes: Array(head), name: "x")) == .speedscope)
    }

    @Test func perfCpuClockExportReadsBackWithItsTotalAndUnit() throws {
        // perf cpu-clock periods are nanoseconds; timed, the speedscope file weighs each sample with its period in
        // milliseconds, and reads back as the same time.
        let perf = [InputSource(path: FoldFixture.path("perf-script.txt"))]
        let (direct, _) = try Folder.fold(perf, options: FoldOptions())
        #expect(direct.unit == .time(nanosecondsPerCount: 1) && direct.total > 1000)
        let (bytes, _) = try Exporter.export(perf, options: ExportOptions())
        let document = try ExportTests.json(bytes)
        #expect((document["profiles"] as? [[String: Any]])?.allSatisfy { $0["unit"] as? String == "milliseconds" } == true)
        let exported = try ExportTools.temporary(bytes, suffix: ".json")
        defer { try? FileManager.default.removeItem(atPath: exported) }
        let (back, _) = try Folder.fold([InputSource(path: exported)], options: FoldOptions())
        #expect(back.unit == .time(nanosecondsPerCount: 1e6) && abs(back.total * 1e6 - direct.total) < 1e-3,
                "\(back.total) ms, \(direct.total) ns")
    }
}
