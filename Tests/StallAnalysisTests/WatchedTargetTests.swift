import Foundation
import StallFormat
import Testing

@testable import StallAnalysis

/// Captures whose episodes belong to several watched targets (``ReportFixtures/targetRecords()``: `main`,
/// `loop-1` and `db-queue`): the selection by target, the report grouped by target, and the exports naming them.
@Suite struct WatchedTargetTests {
    static func capture() throws -> Capture { try ReportFixtures.capture(ReportFixtures.targetRecords(), name: "targets") }

    static func report(_ capture: Capture, targets: Set<String> = []) -> StallReport {
        var options = StallReportOptions()
        options.capture.selection.targets = targets
        return StallReport(captures: [capture], options: options)
    }

    @Test func theSelectionKeepsTheEpisodesOfTheNamedTargets() throws {
        let capture = try Self.capture()
        var selection = CaptureSelection()
        #expect(selection.episodes(of: capture).map(\.episode.id) == [1, 2, 3, 4, 5], "every target by default")
        selection.targets = ["loop-1"]
        #expect(selection.episodes(of: capture).map(\.episode.id) == [2, 5])
        selection.targets = ["main", "db-queue"]
        #expect(selection.episodes(of: capture).map(\.episode.id) == [1, 3, 4])
        selection.targets = ["nope"]
        #expect(selection.episodes(of: capture).map(\.episode.id) == [])
        // With the other filters: loop-1's stalls only.
        selection.targets = ["loop-1"]
        selection.kind = .stall
        #expect(selection.episodes(of: capture).map(\.episode.id) == [2])
    }

