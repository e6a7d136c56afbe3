import CStallCapture
import Foundation
import StallFormat
import Synchronization
import Testing

@testable import StallProfiler

/// Per-thread marker rings on tables of the tests' own: a flooding thread cannot take another thread's most recent
/// markers, every loss is counted for the thread that made it, and rings go to new threads when theirs exit.
@Suite struct ThreadMarkerRingsTests {
    /// Pushes an instant named `name` whose span id is `sequence` (so a record read torn would not match).
    static func push(_ rings: ThreadMarkerRings, _ name: String, _ sequence: UInt64) {
        StallMarker.withName(name) { rings.push(kind: .instant, spanID: sequence, name: $0) }
    }

    /// Everything `rings` hands over now: records, and losses by tid.
    static func drain(_ rings: ThreadMarkerRings, isAlive: (Int32) -> Bool = { _ in true })
        -> (records: [MarkerRecord], lost: [Int32: UInt64])
    {
        var records: [MarkerRecord] = [], lost: [Int32: UInt64] = [:]
        rings.drain({ records.append($0) }, lost: { lost[$0, default: 0] += $1 }, isAlive: isAlive)
        if case let shared = rings.overflow.dropped.exchange(0, ordering: .relaxed), shared > 0 { lost[0, default: 0] += shared }
        return (records, lost)
    }

    @Test func aFlooderCannotTakeAThreadsMostRecentMarkersAndEveryLossIsCounted() throws {
        let depth = 8
        let rings = ThreadMarkerRings(threads: 4, depth: depth, overflow: MarkerRing(capacity: 16))
        let stop = Atomic<Bool>(false), flooded = Atomic<UInt64>(0), flooderTid = Atomic<Int32>(0)
        let done = DispatchSemaphore(value: 0)
        Thread {
            flooderTid.store(stallcap_gettid(), ordering: .relaxed)
            var sequence: UInt64 = 0
            while !stop.load(ordering: .relaxed) {
                Self.push(rings, "flood \(sequence % 1000)", sequence)
                sequence += 1
            }
            flooded.store(sequence, ordering: .relaxed)
            done.signal()
        }.start()
        while flooded.load(ordering: .relaxed) == 0 && flooderTid.load(ordering: .relaxed) == 0 { usleep(100) }
        let me = stallcap_gettid()
        var kept: [MarkerRecord] = [], lost: [Int32: UInt64] = [:]
        var roundEnds: [UInt64] = []
        var sequence: UInt64 = 0
        var round = 0
        while sequence < 3_000 {  // 3,000 markers in bursts of 1 to 19 between drains
            round += 1
            for _ in 0..<(round % 19 + 1) where sequence < 3_000 {
                Self.push(rings, "main \(sequence % 1000)", sequence)
                sequence += 1
            }
            roundEnds.append(sequence)
            let drained = Self.drain(rings)
            kept += drained.records
            lost.merge(drained.lost, uniquingKeysWith: +)
        }
        stop.store(true, ordering: .relaxed)
        done.wait()
        let last = Self.drain(rings)
        kept += last.records
        lost.merge(last.lost, uniquingKeysWith: +)

        let flooder = flooderTid.load(ordering: .relaxed)
        #expect(Set(kept.map(\.threadID)) == [me, flooder])
        for record in kept {
            let prefix = record.threadID == me ? "main " : "flood "
            #expect(record.name == prefix + "\(record.spanID % 1000)", "never a torn or mixed record")
        }
        let mine = kept.filter { $0.threadID == me }.map(\.spanID)
        #expect(mine.count == Set(mine).count, "none twice")
        // The most recent `depth` markers before every drain are kept.
        let mineSet = Set(mine)
        for end in roundEnds {
            let recent = UInt64(max(0, Int(end) - depth))..<end
            #expect(recent.allSatisfy(mineSet.contains), "round ending at \(end)")
        }
        #expect(UInt64(mine.count) + (lost[me] ?? 0) == 3_000, "kept and lost add up to what was marked")
        let floods = kept.filter { $0.threadID == flooder }.map(\.spanID)
        #expect(floods.count == Set(floods).count)
        #expect(UInt64(floods.count) + (lost[flooder] ?? 0) == flooded.load(ordering: .relaxed))
        #expect((lost[flooder] ?? 0) > 0, "the flooder lost markers, counted as its own")
        #expect(lost[0] == nil, "every thread had a ring")
    }

    @Test func aThreadWithoutAFreeRingUsesTheSharedRingUntilAnExitedThreadsRingIsFreed() throws {
        let rings = ThreadMarkerRings(threads: 1, depth: 8, overflow: MarkerRing(capacity: 2))
        rings.freeingIntervalNs = 0
        let exitedTid = Atomic<Int32>(0)
        let done = DispatchSemaphore(value: 0)
        Thread {
            exitedTid.store(stallcap_gettid(), ordering: .relaxed)
            Self.push(rings, "from a thread that exits", 1)
            done.signal()
        }.start()
        done.wait()
        let tid = exitedTid.load(ordering: .relaxed)
        for _ in 0..<5_000 where stallcap_thread_cpu_ns(tid) >= 0 { usleep(1_000) }  // until it has exited
        #expect(stallcap_thread_cpu_ns(tid) < 0, "its thread has exited")
        for sequence in 0..<5 { Self.push(rings, "without a ring", UInt64(sequence)) }
        // The shared ring took 2 of the 5; 3 were lost, under thread 0. The drain frees the exited thread's ring
        // after handing over its marker.
        let first = Self.drain(rings, isAlive: { stallcap_thread_cpu_ns($0) >= 0 })
        #expect(first.records.map(\.name).sorted() == ["from a thread that exits", "without a ring", "without a ring"])
        #expect(first.lost == [0: 3])
        for sequence in 0..<8 { Self.push(rings, "with a ring", UInt64(sequence)) }
        let second = Self.drain(rings)
        #expect(second.records.map(\.spanID) == Array(0..<8), "all 8 fit the ring this thread took")
        #expect(second.lost.isEmpty)
    }

