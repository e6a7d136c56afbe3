import Foundation
import StallFormat
import StallTestSupport
import Testing

@testable import StallAnalysis

/// `mainQueueTurns` (issue 18): one long block, a few long ones, or a flood of short ones, told from the samples'
/// turns; lengths only where the turns can be trusted to be one block each.
@Suite struct QueueTurnsTests {
    /// Samples 10 ms apart with these turns; `waited[i]`: the thread's cumulative wait for a CPU at sample i, ms.
    func samples(_ turns: [UInt64], waited: [UInt64] = []) -> [Sample] {
        turns.enumerated().map { index, turn in
            Sample(timestampNs: 1_000_000_000 + UInt64(index) * 10_000_000, threadCPUNs: 0,
                   runQueueNs: index < waited.count ? waited[index] * 1_000_000 : 0, flags: [.queueCodeKnown],
                   frames: [1], turn: turn)
        }
    }

    /// A short block the scheduler preempted is sampled twice (a sample comes when the thread runs again), with the
    /// wait for a CPU between: that wait is not its time, so it is short, and a flood of such blocks is a flood.
    @Test func aPreemptedShortBlockIsShortNotLong() throws {
        // 20 blocks; blocks 5 and 12 sampled twice, 9.8 ms of the 10 ms between in the run queue.
        var turns: [UInt64] = [], waited: [UInt64] = []
        var wait: UInt64 = 0
        for block in 1...20 {
            turns.append(UInt64(block)); waited.append(wait)
            if block == 5 || block == 12 {
                wait += 10  // the whole gap (rounded to ms): active time 0
                turns.append(UInt64(block)); waited.append(wait)
            }
        }
        let flood = try #require(QueueTurns(samples(turns, waited: waited), queueAnswered: false))
        #expect(flood.turns == 20 && flood.medianMs == nil && flood.longestMs == nil && flood.isFlood)
        // Without the wait (unknown, or it ran), the same samples show two blocks that lasted.
        let ran = try #require(QueueTurns(samples(turns), queueAnswered: false))
        #expect(ran.longestMs == 20 && ran.medianMs == nil && ran.isFlood)
        #expect(ran.line == "main queue: at least 20 blocks, most shorter than the 10 ms between samples; the longest about 20 ms")
        // One block, sampled twice, that only waited for a CPU between.
        let one = try #require(QueueTurns(samples([3, 3], waited: [0, 10]), queueAnswered: false))
        #expect(one.line == "main queue: 1 block, shorter than the 10 ms between samples")
    }

    @Test func oneTurnThroughoutIsOneLongBlock() throws {
        let turns = try #require(QueueTurns(samples(Array(repeating: 7, count: 50)), queueAnswered: false))
        #expect(turns.turns == 1 && turns.samples == 50 && !turns.reused && !turns.isFlood)
        #expect(turns.intervalMs == 10)
        #expect(turns.medianMs == 500)  // 490 ms from the first sample to the last, plus one interval
        #expect(turns.line == "main queue: 1 long block (about 0.500 s)")
    }

    /// A thread starved of CPU (hogs on every core) is signalled only after it made some progress, so its samples
    /// come far apart in wall time, nearly all of it a wait for a CPU: a sample stands for the time the thread got,
    /// and one block in every sample is one long block of that much, not a short one (seen in CI under
    /// ThreadSanitizer: a busy 800 ms stall sampled 6 times, 111 ms apart, 9 ms of each gap running).
    @Test func aStarvedThreadsOneBlockIsLongByTheTimeItGot() throws {
        let starved = (0..<6).map { index in
            Sample(timestampNs: 1_000_000_000 + UInt64(index) * 110_000_000, threadCPUNs: 0,
                   runQueueNs: UInt64(index) * 100_000_000, flags: [.queueCodeKnown], frames: [1], turn: 7)
        }
        let turns = try #require(QueueTurns(starved, queueAnswered: false))
        #expect(turns.intervalMs == 110 && turns.ranIntervalMs == 10)
        #expect(turns.longestMs == 60 && turns.medianMs == 60)  // 5 gaps of 10 ms, plus one
        #expect(turns.line == "main queue: 1 long block (about 0.060 s)")
        // A flood on a starved thread: each block in one sample, however far apart.
        let flood = (0..<20).map { index in
            Sample(timestampNs: 1_000_000_000 + UInt64(index) * 110_000_000, threadCPUNs: 0,
                   runQueueNs: UInt64(index) * 100_000_000, flags: [.queueCodeKnown], frames: [1], turn: UInt64(index + 1))
        }
        let many = try #require(QueueTurns(flood, queueAnswered: false))
        #expect(many.isFlood && many.line == "main queue: at least 20 blocks, most shorter than the 110 ms between samples")
    }