    @Test func anUnfinishedEpisodeOfATargetIsNamedWithIt() throws {
        let stack = [ReportFixtures.height, ReportFixtures.render, ReportFixtures.system]
        let records = ReportFixtures.records(
            ReportFixtures.episode(1, at: 1_000, durationMs: 300, state: .busy, samples: [stack, stack])
            + ReportFixtures.episode(2, at: 2_000, durationMs: 500, state: .busy, samples: [stack, stack], finished: false,
                                     target: "loop-1", tid: 4300), recordedMs: nil)
        var diagnostics = Diagnostics()
        CaptureSelection().warnAboutReading(try ReportFixtures.capture(records, name: "unfinished"), diagnostics: &diagnostics)
        #expect(diagnostics.warnings.count == 1 && diagnostics.warnings[0].contains(": stall 2 on loop-1 is unfinished"),
                "\(diagnostics.warnings)")
    }

    @Test func episodesAndGroupsCarryTheirTargetAndGroupsNeverMixTargets() throws {
        // The same stack on two targets: two freezes, two groups.
        let stack = Array(repeating: [ReportFixtures.height, ReportFixtures.pass, ReportFixtures.system], count: 5)
        let records = ReportFixtures.records(
            ReportFixtures.episode(1, at: 2_000, durationMs: 500, state: .busy, samples: stack)
            + ReportFixtures.episode(2, at: 4_000, durationMs: 500, state: .busy, samples: stack, target: "loop-1", tid: 4300)
            + ReportFixtures.episode(3, at: 6_000, durationMs: 500, state: .busy, samples: stack)
            + ReportFixtures.episode(4, at: 8_000, durationMs: 400, state: .busy, samples: stack, target: "loop-1", tid: 4300))
        let report = Self.report(try ReportFixtures.capture(records, name: "same-stack"))
        #expect(report.episodes.map(\.target) == ["main", "loop-1", "main", "loop-1"])
        #expect(report.groups.count == 2)
        #expect(report.groups.map(\.target) == ["main", "loop-1"] && report.groups.map(\.episodes) == [[0, 2], [1, 3]])
        #expect(report.groups[0].fingerprint == report.groups[1].fingerprint, "the fingerprint stays the stack's shape")
        // A group's heading names its target once, its episodes by number.
        let text = report.text()
        #expect(text.contains("\n2 alike stalls (busy, 1.000 s in all, max 0.500 s): stall 1, stall 3; 10 samples\n"), "\(text)")
        #expect(text.contains("\n2 alike stalls on loop-1 (busy, 0.900 s in all, max 0.500 s): stall 2, stall 4;\n"
            + "  10 samples\n"), "\(text)")
    }

    @Test func aTargetsOwnThresholdIsInItsHeadingAndEachEpisode() throws {
        let stack = Array(repeating: [ReportFixtures.height, ReportFixtures.pass, ReportFixtures.system], count: 3)
        let records = ReportFixtures.records(
            ReportFixtures.episode(1, at: 2_000, durationMs: 500, state: .busy, samples: stack, thresholdNs: 250_000_000)
            + ReportFixtures.episode(2, at: 4_000, durationMs: 60, state: .busy, samples: stack, target: "loop-1",
                                     tid: 4300, thresholdNs: 20_000_000)
            + ReportFixtures.episode(3, at: 6_000, durationMs: 300, state: .busy, samples: stack, target: "db"))
        let report = Self.report(try ReportFixtures.capture(records, name: "thresholds"))
        #expect(report.episodes.map(\.thresholdMs) == [250, 20, nil], "the record's, else for main only the capture's")
        let text = report.text()
        #expect(text.contains("target loop-1: 1 episode, 0.060 s (1 stall, 0 saturated; 1 busy, 0 blocked),\n"
            + "  threshold 20 ms\n"), "\(text)")
        #expect(text.contains("\ntarget db: 1 episode, 0.300 s (1 stall, 0 saturated; 1 busy, 0 blocked)\n"), "\(text)")
        #expect(text.contains("\ntarget main: 1 episode, 0.500 s (1 stall, 0 saturated; 1 busy, 0 blocked)\n"), "\(text)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.json().utf8)) as? [String: Any])
        let episodes = try #require(json["episodes"] as? [[String: Any]])
        #expect(episodes.map { $0["thresholdMs"] as? Double } == [250, 20, nil] && episodes[2]["thresholdMs"] is NSNull)
    }

    @Test func theTextGroupsEpisodesByTargetMainFirst() throws {
        let text = Self.report(try Self.capture()).text()
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(lines.allSatisfy { $0.count <= StallReport.textWidth }, "\(text)")
        // Each capture's table, target by target.
        let tables = ["target main: 2 episodes", "target db-queue: 1 episode", "target loop-1: 2 episodes"]
        let tableAt = tables.map { heading in lines.firstIndex(of: heading) }
        #expect(tableAt.allSatisfy { $0 != nil } && tableAt == tableAt.sorted { ($0 ?? 0) < ($1 ?? 0) }, "\(text)")
        let loopTable = lines[(tableAt[2] ?? 0)...].prefix(4)
        #expect(loopTable.dropFirst(2).map { $0.split(separator: " ").first } == ["2", "5"], "\(loopTable)")
        // The sections, target by target, each target's under its figures.
        let headings = [
            "target main: 2 episodes, 1.500 s (2 stalls, 0 saturated; 1 busy, 1 blocked)",
            "target db-queue: 1 episode, 0.400 s (1 stall, 0 saturated; 0 busy, 1 blocked)",
            "target loop-1: 2 episodes, 2.600 s (1 stall, 1 saturated; 2 busy, 0 blocked)",
        ]
        let headingAt = headings.map { heading in lines.firstIndex(of: heading) }
        #expect(headingAt.allSatisfy { $0 != nil } && headingAt == headingAt.sorted { ($0 ?? 0) < ($1 ?? 0) }, "\(text)")
        let section = { (start: String) in lines.firstIndex { $0.hasPrefix(start) } }
        let stall2 = section("stall 2 on loop-1 (busy, 0.600 s at 21:00:02.623 UTC, thread 4300): 6 samples")
        let saturated5 = section("saturated 5 on loop-1 (busy, 2.000 s at 21:00:12.123 UTC, thread 4300)")
        let stall3 = section("stall 3 on db-queue (blocked, 0.400 s at 21:00:04.123 UTC, thread 4400)")
        #expect(stall2 != nil && saturated5 != nil && stall3 != nil, "\(text)")
        #expect((stall3 ?? 0) > (headingAt[1] ?? .max) && (stall3 ?? 0) < (headingAt[2] ?? 0))
        #expect((stall2 ?? 0) > (headingAt[2] ?? .max) && (saturated5 ?? 0) > (headingAt[2] ?? .max))
        // The main queue's episodes keep today's headings.
        #expect(section("stall 1 (busy, 1.000 s at 21:00:02.123 UTC, thread 4242): 10 samples") != nil)
        #expect(!text.contains("on main"))
    }

    @Test func aReportOfTheMainQueueAloneHasNoTargets() throws {
        let mixed = StallReport(captures: [try ReportFixtures.capture(ReportFixtures.mixedRecords(), name: "mixed")])
        #expect(!mixed.showsTargets && mixed.targets == ["main"])
        #expect(!mixed.text().contains("\ntarget "))
        // A capture of several targets with the main queue's selected reads as one of the main queue alone.
        let mainOnly = Self.report(try Self.capture(), targets: ["main"])
        #expect(!mainOnly.showsTargets && !mainOnly.text().contains("\ntarget "))
        // One other target alone is still named.
        let loop = Self.report(try Self.capture(), targets: ["loop-1"])
        #expect(loop.showsTargets && loop.text().contains("target loop-1: 2 episodes\n"))
    }

    @Test func theJSONGivesEveryEpisodeAndGroupItsTarget() throws {
        let json = try ExportTests.json(Array(Self.report(try Self.capture()).json().utf8))
        let episodes = try #require(json["episodes"] as? [[String: Any]])
        #expect(episodes.compactMap { $0["target"] as? String } == ["main", "loop-1", "db-queue", "main", "loop-1"])
        let groups = try #require(json["groups"] as? [[String: Any]])
        for group in groups {
            let members = try #require(group["episodes"] as? [[String: Any]]).compactMap { $0["id"] as? Int }
            let targets = Set(members.map { id in episodes.first { $0["id"] as? Int == id }?["target"] as? String })
            #expect(targets == [group["target"] as? String], "\(group)")
        }
        let mixed = StallReport(captures: [try ReportFixtures.capture(ReportFixtures.mixedRecords(), name: "mixed")])
        let mixedEpisodes = try #require(try ExportTests.json(Array(mixed.json().utf8))["episodes"] as? [[String: Any]])
        #expect(mixedEpisodes.count == 6 && mixedEpisodes.allSatisfy { $0["target"] as? String == "main" })
    }

    @Test func theGateNamesTheTargetOfItsOffenders() throws {
        let gate = ReportGate([try GateCondition(parsing: "busy>550ms")], report: Self.report(try Self.capture()))
        #expect(gate.text == "failed: busy>550ms: stall 1 (busy, 1.000 s at 21:00:02.123 UTC), stall 2 on loop-1 "
            + "(busy, 0.600 s at 21:00:02.623 UTC), saturated 5 on loop-1 (busy, 2.000 s at 21:00:12.123 UTC)")
    }

    @Test func exportsNameTheTargetsThreadsAndProfiles() throws {
        let timeline = ExportTests.timeline(try Self.capture())
        #expect(timeline.episodes.map(\.target) == ["main", "loop-1", "db-queue", "main", "loop-1"])
        #expect(timeline.threadName(pid: 4242, tid: 4242) == "main queue (tid 4242)")
        #expect(timeline.threadName(pid: 4242, tid: 4300) == "loop-1 (tid 4300)")
        let names = timeline.episodes.map { SpeedscopeExporter.profileName($0, timeline: timeline) }
        #expect(names == ["stall 1 (busy) at 2000 ms", "stall 2 on loop-1 (busy) at 2500 ms",
                          "stall 3 on db-queue (blocked) at 4000 ms", "stall 4 (blocked) at 9000 ms",
                          "saturated 5 on loop-1 (busy) at 12000 ms"])
        // A thread sampled for two targets is named for both, the main queue first.
        var shared = timeline
        shared.episodes[1].tid = 4242
        #expect(shared.threadName(pid: 4242, tid: 4242) == "main queue, loop-1 (tid 4242)")
    }

    @Test func perfettoTracksAndSlicesNameTheTargets() throws {
        let trace = try PerfettoExportTests.Trace(PerfettoExportTests.export(ExportTests.timeline(try Self.capture())))
        let threads = trace.packets.flatMap { $0.messages(60) }.flatMap { $0.messages(4) }
        #expect(Set(threads.flatMap { $0.strings(5) }) == ["main queue (tid 4242)", "loop-1 (tid 4300)", "db-queue (tid 4400)"])
        let slices = trace.events.filter { $0.args["stall"] != nil }
        #expect(slices.compactMap { $0.args["target"]?.strings(6).first } == ["main", "loop-1", "db-queue", "main", "loop-1"])
        // The main queue alone: no target argument (its trace is as before).
        let mixed = try PerfettoExportTests.Trace(PerfettoExportTests.export(ExportTests.timeline(try ExportTests.mixedCapture())))
        #expect(mixed.events.allSatisfy { $0.args["target"] == nil })
    }

    @Test func pprofLabelsEverySampleWithItsTarget() throws {
        let profile = try #require(ProtoMessage(try PprofExportTests.profile(ExportTests.timeline(try Self.capture()))))
        let strings = profile.strings(6)
        let samples = profile.messages(2)
        let targets = samples.map { sample in
            sample.messages(3).first { strings[Int($0.int(1))] == "target" }.map { strings[Int($0.int(2))] }
        }
        #expect(targets.allSatisfy { $0 != nil } && Set(targets) == ["main", "loop-1", "db-queue"])
    }

    @Test func chromeTraceArgumentsAndThreadNamesNameTheTargets() throws {
        var diagnostics = Diagnostics()
        let bytes = try ChromeTraceExporter(options: .init()).export(
            ExportTests.timeline(try Self.capture()), diagnostics: &diagnostics)
        let events = try #require(try ExportTests.json(bytes)["traceEvents"] as? [[String: Any]])
        let threads = events.filter { $0["name"] as? String == "thread_name" }
            .compactMap { ($0["args"] as? [String: Any])?["name"] as? String }
        #expect(Set(threads) == ["main queue (tid 4242)", "loop-1 (tid 4300)", "db-queue (tid 4400)"])
        let slices = events.filter { $0["cat"] as? String == "stall" }.compactMap { $0["args"] as? [String: Any] }
        #expect(slices.compactMap { $0["target"] as? String } == ["main", "loop-1", "db-queue", "main", "loop-1"])
    }
}
