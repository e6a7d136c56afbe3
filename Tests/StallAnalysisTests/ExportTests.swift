import Foundation
import StallFormat
import Testing
@testable import StallAnalysis

/// `stallprof export`: each format's structure checked with an independent reader (JSONSerialization, a tiny
/// protobuf reader, gzip), round trips through `fold`, and the real validators (speedscope's schema, protoc,
/// go tool pprof) when they are installed.
@Suite struct ExportTests {
    /// The report's six-episode capture (busy, blocked, saturated; resolvable fixture functions).
    static func mixedCapture() throws -> Capture { try ReportFixtures.capture(ReportFixtures.mixedRecords(), name: "export") }

    static func timeline(_ capture: Capture) -> Timeline {
        var diagnostics = Diagnostics()
        return TimelineBuilder.build(capture, diagnostics: &diagnostics)
    }

    static func json(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    /// Every value in `value`, recursively, is not null.
    static func hasNoNull(_ value: Any) -> Bool {
        if value is NSNull { return false }
        if let object = value as? [String: Any] { return object.values.allSatisfy(hasNoNull) }
        if let array = value as? [Any] { return array.allSatisfy(hasNoNull) }
        return true
    }

    @Test func timelineKeepsEpisodesTimesAndFrames() throws {
        let capture = try Self.mixedCapture()
        let timeline = Self.timeline(capture)
        #expect(timeline.isTimed)
        #expect(timeline.episodes.map(\.id) == capture.stalls.map(\.id))
        #expect(timeline.episodes.map(\.title).prefix(4) == ["busy stall", "saturated", "busy stall", "blocked stall"])
        let first = try #require(timeline.episodes.first)
        #expect(first.startNs == 2_000_000_000 && first.durationNs == 1_000_000_000 && first.tid == 4242)
        #expect(first.samples.count == 10)
        // Samples 10 ms apart: each stands for 10 ms; the first at detection, 250 ms after the start.
        #expect(first.samples.dropLast().allSatisfy { $0.wallNs == 10_000_000 })
        #expect(first.samples.first?.timestampNs == 2_250_000_000)
        let names = timeline.frames(of: first.samples[0]).map(\.name)
        #expect(names.last == "stallprof_fixture_markdown_height" && names.contains("stallprof_fixture_layout_pass"))
        #expect(timeline.frames(of: first.samples[0]).last?.image == ReportFixtures.ownImage.path)
        #expect(timeline.episodes[3].blockedOn?.contains("held by thread 4321") == true)
        #expect(timeline.images.first?.path == ReportFixtures.ownImage.path)
    }

    @Test func speedscopeHasOneSampledProfilePerEpisodeAndNoNulls() throws {
        let timeline = Self.timeline(try Self.mixedCapture())
        var diagnostics = Diagnostics()
        let bytes = try SpeedscopeExporter(options: .init()).export(timeline, diagnostics: &diagnostics)
        let document = try Self.json(bytes)
        #expect(document["$schema"] as? String == "https://www.speedscope.app/file-format-schema.json")
        #expect(Self.hasNoNull(document))
        let frames = try #require((document["shared"] as? [String: Any])?["frames"] as? [[String: Any]])
        let profiles = try #require(document["profiles"] as? [[String: Any]])
        #expect(profiles.count == timeline.episodes.count)
        #expect(profiles.first?["name"] as? String == "stall 1 (busy) at 2000 ms")
        #expect(profiles[1]["name"] as? String == "saturated 2 (busy) at 5000 ms")
        for (profile, episode) in zip(profiles, timeline.episodes) {
            #expect(profile["type"] as? String == "sampled" && profile["unit"] as? String == "milliseconds")
            let samples = try #require(profile["samples"] as? [[Int]])
            let weights = try #require(profile["weights"] as? [Double])
            #expect(samples.count == episode.samples.count && weights.count == samples.count)
            #expect(samples.allSatisfy { $0.allSatisfy { $0 >= 0 && $0 < frames.count } })
            let span = try #require(profile["endValue"] as? Double) - (try #require(profile["startValue"] as? Double))
            #expect(weights.allSatisfy { $0 > 0 } && weights.reduce(0, +) <= span + 1e-9)
        }
    }

    @Test func speedscopeRoundTripsThroughFold() throws {
        // Captures: one count per sample, the same stacks fold gives.
        let path = try ReportFixtures.write(ReportFixtures.mixedRecords(), name: "export-roundtrip")
        defer { try? FileManager.default.removeItem(atPath: path) }
        var options = ExportOptions()
        options.speedscope.weight = .samples
        let (bytes, _) = try Exporter.export([InputSource(path: path)], options: options)
        let exported = try ExportTools.temporary(bytes, suffix: ".json")
        defer { try? FileManager.default.removeItem(atPath: exported) }
        let (direct, _) = try Folder.fold([InputSource(path: path)], options: FoldOptions())
        let (back, _) = try Folder.fold([InputSource(path: exported)], options: FoldOptions())
        #expect(back == direct && direct.total > 20)
        // Folded input with fractional counts: exactly the same text back.
        let folded = try ExportTools.temporary(Array("main;a;b 3\nmain;a 0.25\nmain;c;d 1e0\n[x];y 7\n".utf8), suffix: ".txt")
        defer { try? FileManager.default.removeItem(atPath: folded) }
        let (untimed, _) = try Exporter.export([InputSource(path: folded)], options: ExportOptions())
        let untimedPath = try ExportTools.temporary(untimed, suffix: ".json")
        defer { try? FileManager.default.removeItem(atPath: untimedPath) }
        #expect(try Folder.fold([InputSource(path: untimedPath)], options: FoldOptions()).0.rendered()
            == "[x];y 7\nmain;a 0.25\nmain;a;b 3\n")
    }