    @Test func aFewLongBlocksHaveAMedianLength() throws {
        // Three blocks: 3, 5 and 10 samples; samples without a turn (between blocks) are skipped.
        let list: [UInt64] = [1, 1, 1, 0, 2, 2, 2, 2, 2, 0, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3]
        let turns = try #require(QueueTurns(samples(list), queueAnswered: false))
        #expect(turns.turns == 3 && turns.samples == 18)
        #expect(turns.medianMs == 50)
        #expect(turns.longestMs == 100)
        #expect(turns.line == "main queue: at least 3 blocks, median about 50 ms; the longest about 100 ms")
        // A long block and a short one after it: the median is the long one, not "most shorter than...".
        let tail = try #require(QueueTurns(samples(Array(repeating: 4, count: 30) + [5]), queueAnswered: false))
        #expect(tail.medianMs == 300 && tail.longestMs == 300)
        #expect(!turns.isFlood)
    }

    @Test func aFloodIsManyBlocksEachSeenOnce() throws {
        let turns = try #require(QueueTurns(samples((1...40).map { UInt64($0) * 0x1000 }), queueAnswered: false))
        #expect(turns.turns == 40 && turns.medianMs == nil && turns.isFlood)
        #expect(turns.line == "main queue: at least 40 blocks, most shorter than the 10 ms between samples")
        let hint = turns.floodHint(entry: "closure #1 @Swift.MainActor @Sendable () -> () in static Feed.poll() -> ()")
        #expect(hint.kind == "flood")
        #expect(hint.text == "the main queue ran at least 40 short blocks back to back (most shorter than the 10 ms "
            + "between samples); each runs closure #1 in static Feed.poll() -> (): find what enqueues it so often")
        // Nine blocks are not yet a flood.
        #expect(QueueTurns(samples((1...9).map { UInt64($0) }), queueAnswered: false)?.isFlood == false)
    }

    @Test func aTurnThatComesBackMeansReusedMemoryAndNoLengths() throws {
        // A block that enqueues the next one: two allocations take turns, so runs may merge blocks.
        let turns = try #require(QueueTurns(samples([1, 1, 2, 1, 1, 2, 2, 1, 2, 1, 1, 2]), queueAnswered: false))
        #expect(turns.reused && turns.medianMs == nil && turns.longestMs == nil)
        #expect(turns.turns == 8 && !turns.isFlood)  // 8 of 12 samples changed block: under three in four
        #expect(turns.line.hasPrefix("main queue: at least 8 blocks (samples in a row in one block may be several"))
        // Three in four samples in another block than the one before: a flood even so.
        let flood = try #require(QueueTurns(samples([1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3]), queueAnswered: false))
        #expect(flood.reused && flood.isFlood && flood.line.contains("most shorter than the 10 ms between samples"))
    }

    @Test func aSaturatedEpisodeClaimsNoLengths() throws {
        // The queue answered pings, so one turn in every sample is a block or source run again and again.
        let turns = try #require(QueueTurns(samples(Array(repeating: 5, count: 20)), queueAnswered: true))
        #expect(turns.reused && turns.medianMs == nil)
        #expect(turns.line == "main queue: one block or source in every sample, run again and again (the queue turned meanwhile)")
    }

    /// Samples that cannot say (repeated, read from memory, a walk that could not tell) are skipped; a signalled
    /// sample without a turn was outside any block: the block before it ended.
    @Test func samplesThatCannotSayAreSkippedAndOnesOutsideABlockEndIt() throws {
        var list = samples([5, 5, 0, 5, 5, 5])
        list[2].flags = [.repeated]  // too little progress to be signalled: it may have run other short blocks
        let skipped = try #require(QueueTurns(list, queueAnswered: false))
        #expect(skipped.turns == 1 && skipped.samples == 5 && skipped.signalled == 5 && !skipped.reused)
        // A walk that could not reach libdispatch's frame, were it there: through frame pointers, truncated, or
        // stopped short (under ThreadSanitizer, from a stale context, in the middle of a block).
        for cannotTell: SampleFlags in [.framePointers, .truncated, .walkStoppedNoUnwindInfo, .walkStoppedUnusable] {
            list[2].flags = [.queueCodeKnown, cannotTell]
            let one = try #require(QueueTurns(list, queueAnswered: false))
            #expect(one.turns == 1 && !one.reused && one.longestMs != nil, "\(cannotTell)")
        }
        list[2].flags = []  // an older capture, or a static build: libdispatch's code not known, a turn of 0 says nothing
        #expect(QueueTurns(list, queueAnswered: false)?.turns == 1)
        list[2].flags = [.queueCodeKnown]  // a walk with unwind information, no edge into libdispatch: outside any block
        let split = try #require(QueueTurns(list, queueAnswered: false))
        #expect(split.turns == 2 && split.reused && split.signalled == 6)
    }

    /// When most signalled samples were in no queued block (a run-loop source, a timer), no block is "the" stall.
    @Test func fewSamplesInBlocksClaimNoLongBlock() throws {
        let turns = try #require(QueueTurns(samples(Array(repeating: 0, count: 10) + [7, 7, 7]), queueAnswered: false))
        #expect(!turns.mostlyInBlocks && !turns.isFlood)
        #expect(turns.line == "main queue: only 3 of 13 samples in a queued block (the others in a run-loop source, "
            + "a timer or between blocks), in at least 1 block")
    }

    /// A stall in a run-loop timer's callback (Foundation's `Timer`): no sample in any queued block.
    @Test func noSampleInABlockSaysSo() throws {
        let turns = try #require(QueueTurns(samples([0, 0, 0, 0]), queueAnswered: false))
        #expect(turns.turns == 0 && turns.medianMs == nil && turns.longestMs == nil && !turns.isFlood)
        #expect(turns.line == "main queue: no sample in a queued block (all 4 in a run-loop source, a timer or between blocks)")
    }

    @Test func fewerThanTwoSamplesThatCanTellSayNothing() {
        var old = samples([0, 0, 0, 9])
        for index in old.indices { old[index].flags = [] }  // written before turns, or by a static build
        #expect(QueueTurns(old, queueAnswered: false) == nil)
        #expect(QueueTurns(samples([9]), queueAnswered: false) == nil)
        #expect(QueueTurns([], queueAnswered: false) == nil)
    }

    @Test func theBlockEntryIsTheFirstFrameAfterLibdispatchAndThunks() {
        let stack = ["main", "CFRunLoopRun", "_dispatch_main_queue_callback_4CF", "_dispatch_call_block_and_release",
                     "thunk for @escaping @callee_guaranteed @Sendable () -> ()",
                     "closure #1 @Swift.MainActor @Sendable () -> () in static Feed.poll() -> ()", "Feed.tiny()"]
        #expect(QueueTurns.blockEntry(rootFirst: stack) == stack[5])
        let job = ["_dispatch_main_queue_callback_4CF", "swift_job_run",
                   "_ZN5swift34runJobInEstablishedExecutorContextEPNS_3JobE", "(1) suspend resume partial function for App.load()"]
        #expect(QueueTurns.blockEntry(rootFirst: job) == job[3])
        let tsan = ["_dispatch_main_queue_callback_4CF", "_ZN6__tsanL22dispatch_callback_wrapEPv",
                    "_dispatch_call_block_and_release", "thunk for @escaping @callee_guaranteed () -> ()", "Feed.poll()"]
        #expect(QueueTurns.blockEntry(rootFirst: tsan) == "Feed.poll()")
        #expect(QueueTurns.blockEntry(rootFirst: ["main", "spin()"]) == nil)
        #expect(QueueTurns.blockEntry(rootFirst: ["main", "_dispatch_main_queue_callback_4CF"]) == nil)
        #expect(QueueTurns.withoutClosureType("closure #12 (Swift.Int) -> () in Feed.load()") == "closure #12 in Feed.load()")
        #expect(QueueTurns.withoutClosureType("Feed.load()") == "Feed.load()")
    }

    /// Through the capture file and `report`: JSON keys, the text line, the flood hint and its own group.
    @Test func theReportSaysItAndAFloodGroupsApart() throws {
        let stack = [ReportFixtures.pass, ReportFixtures.system]
        let flood = ReportFixtures.episode(
            1, at: 1_000, durationMs: 600, state: .busy, samples: Array(repeating: stack, count: 30),
            turns: (1...30).map { UInt64($0) })
        let long = ReportFixtures.episode(
            2, at: 5_000, durationMs: 600, state: .busy, samples: Array(repeating: stack, count: 30),
            turns: Array(repeating: 99, count: 30))
        let capture = try ReportFixtures.capture(ReportFixtures.records(flood + long), name: "turns")
        let report = StallReport(captures: [capture])
        #expect(report.groups.count == 2)
        let text = report.text()
        #expect(text.contains("main queue: at least 30 blocks, most shorter than the 10 ms between samples"))
        #expect(text.contains("main queue: 1 long block (about 0.300 s)"))
        #expect(text.contains("hint: the main queue ran at least 30 short blocks back to back"))
        let root = try #require(try JSONSerialization.jsonObject(with: Data(report.json().utf8)) as? [String: Any])
        let episodes = try #require(root["episodes"] as? [[String: Any]])
        #expect(episodes[0]["mainQueueTurns"] as? Int == 30 && episodes[0]["medianTurnMs"] is NSNull)
        #expect(episodes[0]["turnIntervalMs"] as? Double == 10 && episodes[0]["turnsReused"] as? Bool == false)
        #expect((episodes[0]["hints"] as? [[String: Any]])?.contains { $0["kind"] as? String == "flood" } == true)
        #expect(episodes[1]["mainQueueTurns"] as? Int == 1 && episodes[1]["medianTurnMs"] as? Double == 300)
        #expect((episodes[1]["hints"] as? [[String: Any]])?.contains { $0["kind"] as? String == "flood" } == false)
    }

    /// Two flood episodes alike make one group, whose hint counts the blocks of both.
    @Test func aGroupsFloodHintCountsEveryEpisode() throws {
        let stack = [ReportFixtures.pass, ReportFixtures.system]
        let records = [(1, 1_000, 1), (2, 3_000, 100)].flatMap { id, at, first in
            ReportFixtures.episode(
                UInt32(id), at: UInt64(at), durationMs: 400, state: .busy, samples: Array(repeating: stack, count: 15),
                turns: (0..<15).map { UInt64(first + $0) })
        }
        let report = StallReport(captures: [try ReportFixtures.capture(ReportFixtures.records(records), name: "floods")])
        #expect(report.groups.count == 1)
        let hint = try #require(report.groups.first?.profile.hints.first { $0.kind == "flood" })
        #expect(hint.text.hasPrefix("the main queue ran at least 30 short blocks back to back"), "\(hint.text)")
        #expect(report.text().contains("main queue: at least 30 blocks, most shorter than the 10 ms between samples"))
    }
}
