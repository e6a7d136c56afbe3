import CStallCapture
import StallFormat
import Synchronization

/// A small ring of ``StallMarker`` events per thread, so that a thread that floods markers cannot take another
/// thread's place: each thread's most recent ``defaultDepth`` markers before each drain of the watchdog are kept,
/// whatever other threads do.
///
/// A fixed table of ``defaultThreads`` rings, allocated once (at the first watchdog start) and kept for the life
/// of the process. A thread takes a free ring the first time it marks (a compare-and-swap on the ring's owner;
/// its index is kept in a thread-local word, `stallcap_marker_ring_slot`) and is its only producer. When its ring
/// is full, the thread takes its oldest event back (a compare-and-swap on the ring's head, which the watchdog's
/// reads race for) and moves it to the shared ring (``MarkerRing``, first come first served, at most
/// ``defaultSpillBudget`` per thread between two drains), or counts it as lost, in its own ring's count; then it
/// writes the new event in its place. Slots are atomic words, so a read
/// racing such a take-back is never a data race: the watchdog keeps what it read only when its own
/// compare-and-swap on the head succeeds. Threads that find no free ring use the shared ring alone (losses
/// counted under thread 0); they look again after the watchdog frees the rings of threads that have exited. No
/// producer ever waits, allocates, takes a lock or makes a system call.
final class ThreadMarkerRings: @unchecked Sendable {
    /// Threads with a ring of their own at a time.
    static let defaultThreads = 64
    /// Markers one thread's ring holds: N, the most recent markers of each thread kept before each drain.
    static let defaultDepth = 32
    /// Words of one slot: kind, name length and tid; span id; time; the name's 64 bytes.
    static let slotWords = 11
    /// Older events one thread may move to the shared ring between two drains (a quarter of it), so that a flood
    /// cannot fill it either: its older events past that are lost, and counted.
    static let defaultSpillBudget: UInt64 = 256

    /// The rings StallMarker uses; created by the first watchdog start, before markers are first recorded.
    static let shared = ThreadMarkerRings(overflow: MarkerRing.shared)
    /// Tags of the tables made so far, so that a thread's word names the table it belongs to (tests make their own).
    private static let tags = Atomic<Int32>(0)

    /// Rings in the table, and slots per ring (a power of two).
    let threads: Int, depth: Int
    /// Events one ring may move to the shared ring between two drains.
    let spillBudget: UInt64
    /// Where a thread's older events go when its ring is full, and where threads without a ring put theirs.
    let overflow: MarkerRing
    private let tag: Int32
    private let owners: UnsafeMutablePointer<Atomic<Int32>>
    private let heads: UnsafeMutablePointer<Atomic<UInt64>>
    private let tails: UnsafeMutablePointer<Atomic<UInt64>>
    private let lost: UnsafeMutablePointer<Atomic<UInt64>>
    /// Events each ring moved to the shared ring since the last drain.
    private let spilled: UnsafeMutablePointer<Atomic<UInt64>>
    private let words: UnsafeMutablePointer<Atomic<UInt64>>
    /// Bumped when the watchdog frees rings: a thread that found none free looks again.
    private let generation = Atomic<Int32>(0)
    /// Set by a thread that found no free ring: the watchdog then frees the rings of exited threads.
    private let wanted = Atomic<Bool>(false)

    /// A table of `threads` rings of `depth` slots (a power of two). The watchdog uses ``shared``; tests make their
    /// own.
    init(
        threads: Int = defaultThreads, depth: Int = defaultDepth, spillBudget: UInt64 = defaultSpillBudget,
        overflow: MarkerRing
    ) {
        precondition(threads > 0 && threads < 0x8000 && depth > 0 && depth & (depth - 1) == 0)
        self.threads = threads
        self.depth = depth
        self.spillBudget = spillBudget
        self.overflow = overflow
        tag = (Self.tags.add(1, ordering: .relaxed).newValue - 1) % 0x7fff + 1
        owners = .allocate(capacity: threads)
        heads = .allocate(capacity: threads)
        tails = .allocate(capacity: threads)
        lost = .allocate(capacity: threads)
        spilled = .allocate(capacity: threads)
        for index in 0..<threads {
            (owners + index).initialize(to: Atomic(0))
            (heads + index).initialize(to: Atomic(0))
            (tails + index).initialize(to: Atomic(0))
            (lost + index).initialize(to: Atomic(0))
            (spilled + index).initialize(to: Atomic(0))
        }
        let count = threads * depth * Self.slotWords
        words = .allocate(capacity: count)
        for index in 0..<count { (words + index).initialize(to: Atomic(0)) }
    }

