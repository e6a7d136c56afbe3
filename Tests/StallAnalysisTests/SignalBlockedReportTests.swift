import Foundation
import StallFormat
import Testing

@testable import StallAnalysis

/// Episodes whose thread blocks the capture signal (a signal-mask record that says so): the report says why they
/// have no stacks, in the text and as a `signal-blocked` hint in the JSON; and app markers lost per thread.
@Suite struct SignalBlockedReportTests {
    static let sigprof: UInt64 = 1 << 26

    /// A signal-mask record for episode `id`: `signal`, `mask`.
    static func mask(_ id: UInt32, at ms: UInt64, signal: Int32 = 27, _ mask: UInt64) -> CaptureRecord {
        .signalMask(SignalMaskRecord(stallID: id, timestampNs: ReportFixtures.startNs + ms * 1_000_000,
                                     threadID: 4242, signal: signal, blockedMask: mask))
    }

    static func records() -> [CaptureRecord] {
        let stack = [ReportFixtures.height, ReportFixtures.pass, ReportFixtures.system]
        return ReportFixtures.records(
            // 1 and 2: busy stalls of a thread that blocks SIGPROF (SIGINT too): no sample answered.
            ReportFixtures.episode(1, at: 2_000, durationMs: 1_000, state: .busy, samples: [], missed: 40)
            + [mask(1, at: 2_300, sigprof | 1 << 1)]
            + ReportFixtures.episode(2, at: 5_000, durationMs: 600, state: .busy, samples: [], missed: 20)
            + [mask(2, at: 5_300, sigprof), mask(2, at: 5_400, 0)]  // only the first look counts
            // 3: no samples either, but its thread does not block the signal (it slept outside a system call).
            + ReportFixtures.episode(3, at: 8_000, durationMs: 500, state: .blocked, cpuPerMille: 0, samples: [])
            + [mask(3, at: 8_300, 1 << 9)]
            // 4: stacks read from memory in system calls, the signal blocked otherwise.
            + ReportFixtures.episode(4, at: 11_000, durationMs: 800, state: .busy, samples: [stack, stack]).map(fromMemory)
            + [mask(4, at: 11_300, sigprof)]
            // 5: a capture signal other than SIGPROF.
            + ReportFixtures.episode(5, at: 14_000, durationMs: 400, state: .busy, samples: [])
            + [mask(5, at: 14_300, signal: 36, 1 << 35)]
            // 6: the signal took some samples: the thread blocked it only for a while.
            + ReportFixtures.episode(6, at: 17_000, durationMs: 900, state: .busy, samples: [stack])
            + [mask(6, at: 17_300, sigprof)])
    }

    /// `record` with its sample flagged as read from stack memory.
    static func fromMemory(_ record: CaptureRecord) -> CaptureRecord {
        guard case .sample(var sample) = record else { return record }
        sample.flags.insert(.fromStackMemory)
        return .sample(sample)
    }

    func report() throws -> StallReport {
        StallReport(captures: [try ReportFixtures.capture(Self.records(), name: "signal-blocked")])
    }

    @Test func theCaptureKeepsTheFirstMaskOfEachEpisode() throws {
        let capture = try ReportFixtures.capture(Self.records(), name: "signal-blocked-read")
        #expect(capture.stalls.map { $0.signalMask?.blocksSignal } == [true, true, false, true, true, true])
        #expect(capture.stalls[0].signalMask?.blockedMask == Self.sigprof | 2)
        #expect(capture.stalls[4].signalMask?.signal == 36)
    }