    @Test func chromeTraceHasEpisodesMarkersAndSampleStacks() throws {
        let frames = ["main", "RunLoop.run", "layout"].map { TimelineFrame(name: $0, image: "/app/bin") }
        var stacks = TimelineStacks()
        let episode = TimelineEpisode(
            id: 7, kind: .stall, state: .busy, startNs: 1_000_000, durationNs: 300_000_500, pid: 10, tid: 11,
            samples: [TimelineSample(timestampNs: 251_000_000, wallNs: 10_000_000, stack: stacks.node(for: frames)),
                      TimelineSample(timestampNs: 261_000_000, wallNs: 10_000_000,
                                     stack: stacks.node(for: Array(frames.prefix(2))))])
        let timeline = Timeline(
            name: "hand-built", isTimed: true, episodes: [episode], stacks: stacks,
            markers: [TimelineMarker(name: "tap", extent: .instant, startNs: 500_000, pid: 10, tid: 11),
                      TimelineMarker(name: "load", extent: .interval(durationNs: 2_000_000), startNs: 900_000, pid: 10, tid: 12)])
        var diagnostics = Diagnostics()
        let document = try Self.json(try ChromeTraceExporter(options: .init()).export(timeline, diagnostics: &diagnostics))
        let events = try #require(document["traceEvents"] as? [[String: Any]])
        let stall = try #require(events.first { $0["cat"] as? String == "stall" })
        #expect(stall["ph"] as? String == "X" && stall["name"] as? String == "busy stall")
        #expect(stall["ts"] as? Int == 1000 && stall["dur"] as? Double == 300000.5)
        #expect(stall["pid"] as? Int == 10 && stall["tid"] as? Int == 11)
        #expect((stall["args"] as? [String: Any])?["stall"] as? Int == 7)
        let markers = events.filter { $0["cat"] as? String == "marker" }
        #expect(markers.count == 2)
        #expect(markers[0]["ph"] as? String == "i" && markers[0]["s"] as? String == "t" && markers[0]["ts"] as? Int == 500)
        #expect(markers[1]["ph"] as? String == "X" && markers[1]["dur"] as? Int == 2000 && markers[1]["tid"] as? Int == 12)
        #expect(events.contains { $0["ph"] as? String == "M" && $0["name"] as? String == "thread_name" && $0["tid"] as? Int == 12 })
        let stackFrames = try #require(document["stackFrames"] as? [String: [String: Any]])
        let samples = try #require(document["samples"] as? [[String: Any]])
        #expect(samples.map { $0["ts"] as? Int } == [251000, 261000])
        // Walking each sample's frame to the root gives its stack.
        func stack(_ id: Int) -> [String] {
            var names: [String] = [], node: Int? = id
            while let current = node, let frame = stackFrames[String(current)] {
                names.insert(frame["name"] as? String ?? "?", at: 0)
                node = frame["parent"] as? Int
            }
            return names
        }
        #expect(samples.compactMap { $0["sf"] as? Int }.map(stack) == [["main", "RunLoop.run", "layout"], ["main", "RunLoop.run"]])
    }

    @Test func chromeTraceOfUntimedInputLaysStacksEndToEnd() throws {
        var stacks = FoldedStacks()
        stacks.add(folded: "main;b", count: 2)
        stacks.add(folded: "main;a", count: 3)
        var diagnostics = Diagnostics()
        let document = try Self.json(try ChromeTraceExporter(options: .init())
            .export(TimelineBuilder.build(folded: stacks, name: "in.folded"), diagnostics: &diagnostics))
        let events = try #require(document["traceEvents"] as? [[String: Any]])
        let profile = try #require(events.first { $0["cat"] as? String == "profile" })
        #expect(profile["ts"] as? Int == 0 && profile["dur"] as? Int == 5000)
        let samples = try #require(document["samples"] as? [[String: Any]])
        #expect(samples.map { $0["ts"] as? Int } == [0, 3000] && samples.map { $0["weight"] as? Int } == [3, 2])
    }

    @Test func chromeTraceOfTimeCountsLastsTheirTimeAndSpeedscopeKeepsEmptyStacks() throws {
        var stacks = FoldedStacks()
        stacks.add(folded: "main;a", count: 3_000_000)
        stacks.add(folded: "", count: 2_000_000)  // an idle sample without frames
        stacks.unit = .time(nanosecondsPerCount: 1)
        let timeline = TimelineBuilder.build(folded: stacks, name: "perf.txt")
        var diagnostics = Diagnostics()
        let trace = try Self.json(try ChromeTraceExporter(options: .init()).export(timeline, diagnostics: &diagnostics))
        let events = try #require(trace["traceEvents"] as? [[String: Any]])
        let profile = try #require(events.first { $0["cat"] as? String == "profile" })
        #expect(profile["dur"] as? Int == 5000)  // 5 ms in microseconds, not 5,000,000 counts of 1 ms
        let speedscope = try Self.json(try SpeedscopeExporter(options: .init()).export(timeline, diagnostics: &diagnostics))
        let only = try #require((speedscope["profiles"] as? [[String: Any]])?.first)
        #expect(only["unit"] as? String == "nanoseconds")
        #expect((only["weights"] as? [Double])?.reduce(0, +) == 5_000_000)
        #expect((only["samples"] as? [[Int]])?.contains([]) == true)
    }
}
