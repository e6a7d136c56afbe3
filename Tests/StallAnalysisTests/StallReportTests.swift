import Foundation
import StallFormat
import Testing

@testable import StallAnalysis

/// The report's model and text on synthetic captures whose frames resolve to this binary's fixture functions.
@Suite struct StallReportTests {
    static let pass = "stallprof_fixture_layout_pass", height = "stallprof_fixture_markdown_height"

    func report(_ configure: (inout StallReportOptions) -> Void = { _ in }) throws -> StallReport {
        var options = StallReportOptions()
        configure(&options)
        return StallReport(captures: [try ReportFixtures.capture(ReportFixtures.mixedRecords(), name: "mixed")], options: options)
    }

    @Test func fixtureAddressesResolveToTheirNames() {
        let symbolizer = Symbolizer(images: [ReportFixtures.ownImage, ReportFixtures.systemLibrary])
        #expect(symbolizer.name(for: ReportFixtures.pass, isReturnAddress: true) == Self.pass)
        #expect(symbolizer.name(for: ReportFixtures.height, isReturnAddress: false) == Self.height)
        #expect(symbolizer.name(for: ReportFixtures.system, isReturnAddress: true) == "[libsystemfake.so.1]")
    }

    @Test func episodesOfBothKindsWithTheirFigures() throws {
        let report = try report()
        #expect(report.episodes.map(\.id) == [1, 2, 3, 4, 5, 6])
        #expect(report.episodes.map(\.kind) == [.stall, .saturated, .stall, .stall, .stall, .stall])
        #expect(report.summary.stalls == 5 && report.summary.saturated == 1)
        #expect(report.summary.busy == 4 && report.summary.blocked == 2)
        let first = report.episodes[0]
        #expect(first.startMs == 2_000 && first.durationMs == 1_000 && first.missedSamples == 1 && first.tid == 4242)
        #expect(first.startWallNs == ReportFixtures.startWallNs + 2_000_000_000)
        #expect(first.cpuRatio == 1 && first.activeRatio == 1, "a ratio above 1 is clamped")
        // Durations 1000, 2000, 500, 800, 300, 700 ms: nearest rank.
        #expect(report.summary.p50Ms == 700 && report.summary.p90Ms == 2_000 && report.summary.maxMs == 2_000)
        // 5.3 s frozen in 60 s recorded: 318 s per hour.
        #expect(report.captures[0].recordedNs == 60_000_000_000)
        #expect(abs((report.summary.stallSecondsPerHour ?? 0) - 318) < 1e-6)
    }

    @Test func topSelfAndAppFramesNameTheDriverBesideTheLeaf() throws {
        let profile = try report().episodes[0].profile
        #expect(profile.analyzedSamples == 10)
        #expect(profile.topSelf.first?.function == Self.height && profile.topSelf.first?.share == 0.8)
        #expect(profile.appFrames.map(\.function) == [Self.pass, Self.height])
        #expect(profile.appFrames.map(\.share) == [1.0, 0.8])
        #expect(profile.appSelf.map(\.function) == [Self.height, Self.pass])
        #expect(profile.heaviestStack == ["[libsystemfake.so.1]", Self.pass, Self.height])
        #expect(profile.hints.isEmpty)
        for episode in try report().episodes {
            let shares = episode.profile.topSelf + episode.profile.appFrames + episode.profile.appSelf
            #expect(shares.allSatisfy { $0.share >= 0 && $0.share <= 1 })
            #expect(episode.profile.appFrames.allSatisfy { $0.share >= 0.01 })
            #expect(zip(episode.profile.topSelf, episode.profile.topSelf.dropFirst()).allSatisfy { $0.share >= $1.share })
        }
    }

    @Test func loopHintsAndTheFrameworkHint() throws {
        let episodes = try report().episodes
        let saturated = episodes[1].profile.hints.map(\.text).joined(separator: "\n")
        #expect(saturated.contains("loop across run-loop turns: the run loop keeps re-entering stallprof_fixture_render"))
        #expect(saturated.contains("in 100 % of samples"))
        let recursion = episodes[2].profile.hints.map(\.text).joined(separator: "\n")
        #expect(recursion.contains("recursion"))
        #expect(recursion.contains("stallprof_fixture_recur_a -> stallprof_fixture_recur_b -> stallprof_fixture_recur_a"))
        #expect(recursion.contains("in 75 % of samples"))
        let framework = episodes[5].profile.hints.map(\.text)
        #expect(episodes[5].profile.hints.map(\.kind) == ["no-app-code"])
        #expect(framework == ["no app code on the stack in 100 % of samples: the loop is in framework code; bisect the components"])
        #expect(episodes[5].profile.appFrames.isEmpty && episodes[5].profile.noAppCodeShare == 1)
    }

