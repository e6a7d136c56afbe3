import Foundation
import StallFormat
import Testing
@testable import StallAnalysis

/// Exports write as they go (issue 17: memory bounded by the output's needs): into a ``ByteSink`` in pieces, the
/// same bytes as in memory; frames and stacks are kept once each (``TimelineStacks``), whatever the format tells
/// apart.
@Suite struct ExportStreamingTests {
    /// `count` distinct folded stacks sharing their beginnings (a call tree three levels deep, then a leaf).
    static func folded(_ count: Int) -> FoldedStacks {
        var stacks = FoldedStacks()
        for index in 0..<count {
            let frames = ["main", "RunLoop.run", "Feed.level\(index % 7)", "Cell.layout\(index % 13)",
                          "closure #1 in Node.measure(\(index))"]
            stacks.add(frames: frames.prefix(2 + index % 4) + [frames[4]], count: Double(1 + index % 5))
        }
        return stacks
    }

    /// Calls `body` with 20,000 untimed stacks and the options of each format.
    static func eachFormat(_ body: (Timeline, ExportOptions, ExportFormat) throws -> Void) throws {
        let timeline = TimelineBuilder.build(folded: Self.folded(20_000), name: "many")
        for format in ExportFormat.allCases {
            var options = ExportOptions()
            options.format = format
            // Perfetto takes timed samples only: the same stacks, one a millisecond.
            try body(format == .perfetto ? Self.timed(timeline) : timeline, options, format)
        }
    }

    /// `timeline`'s samples as a capture's: one episode on pid and tid 7, a sample each millisecond.
    static func timed(_ timeline: Timeline) -> Timeline {
        var timed = timeline
        timed.isTimed = true
        var episode = timed.episodes[0]
        episode.kind = .stall
        (episode.pid, episode.tid, episode.startNs) = (7, 7, 0)
        episode.durationNs = UInt64(episode.samples.count) * 1_000_000
        for index in episode.samples.indices {
            episode.samples[index].timestampNs = UInt64(index) * 1_000_000
            episode.samples[index].count = 1
        }
        timed.episodes = [episode]
        return timed
    }