    @Test func aThreadMovesAtMostItsSpillBudgetToTheSharedRingBetweenDrains() throws {
        let rings = ThreadMarkerRings(threads: 2, depth: 8, spillBudget: 20, overflow: MarkerRing(capacity: 64))
        for sequence in 0..<50 { Self.push(rings, "burst", UInt64(sequence)) }
        let first = Self.drain(rings)
        // The ring keeps the last 8; of the 42 older ones, the first 20 moved to the shared ring, 22 were lost.
        #expect(first.records.map(\.spanID).sorted() == Array(0..<20) + Array(42..<50))
        #expect(first.lost == [stallcap_gettid(): 22])
        for sequence in 0..<30 { Self.push(rings, "again", UInt64(sequence)) }
        let second = Self.drain(rings)
        #expect(second.records.count == 28 && second.lost == [stallcap_gettid(): 2], "the budget is per drain")
    }

    /// Every event published, in a thread's own ring or the shared one, raises the hint that ends the watchdog's
    /// quiet rests; a drain lowers it.
    static func hinted(_ rings: ThreadMarkerRings) -> Bool { rings.published.load(ordering: .relaxed) }

    @Test func publishingAnEventRaisesTheHintADrainLowersIt() throws {
        let rings = ThreadMarkerRings(threads: 1, depth: 8, overflow: MarkerRing(capacity: 16))
        #expect(!Self.hinted(rings))
        Self.push(rings, "own ring", 1)
        #expect(Self.hinted(rings))
        #expect(Self.drain(rings).records.count == 1)
        #expect(!Self.hinted(rings))
        // Another thread finds the one ring taken and publishes into the shared ring.
        let done = DispatchSemaphore(value: 0)
        Thread {
            Self.push(rings, "shared ring", 2)
            done.signal()
        }.start()
        done.wait()
        #expect(Self.hinted(rings))
        #expect(Self.drain(rings).records.map(\.spanID) == [2])
        #expect(!Self.hinted(rings))
    }

    /// The memory the watchdog's table holds, fixed when it is made: 64 rings of 32 slots of 88 bytes, each ring's
    /// positions and counts on a cache line of their own.
    @Test func theTableIsBoundedAndEachRingsStateHasACacheLine() {
        #expect(MemoryLayout<ThreadMarkerRings.RingState>.stride == 64)
        #expect(ThreadMarkerRings.defaultThreads * ThreadMarkerRings.defaultDepth * ThreadMarkerRings.slotWords * 8
            == 176 * 1024)
        let rings = ThreadMarkerRings(overflow: MarkerRing(capacity: 2))
        #expect(UInt(bitPattern: rings.rings) % 64 == 0 && UInt(bitPattern: rings.words) % 64 == 0)
    }

    /// What a forked child does (StallWatchdog's fork handler): every ring free and empty, the shared ring too,
    /// though their owners (the parent's other threads) never ended.
    @Test func resetInChildFreesEveryRingAndEmptiesTheSharedRing() throws {
        let rings = ThreadMarkerRings(threads: 1, depth: 4, overflow: MarkerRing(capacity: 2))
        let claimed = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        Thread {
            Self.push(rings, "other", 0)  // takes the only ring, and keeps it while it lives
            claimed.signal()
            release.wait()
        }.start()
        claimed.wait()
        defer { release.signal() }
        for sequence in 0..<3 { Self.push(rings, "mine", UInt64(sequence)) }  // no ring: the shared one, 1 lost
        rings.resetInChild()
        let none = Self.drain(rings)
        #expect(none.records.isEmpty && none.lost.isEmpty, "nothing from before the reset")
        for sequence in 0..<4 { Self.push(rings, "mine", UInt64(sequence)) }
        let after = Self.drain(rings)
        #expect(after.records.map(\.spanID) == [0, 1, 2, 3], "the ring is this thread's now")
        #expect(after.records.allSatisfy { $0.threadID == stallcap_gettid() } && after.lost.isEmpty)
    }

    @Test func aThreadGetsItsOwnRingBackAfterUsingAnotherTable() throws {
        let first = ThreadMarkerRings(threads: 1, depth: 8, overflow: MarkerRing(capacity: 1))
        let second = ThreadMarkerRings(threads: 1, depth: 8, overflow: MarkerRing(capacity: 1))
        Self.push(first, "a", 0)
        Self.push(second, "b", 0)
        for sequence in 1..<8 { Self.push(first, "a", UInt64(sequence)) }
        let drained = Self.drain(first)
        #expect(drained.records.map(\.spanID) == Array(0..<8), "one ring: the one it owned")
        #expect(drained.lost.isEmpty)
        #expect(Self.drain(second).records.map(\.name) == ["b"])
    }
}