    @Test func blockedOnAMutexAndOnASystemCall() throws {
        let episodes = try report().episodes
        let mutex = try #require(episodes[3].blockedOn)
        #expect(mutex.kind == "mutex" && mutex.ownerTid == 4321 && mutex.ownerName == "lock-holder")
        #expect(mutex.syscall == "futex" && mutex.ownerSyscall == "nanosleep" && mutex.ownerState == "S")
        #expect(mutex.ownerStack == ["[libsystemfake.so.1]", "stallprof_fixture_owner_work", "[libsystemfake.so.1]"])
        #expect(mutex.ownerFrame == "stallprof_fixture_owner_work" && mutex.ownerStackSource == "stack memory")
        #expect(mutex.sentence == "waiting for a mutex held by thread 4321 (lock-holder), which was in "
            + "stallprof_fixture_owner_work, sleeping in nanosleep")
        let read = try #require(episodes[4].blockedOn)
        #expect(read.kind == "syscall" && read.syscall == "read" && read.ownerTid == nil && read.ownerStack.isEmpty)
        #expect(read.sentence == "waiting in read on file descriptor 5: read fd 5 (pipe:[1234])")
        let text = try report().text()
        #expect(text.contains("blocked: waiting for a mutex held by thread 4321 (lock-holder), which was in"))
        #expect(text.contains("owner's stack, leaf last (3 of 3 frames, taken from its stack memory):"))
        #expect(text.contains("blocked: waiting in read on file descriptor 5"))
    }

    @Test func kindStateAndNumberSelection() throws {
        let saturated = try report { $0.capture.selection.kind = .saturated }
        #expect(saturated.episodes.map(\.id) == [2] && saturated.summary.stalls == 0 && saturated.summary.saturated == 1)
        let stalls = try report { $0.capture.selection.kind = .stall }
        #expect(stalls.episodes.map(\.id) == [1, 3, 4, 5, 6])
        #expect(try report { $0.capture.selection.state = .blocked }.episodes.map(\.id) == [4, 5])
        #expect(try report { $0.capture.selection.stallIDs = [3] }.episodes.map(\.id) == [3])
        // A window keeps the samples taken 250..279 ms after the start: the first three.
        #expect(try report { $0.capture.selection.window = 250_000_000...279_000_000 }.episodes[0].profile.analyzedSamples == 3)
    }

    @Test func identicalStallsFormOneGroup() throws {
        var body: [CaptureRecord] = []
        for id in UInt32(1)...100 {
            body += ReportFixtures.episode(id, at: UInt64(id) * 2_000, durationMs: UInt64(id) * 10, state: .busy,
                                           samples: [[ReportFixtures.height, ReportFixtures.pass, ReportFixtures.system]])
        }
        body += ReportFixtures.episode(101, at: 300_000, durationMs: 400, state: .busy, samples: [[ReportFixtures.systemLeaf]])
        let capture = try ReportFixtures.capture(ReportFixtures.records(body, recordedMs: 3_600_000), name: "groups")
        let report = StallReport(captures: [capture])
        #expect(report.groups.count == 2)
        #expect(report.groups[0].episodes.count == 100 && report.groups[1].episodes.count == 1)
        #expect(report.groups[0].fingerprint == "stall busy: \(Self.pass) > \(Self.height)")
        #expect(report.groups[0].profile.analyzedSamples == 100)
        #expect(report.episodes[100].group == 1 && report.episodes[0].group == 0)
        #expect(report.summary.p50Ms == 500 && report.summary.p90Ms == 900 && report.summary.maxMs == 1_000)
        // 50.5 s + 0.4 s frozen in one recorded hour.
        #expect(abs((report.summary.stallSecondsPerHour ?? 0) - 50.9) < 1e-6)
        let text = report.text()
        #expect(text.contains("100 alike stalls (busy, 51 s in all, max 1.000 s): stall 1, stall 2, stall 3,\n"
            + "  stall 4 and 96 more; 100 samples"))
        #expect(text.contains("101 episodes in 2 groups of alike stacks"))
        #expect(text.contains("\n40  ") && !text.contains("\n41  ") && text.contains("(61 more episodes; --json lists every one)"))
    }

    @Test func stacksReadFromMemoryAreCountedInTheTextAndTheJSON() throws {
        // Two alike blocked stalls, each with a stack read from memory whose walk stopped; summed for the group.
        var body: [CaptureRecord] = []
        for id in UInt32(1)...2 {
            var episode = ReportFixtures.episode(id, at: UInt64(id) * 2_000, durationMs: 500, state: .blocked, cpuPerMille: 0,
                                                 samples: [[ReportFixtures.pass, ReportFixtures.system]])
            if case .sample(var sample) = episode[1] {
                sample.flags = [.fromStackMemory, .walkStoppedNoUnwindInfo, .scannedFrames]
                episode[1] = .sample(sample)
            }
            body += episode
        }
        let capture = try ReportFixtures.capture(ReportFixtures.records(body), name: "memory-stacks")
        let report = StallReport(captures: [capture])
        #expect(report.episodes.map(\.memoryStacks?.noUnwindInfo) == [1, 1])
        let text = report.text()
        #expect(text.contains("stacks read from memory: 2; 2 stopped before the outermost frame (2 no unwind"), "\(text)")
        let root = try #require(try JSONSerialization.jsonObject(with: Data(report.json().utf8)) as? [String: Any])
        let episode = try #require((root["episodes"] as? [[String: Any]])?.first)
        let memory = try #require(episode["memoryStacks"] as? [String: Any])
        #expect(memory["samples"] as? Int == 1 && memory["scanned"] as? Int == 1)
        #expect(memory["stopped"] as? [String: Int] == ["noUnwindInfo": 1, "framePointer": 0, "unusable": 0])
    }

    @Test func textFitsEightyColumnsAndNamesTheSections() throws {
        let text = try report().text()
        for line in text.split(separator: "\n") { #expect(line.count <= 80, "\(line)") }
        #expect(text.contains("capture "))
        #expect(text.contains("started 2026-11-30 21:00:00.123 UTC"))
        #expect(text.contains("#  start (UTC)   kind       state    duration  active  cpu   samples  missed"))
        #expect(text.contains("1  21:00:02.123  stall      busy     1.000 s   100%    100%  10       1"))
        #expect(text.contains("2  21:00:05.123  saturated  busy"))
        #expect(text.contains("6 episodes: 5 stalls, 1 saturated (4 busy, 2 blocked), 5.300 s frozen in all"))
        #expect(text.contains("hang rate: 318.0 s frozen per hour of recorded time (60 s recorded)"))
        #expect(text.contains("  top self functions\n    80%   \(Self.height)"))
        #expect(text.contains("  app frames on the stack"))
        #expect(text.contains("    100%   20%    \(Self.pass)\n    80%    80%    \(Self.height)"))
        #expect(text.contains("  hint: no app code on the stack in 100 % of samples: the loop is in framework"))
    }

    @Test func unfinishedEpisodesAndEmptyCaptures() throws {
        let body = ReportFixtures.episode(1, at: 1_000, durationMs: 0, state: .busy,
                                          samples: Array(repeating: [ReportFixtures.height], count: 5), finished: false)
        let capture = try ReportFixtures.capture(ReportFixtures.records(body, recordedMs: nil), name: "unfinished")
        let report = StallReport(captures: [capture])
        #expect(report.episodes[0].unfinished && report.episodes[0].durationMs == 290)
        // Recorded to the last sample: 1.29 s.
        #expect(report.captures[0].recordedNs == 1_290_000_000)
        #expect(report.text().contains("* unfinished: the file ends during the episode"))
        let empty = StallReport(captures: [Capture(source: "e")])
        #expect(empty.summary.p50Ms == nil && empty.summary.stallSecondsPerHour == nil)
        #expect(empty.text().contains("0 episodes: 0 stalls, 0 saturated"))
    }

    @Test func versionOneCapturesReport() throws {
        let path = try ReportFixtures.write(ReportFixtures.mixedRecords(), name: "v2")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let v1 = ReportFixtures.versionOne(try CaptureReader.readWholeFile(path))
        let capture = try CaptureReader.parse(v1, source: "v1.stalls")
        let report = StallReport(captures: [capture])
        #expect(report.episodes.count == 6 && report.episodes.allSatisfy { $0.kind == .stall })
        #expect(report.summary.saturated == 0 && report.summary.stalls == 6)
        #expect(report.episodes[0].profile.appFrames.first?.function == Self.pass)
    }
}