    deinit {
        for pointer in [heads, tails, lost, spilled] {
            pointer.deinitialize(count: threads)
            pointer.deallocate()
        }
        owners.deinitialize(count: threads)
        owners.deallocate()
        words.deinitialize(count: threads * depth * Self.slotWords)
        words.deallocate()
    }

    /// Records one event of the calling thread, now. `name` is at most ``MarkerRecord/maxNameBytes`` bytes.
    func push(kind: MarkerRecord.Kind, spanID: UInt64, name: UnsafeRawBufferPointer) {
        let tid = stallcap_cached_tid()
        let now = stallcap_monotonic_ns()
        guard let ring = ring(of: tid) else {
            if !overflow.push(kind: kind.rawValue, spanID: spanID, threadID: tid, timestampNs: now, name: name) {
                overflow.dropped.add(1, ordering: .relaxed)
            }
            return
        }
        let position = tails[ring].load(ordering: .acquiring)
        if position >= UInt64(depth) {
            // Full unless the watchdog has read the oldest: take it back from its reads, and pass it on.
            let oldest = position - UInt64(depth)
            var head = heads[ring].load(ordering: .acquiring)
            while head <= oldest {
                let (taken, current) = heads[ring].compareExchange(
                    expected: head, desired: head + 1, ordering: .acquiringAndReleasing)
                if taken {
                    spill(ring: ring, position: oldest)
                    break
                }
                head = current
            }
        }
        let slot = self.slot(ring: ring, position: position)
        let length = min(name.count, MarkerRecord.maxNameBytes)
        slot[0].store(UInt64(kind.rawValue) | UInt64(length) << 8 | UInt64(UInt32(bitPattern: tid)) << 32,
                      ordering: .relaxed)
        slot[1].store(spanID, ordering: .relaxed)
        slot[2].store(now, ordering: .relaxed)
        var text: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &text) { bytes in
            if let base = name.baseAddress { bytes.baseAddress!.copyMemory(from: base, byteCount: length) }
        }
        withUnsafeBytes(of: &text) { bytes in
            for word in 0..<(length + 7) / 8 {
                slot[3 + word].store(bytes.load(fromByteOffset: word * 8, as: UInt64.self), ordering: .relaxed)
            }
        }
        tails[ring].store(position + 1, ordering: .releasing)
    }

    /// The calling thread's ring (`tid` is its kernel tid), taken now if it has none; nil when none is free.
    private func ring(of tid: Int32) -> Int? {
        let word = stallcap_marker_ring_slot()
        let field = Int(word & 0xffff)
        if word >> 16 == tag && field >= 1 && field <= threads { return field - 1 }
        let current = generation.load(ordering: .acquiring) & 0x7fff
        if word >> 16 == tag && field == 0x8000 | Int(current) { return nil }  // none free, none freed since
        for index in 0..<threads {
            let owner = owners[index].load(ordering: .acquiring)
            // A ring owned by this tid belonged to a thread that has exited (tids are unique among live threads),
            // or to this thread before its word named another table: it is this thread's now.
            if owner == tid
                || (owner == 0
                    && owners[index].compareExchange(expected: 0, desired: tid, ordering: .acquiringAndReleasing)
                        .exchanged)
            {
                stallcap_set_marker_ring_slot(tag << 16 | Int32(index + 1))
                return index
            }
        }
        stallcap_set_marker_ring_slot(tag << 16 | 0x8000 | current)
        wanted.store(true, ordering: .relaxed)
        return nil
    }

    /// The slot of `position` in ring `ring`.
    private func slot(ring: Int, position: UInt64) -> UnsafeMutablePointer<Atomic<UInt64>> {
        words + (ring * depth + Int(position & UInt64(depth - 1))) * Self.slotWords
    }

    /// Moves the event at `position` (taken back by its producer) to the shared ring, or counts it as lost when
    /// the ring has used its spill budget or the shared ring is full.
    private func spill(ring: Int, position: UInt64) {
        guard spilled[ring].add(1, ordering: .relaxed).newValue <= spillBudget else {
            lost[ring].add(1, ordering: .relaxed)
            return
        }
        let slot = self.slot(ring: ring, position: position)
        let header = slot[0].load(ordering: .relaxed)
        var text: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
        let length = Self.name(of: slot, into: &text)
        let moved = withUnsafeBytes(of: &text) { bytes in
            overflow.push(
                kind: UInt8(truncatingIfNeeded: header), spanID: slot[1].load(ordering: .relaxed),
                threadID: Int32(bitPattern: UInt32(truncatingIfNeeded: header >> 32)),
                timestampNs: slot[2].load(ordering: .relaxed),
                name: UnsafeRawBufferPointer(rebasing: bytes[0..<length]))
        }
        if !moved { lost[ring].add(1, ordering: .relaxed) }
    }

    /// Copies the name words of `slot` into `text`; returns the name's length in bytes.
    private static func name(
        of slot: UnsafeMutablePointer<Atomic<UInt64>>,
        into text: inout (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)
    ) -> Int {
        let length = min(Int((slot[0].load(ordering: .relaxed) >> 8) & 0xff), MarkerRecord.maxNameBytes)
        withUnsafeMutableBytes(of: &text) { bytes in
            for word in 0..<(length + 7) / 8 {
                bytes.storeBytes(of: slot[3 + word].load(ordering: .relaxed), toByteOffset: word * 8, as: UInt64.self)
            }
        }
        return length
    }
}