    @Test func eachEpisodeThatBlocksTheSignalHasTheHint() throws {
        let episodes = try report().episodes
        let hints = episodes.map { $0.profile.hints.filter { $0.kind == "signal-blocked" }.map(\.text) }
        #expect(hints[0] == ["the thread blocks SIGPROF: no stacks"])
        #expect(hints[1] == ["the thread blocks SIGPROF: no stacks"])
        #expect(hints[2].isEmpty, "a thread that does not block the signal has no such hint")
        #expect(hints[3] == ["the thread blocks SIGPROF: no stacks while it runs; the 2 samples with a stack were "
            + "read from its memory while it was in system calls"])
        #expect(hints[4] == ["the thread blocks SIGRTMIN+2: no stacks"], "the signal the capture used")
        #expect(hints[5] == ["the thread blocked SIGPROF for part of the episode: its stacks while it ran then are missing"])
        #expect(episodes[3].profile.hints.first?.kind == "signal-blocked", "first among the episode's hints")
    }

    @Test func theTextSaysWhyThereAreNoStacks() throws {
        let text = try report().text()
        #expect(text.contains("  no samples with a stack\n  hint: the thread blocks SIGPROF: no stacks\n"), "\(text)")
        #expect(text.contains("hint: the thread blocks SIGRTMIN+2: no stacks\n"))
        #expect(text.split(separator: "\n").allSatisfy { $0.count <= StallReport.textWidth })
    }

    @Test func theJSONHasASignalBlockedHintPerEpisodeAndGroup() throws {
        let json = try report().json()
        let root = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let episodes = try #require(root["episodes"] as? [[String: Any]])
        let kinds = episodes.map { (($0["hints"] as? [[String: Any]]) ?? []).compactMap { $0["kind"] as? String } }
        #expect(kinds.map { $0.contains("signal-blocked") } == [true, true, false, true, true, true])
        let first = try #require((episodes[0]["hints"] as? [[String: Any]])?.first)
        #expect(first["text"] as? String == "the thread blocks SIGPROF: no stacks")
        // Episodes 1 and 2 are alike (busy, no samples, SIGPROF blocked); 3 and 5 are not in their group.
        let groups = try #require(root["groups"] as? [[String: Any]])
        let blocked = try #require(groups.first { ($0["count"] as? Int) == 2 })
        #expect((blocked["episodes"] as? [[String: Any]])?.compactMap { $0["id"] as? Int } == [1, 2])
        #expect((blocked["hints"] as? [[String: Any]])?.first?["kind"] as? String == "signal-blocked")
        #expect((blocked["fingerprint"] as? String)?.hasSuffix("; blocks SIGPROF") == true)
    }

    @Test func signalNames() {
        #expect(SignalNames.name(27) == "SIGPROF" && SignalNames.name(10) == "SIGUSR1" && SignalNames.name(12) == "SIGUSR2")
        #expect(SignalNames.name(34) == "SIGRTMIN" && SignalNames.name(64) == "SIGRTMIN+30")
        #expect(SignalNames.name(0) == "signal 0" && SignalNames.name(99) == "signal 99" && SignalNames.name(-1) == "signal -1")
        #expect(!SignalMaskRecord(stallID: 1, timestampNs: 0, threadID: 1, signal: 65, blockedMask: .max).blocksSignal)
        #expect(!SignalMaskRecord(stallID: 1, timestampNs: 0, threadID: 1, signal: 0, blockedMask: .max).blocksSignal)
        #expect(SignalMaskRecord(stallID: 1, timestampNs: 0, threadID: 1, signal: 64, blockedMask: 1 << 63).blocksSignal)
    }

    @Test func markersLostAreShownPerThread() throws {
        let lost = { (count: UInt64, tid: Int32) in
            CaptureRecord.marker(MarkerRecord(kind: .dropped, spanID: count, threadID: tid,
                                              timestampNs: ReportFixtures.startNs + 1_000_000, name: ""))
        }
        let records = ReportFixtures.records([lost(2_000, 4300), lost(950, 4300), lost(3, 4242), lost(7, 0)])
        let capture = try ReportFixtures.capture(records, name: "markers-lost")
        #expect(capture.droppedMarkers == 2_960)
        #expect(capture.droppedMarkersByThread == [4300: 2_950, 4242: 3, 0: 7])
        #expect(capture.warnings.contains { $0.hasSuffix("2960 app markers were lost (the app marked faster than the "
            + "watchdog drained them): 2950 of thread 4300, 7 of threads without a ring of their own, 3 of thread 4242") },
            "\(capture.warnings)")
        let report = StallReport(captures: [capture])
        #expect(report.captures[0].markersLost.map(\.tid) == [4300, 0, 4242])
        #expect(report.text().contains("  app markers lost (marked faster than the watchdog drained them): 2950 of\n"
            + "    thread 4300, 7 of threads without a ring of their own, 3 of thread 4242\n"), "\(report.text())")
        let root = try #require(try JSONSerialization.jsonObject(with: Data(report.json().utf8)) as? [String: Any])
        let captures = try #require(root["captures"] as? [[String: Any]])
        let entries = try #require(captures[0]["markersLost"] as? [[String: Any]])
        #expect(entries.compactMap { $0["tid"] as? Int } == [4300, 0, 4242])
        #expect(entries.compactMap { $0["count"] as? Int } == [2_950, 7, 3])
    }
}
