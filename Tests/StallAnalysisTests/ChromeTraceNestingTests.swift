import Foundation
import Testing
@testable import StallAnalysis

/// Perfetto keeps one stack of slices per thread and drops a complete slice that crosses an open one
/// (`slice_drop_overlapping_complete_event`); the long-press stall ends just after its callback's interval marker.
@Suite struct ChromeTraceNestingTests {
    static func number(_ value: Any?) -> Double? { TraceNesting.number(value) }

    /// The trace of one busy stall and the given markers on pid 10, tid 10.
    static func trace(stall: (UInt64, UInt64), markers: [TimelineMarker]) throws -> [[String: Any]] {
        let episode = TimelineEpisode(id: 1, kind: .stall, state: .busy, startNs: stall.0, durationNs: stall.1,
                                      pid: 10, tid: 10, samples: [])
        let timeline = Timeline(name: "nesting", isTimed: true, episodes: [episode], markers: markers)
        var diagnostics = Diagnostics()
        let bytes = try ChromeTraceExporter(options: .init()).export(timeline, diagnostics: &diagnostics)
        let root = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        return try #require(root["traceEvents"] as? [[String: Any]]).filter { $0["ph"] as? String != "M" }
    }

    /// The (start, end) of each complete event in nanoseconds as Perfetto reads them, in file order.
    static func extents(_ events: [[String: Any]]) -> [(name: String, start: Double, end: Double)] {
        TraceNesting.extents(events)
    }

    /// No two complete events of a thread cross, and they come in Perfetto's order (by start, longer first).
    static func expectNested(_ events: [[String: Any]]) {
        let problems = TraceNesting.problems(events)
        #expect(problems.isEmpty, "\(problems)")
    }

    @Test func aStallEndingJustAfterItsCallbackIsClippedToTheCallbackAndSaysSo() throws {
        // As measured in samples/long-press: longPress [650.257, 1151.2587] ms, the stall [694.636, 1151.3112] ms.
        let press = TimelineMarker(name: "longPress", extent: .interval(durationNs: 501_001_715), startNs: 650_257_000,
                                   pid: 10, tid: 10)
        let down = TimelineMarker(name: "touchDown", extent: .instant, startNs: 300_100_336, pid: 10, tid: 10)
        let up = TimelineMarker(name: "touchUp", extent: .instant, startNs: 1_151_326_313, pid: 10, tid: 10)
        let events = try Self.trace(stall: (694_636_031, 456_675_216), markers: [up, press, down])
        Self.expectNested(events)
        #expect(events.map { $0["name"] as? String } == ["touchDown", "longPress", "busy stall", "touchUp"])
        let stall = try #require(events.first { $0["cat"] as? String == "stall" })
        let args = try #require(stall["args"] as? [String: Any])
        #expect(Self.number(stall["ts"]) == 694_636.031, "a start never moves")
        #expect(Self.number(stall["dur"]) == 456_622.684, "ends with longPress")
        #expect(Self.number(args["clippedUs"]) == 52.532 && Self.number(args["recordedDurUs"]) == 456_675.216)
        let marker = try #require(events.first { $0["name"] as? String == "longPress" })
        #expect(Self.number(marker["dur"]) == 501_001.715 && marker["args"] == nil, "the marker keeps its shape")
    }

    @Test func whenTheMarkerWouldLoseLessItIsTheOneClipped() throws {
        // A marker [0, 100] ms and a stall [99, 1000] ms: ending the marker at 99 ms costs 1 ms, not 900.
        let load = TimelineMarker(name: "load", extent: .interval(durationNs: 100_000_000), startNs: 0, pid: 10, tid: 10)
        let events = try Self.trace(stall: (99_000_000, 901_000_000), markers: [load])
        Self.expectNested(events)
        let marker = try #require(events.first { $0["name"] as? String == "load" })
        #expect(Self.number(marker["dur"]) == 99_000)
        #expect(Self.number((marker["args"] as? [String: Any])?["clippedUs"]) == 1000)
        let stall = try #require(events.first { $0["cat"] as? String == "stall" })
        #expect(Self.number(stall["dur"]) == 901_000 && (stall["args"] as? [String: Any])?["clippedUs"] == nil)
    }

    @Test func nestedDisjointAndOtherThreadsAreLeftAlone() throws {
        let inner = TimelineMarker(name: "inner", extent: .interval(durationNs: 10), startNs: 1_000, pid: 10, tid: 10)
        let after = TimelineMarker(name: "after", extent: .interval(durationNs: 5_000), startNs: 2_000_000, pid: 10, tid: 10)
        let other = TimelineMarker(name: "other", extent: .interval(durationNs: 5_000_000), startNs: 500, pid: 10, tid: 11)
        let same = TimelineMarker(name: "same", extent: .interval(durationNs: 2_000_000), startNs: 0, pid: 10, tid: 10)
        let events = try Self.trace(stall: (0, 2_000_000), markers: [inner, after, other, same])
        #expect(!events.contains { ($0["args"] as? [String: Any])?["clippedUs"] != nil })
        Self.expectNested(events.filter { $0["tid"] as? Int == 10 })
        #expect(Self.extents(events).count == 5)
    }

    @Test func manyCrossingSlicesAllSurviveAndNest() throws {
        // A staircase: each marker starts inside the previous one and ends after it.
        let markers = (0..<200).map {
            TimelineMarker(name: "step \($0)", extent: .interval(durationNs: 1_000 + UInt64($0 % 7) * 300),
                           startNs: UInt64($0) * 700, pid: 10, tid: 10)
        }
        let events = try Self.trace(stall: (350, 1 << 40), markers: markers)
        #expect(Self.extents(events).count == 201)
        Self.expectNested(events)
    }
}

/// Untimed stacks laid end to end: counts so large that their sum passes the axis's end stop there, never wrap.
@Suite struct ChromeTraceUntimedAxisTests {
    @Test func hugeCountsSaturateTheAxisInsteadOfWrapping() throws {
        var stacks = FoldedStacks()
        for index in 0..<20 { stacks.add(folded: "main;f\(index)", count: 1e15) }  // 1e15 ms each
        let timeline = TimelineBuilder.build(folded: stacks, name: "huge")
        var diagnostics = Diagnostics()
        let bytes = try ChromeTraceExporter(options: .init()).export(timeline, diagnostics: &diagnostics)
        let root = try ExportTests.json(bytes)
        let times = try #require(root["samples"] as? [[String: Any]]).compactMap { ChromeTraceNestingTests.number($0["ts"]) }
        #expect(times.count == 20 && times == times.sorted(), "the axis only moves forward")
        let slice = try #require((root["traceEvents"] as? [[String: Any]])?.first { $0["ph"] as? String == "X" })
        let end = (ChromeTraceNestingTests.number(slice["ts"]) ?? 0) + (ChromeTraceNestingTests.number(slice["dur"]) ?? 0)
        #expect(end >= times.last ?? .infinity, "the profile slice holds every stack")
    }
}