/// The consumer's side: the watchdog thread (or `StallWatchdog.start` while no watchdog thread runs).
extension ThreadMarkerRings {
    /// Hands the events published in every thread's ring to `body` (each ring up to where its producer had got
    /// when the ring's turn came, so a flood cannot keep the watchdog here), then each ring's losses since the last
    /// drain to `lost` (the owner's tid, the count); then the shared ring's events, at most one ring's worth.
    /// `isAlive` is asked about owners only when a thread found no free ring: the rings of exited threads are
    /// freed then (after their last events are read).
    func drain(_ body: (MarkerRecord) -> Void, lost report: (Int32, UInt64) -> Void, isAlive: (Int32) -> Bool) {
        let freeing = wanted.exchange(false, ordering: .relaxed)
        var freed = false
        for ring in 0..<threads {
            let owner = owners[ring].load(ordering: .acquiring)
            let exited = freeing && owner != 0 && !isAlive(owner)
            let end = tails[ring].load(ordering: .acquiring)
            var head = heads[ring].load(ordering: .acquiring)
            while head < end {
                let record = self.record(ring: ring, position: head)
                let (kept, current) = heads[ring].compareExchange(
                    expected: head, desired: head + 1, ordering: .acquiringAndReleasing)
                if kept {
                    body(record)
                    head += 1
                } else {
                    head = current  // its producer took it back meanwhile (and passed it on or counted it)
                }
            }
            spilled[ring].store(0, ordering: .relaxed)
            let count = lost[ring].exchange(0, ordering: .relaxed)
            if count > 0 { report(owner, count) }
            if exited {
                owners[ring].store(0, ordering: .releasing)
                freed = true
            }
        }
        if freed { generation.add(1, ordering: .releasing) }
        overflow.drain(body)
    }

    /// The event at `position` of ring `ring`, as read now (valid only if the head is still there afterwards).
    private func record(ring: Int, position: UInt64) -> MarkerRecord {
        let slot = self.slot(ring: ring, position: position)
        let header = slot[0].load(ordering: .relaxed)
        var text: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
        let length = Self.name(of: slot, into: &text)
        let name = withUnsafeBytes(of: &text) { String(decoding: $0[0..<length], as: UTF8.self) }
        return MarkerRecord(
            kind: MarkerRecord.Kind(rawValue: UInt8(truncatingIfNeeded: header)) ?? .instant,
            spanID: slot[1].load(ordering: .relaxed),
            threadID: Int32(bitPattern: UInt32(truncatingIfNeeded: header >> 32)),
            timestampNs: slot[2].load(ordering: .relaxed), name: name)
    }

    /// Starts recording for a new watchdog: discards what an earlier one left in every ring and its loss counts,
    /// then lets markers in (``MarkerRing/start()``). Rings stay with their threads.
    func start() {
        drain({ _ in }, lost: { _, _ in }, isAlive: { _ in true })
        overflow.start()
    }

    /// In the child of a fork, where only the forking thread exists (its ring word is reset by `marker.c`): every
    /// ring is free and empty again, and so is the shared ring.
    func resetInChild() {
        for ring in 0..<threads {
            owners[ring].store(0, ordering: .relaxed)
            heads[ring].store(tails[ring].load(ordering: .relaxed), ordering: .relaxed)
            lost[ring].store(0, ordering: .relaxed)
            spilled[ring].store(0, ordering: .relaxed)
        }
        generation.add(1, ordering: .relaxed)
        overflow.resetInChild()
    }
}