    @Test func everyFormatStreamsInPiecesTheBytesItWritesInMemory() throws {
        try Self.eachFormat { timeline, options, format in
            var diagnostics = Diagnostics()
            let whole = try Exporter.write(timeline, options: options, diagnostics: &diagnostics)
            var pieces: [[UInt8]] = []
            try Exporter.write(timeline, options: options, to: ByteSink { pieces.append($0) }, diagnostics: &diagnostics)
            #expect(pieces.joined().elementsEqual(whole), "\(format)")
            // Written as it was made: many pieces, none much larger than one chunk.
            // (pprof is compressed: 20,000 stacks take a few chunks.)
            #expect(pieces.count > 3 || (format == .pprof && pieces.count > 1 && whole.count < 3 * ByteSink.chunkSize),
                    "\(format): \(whole.count) bytes in \(pieces.count) pieces")
            #expect(pieces.allSatisfy { $0.count < 2 * ByteSink.chunkSize }, "\(format)")
        }
    }

    struct Full: Error {}

    @Test func aSinkThatFailsEndsTheExportWithItsError() throws {
        try Self.eachFormat { timeline, options, format in
            var diagnostics = Diagnostics()
            var calls = 0
            let sink = ByteSink { _ in
                calls += 1
                throw Full()
            }
            #expect(throws: Full.self) { try Exporter.write(timeline, options: options, to: sink, diagnostics: &diagnostics) }
            #expect(calls == 1, "\(format): nothing is handed on after the failure")
        }
    }

    @Test func gzipIsTheSameMemberWhateverPiecesItIsGiven() throws {
        for size in [0, 1, Gzip.maxBlock, Gzip.maxBlock + 1, 2 * Gzip.maxBlock, 200_001] {
            let data = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ $0 >> 9) }
            let whole = Gzip.wrap(data)
            for piece in [1, 1000, Gzip.maxBlock, 100_000] where piece <= max(size, 1) {
                let sink = ByteSink()
                let gzip = Gzip(into: sink)
                for start in stride(from: 0, to: size, by: piece) { try gzip.write(Array(data[start..<min(size, start + piece)])) }
                gzip.finish()
                #expect(sink.bytes == whole, "\(size) bytes in pieces of \(piece)")
            }
            let (status, raw, _) = try ExportTools.run("/bin/gzip", ["-dc"], input: whole)
            #expect(status == 0 && raw == data, "\(size) bytes")
        }
    }

    @Test func foldedStacksBecomeOneTreeThatSpellsEachStackBack() throws {
        var stacks = FoldedStacks()
        // Empty names, a stack that is a prefix of the next, one that ends where another has its `;`, a blank
        // sorting before `;`, invalid UTF-8 and the empty stack.
        var bytes = ["a", "a;b", "a;b;c", "a;;b", ";", "a b;c", "a!;b", "a;c", "b;a;b", "", "a;b;", "c"].map { Array($0.utf8) }
        bytes.append(Array("x".utf8) + [0xFF] + Array(";y".utf8))
        for (index, text) in bytes.enumerated() {
            text.withUnsafeBytes { stacks.add(bytes: $0, count: Double(index + 1)) }
        }
        let timeline = TimelineBuilder.build(folded: stacks, name: "tricky")
        let samples = timeline.episodes[0].samples
        let expected = stacks.sorted
        #expect(samples.count == expected.count)
        for (sample, entry) in zip(samples, expected) {
            #expect(timeline.frames(of: sample).map(\.name).joined(separator: ";") == entry.stack)
            #expect(sample.count == entry.count)
        }
        // One node per distinct beginning: a, a;(empty), a;(empty);b, a;b, a;b;(empty), a;b;c, a;c, ... share.
        var prefixes = Set<[String]>()
        for entry in expected where !entry.stack.isEmpty {
            let frames = entry.stack.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
            for length in 1...frames.count { prefixes.insert(Array(frames.prefix(length))) }
        }
        #expect(timeline.stacks.nodeCount == prefixes.count + 1)
    }

    @Test func framesAlikeToAFormatAreOneFrameOfIt() throws {
        // Two addresses in one function: two frames of the timeline, one speedscope frame, one Chrome stack frame,
        // two pprof locations of one function.
        var stacks = TimelineStacks()
        let main = TimelineFrame(name: "main", image: "/app/bin", address: 0x1000)
        let first = stacks.node(for: [main, TimelineFrame(name: "draw", image: "/app/bin", address: 0x2010)])
        let second = stacks.node(for: [main, TimelineFrame(name: "draw", image: "/app/bin", address: 0x2020)])
        #expect(first != second && stacks.frames.count == 3)
        let episode = TimelineEpisode(id: 1, kind: .stall, state: .busy, startNs: 0, durationNs: 30_000_000, pid: 5,
                                      tid: 5, samples: [TimelineSample(timestampNs: 0, wallNs: 10_000_000, stack: first),
                                                        TimelineSample(timestampNs: 10_000_000, wallNs: 10_000_000, stack: second),
                                                        TimelineSample(timestampNs: 20_000_000, wallNs: 10_000_000, stack: first)])
        let timeline = Timeline(name: "alike", isTimed: true, episodes: [episode], stacks: stacks)
        var diagnostics = Diagnostics()
        let speedscope = try ExportTests.json(try SpeedscopeExporter(options: .init()).export(timeline, diagnostics: &diagnostics))
        #expect(((speedscope["shared"] as? [String: Any])?["frames"] as? [Any])?.count == 2)
        let profile = try #require((speedscope["profiles"] as? [[String: Any]])?.first)
        #expect(profile["samples"] as? [[Int]] == [[0, 1], [0, 1], [0, 1]])
        let trace = try ExportTests.json(try ChromeTraceExporter(options: .init()).export(timeline, diagnostics: &diagnostics))
        #expect((trace["stackFrames"] as? [String: Any])?.count == 2)
        #expect((trace["samples"] as? [[String: Any]])?.compactMap { $0["sf"] as? Int } == [2, 2, 2])
        let pprof = try #require(ProtoMessage(try PprofExportTests.profile(timeline)))
        #expect(pprof.messages(4).count == 3 && pprof.messages(5).count == 2)
        // The two stacks differ by location: two pprof samples, the first with two samples' values summed.
        #expect(pprof.messages(2).map { $0.integers(2).first } == [2, 1])
    }

    @Test func appendedTimelinesRenumberTheirStacks() {
        var first = TimelineStacks()
        let a = first.node(for: ["main", "a"].map { TimelineFrame(name: $0) })
        var second = TimelineStacks()
        let b = second.node(for: ["main", "b", "c"].map { TimelineFrame(name: $0) })
        var timeline = Timeline(name: "one", isTimed: true, episodes: [TimelineEpisode(id: 1, samples: [TimelineSample(stack: a)])],
                                stacks: first)
        timeline.append(Timeline(name: "two", isTimed: true, episodes: [TimelineEpisode(id: 1, samples: [TimelineSample(stack: b)])],
                                 stacks: second))
        #expect(timeline.name == "one, two")
        #expect(timeline.episodes.map { timeline.frames(of: $0.samples[0]).map(\.name) } == [["main", "a"], ["main", "b", "c"]])
        #expect(timeline.stacks.nodeCount == 5)  // the empty stack, main, main;a, main;b, main;b;c
    }
}
