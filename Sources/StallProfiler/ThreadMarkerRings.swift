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
    /// Each ring's owner, positions and counts, a cache line each.
    let rings: UnsafeMutablePointer<RingState>
    /// The rings' slots, `depth` of ``slotWords`` words per ring, ring after ring.
    let words: UnsafeMutablePointer<Atomic<UInt64>>
    /// `lost` of each ring as last reported (the consumer's alone).
    let lostReported: UnsafeMutablePointer<UInt64>
    /// Bumped when the watchdog frees rings: a thread that found none free looks again.
    let generation = Atomic<Int32>(0)
    /// Set by a thread that found no free ring: the watchdog then frees the rings of exited threads (it stays set
    /// until one is freed).
    let wanted = Atomic<Bool>(false)
    /// Set by a thread that recorded an event, cleared by each drain: a hint that ends the watchdog's quiet rests
    /// early (WatchdogLoop+DeepSleep), so events are drained within a threshold while the main thread idles. A
    /// hint lost to a race with a drain only waits for the watchdog's next step.
    let published = Atomic<Bool>(false)
    /// Least time between two looks for exited owners (each look reads every owner's CPU clock). Default: 1 s.
    var freeingIntervalNs: UInt64 = 1_000_000_000
    /// When the consumer last looked for exited owners (monotonic nanoseconds).
    var lastFreeingNs: UInt64? = nil

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
        rings = UnsafeMutableRawPointer.allocate(byteCount: threads * MemoryLayout<RingState>.stride, alignment: 64)
            .bindMemory(to: RingState.self, capacity: threads)
        for index in 0..<threads { (rings + index).initialize(to: RingState()) }
        lostReported = .allocate(capacity: threads)
        lostReported.initialize(repeating: 0, count: threads)
        let count = threads * depth * Self.slotWords
        words = UnsafeMutableRawPointer.allocate(byteCount: count * 8, alignment: 64)
            .bindMemory(to: Atomic<UInt64>.self, capacity: count)
        for index in 0..<count { (words + index).initialize(to: Atomic(0)) }
    }

    deinit {
        rings.deinitialize(count: threads)
        rings.deallocate()
        lostReported.deallocate()
        words.deinitialize(count: threads * depth * Self.slotWords)
        words.deallocate()
    }

    /// Records one event of the calling thread, now. `name` is at most ``MarkerRecord/maxNameBytes`` bytes.
    func push(kind: MarkerRecord.Kind, spanID: UInt64, name: UnsafeRawBufferPointer) {
        defer { if !published.load(ordering: .relaxed) { published.store(true, ordering: .relaxed) } }
        let tid = stallcap_cached_tid()
        let now = stallcap_monotonic_ns()
        guard let ring = ring(of: tid) else {
            if !overflow.push(kind: kind.rawValue, spanID: spanID, threadID: tid, timestampNs: now, name: name) {
                overflow.dropped.add(1, ordering: .relaxed)
            }
            return
        }
        let position = rings[ring].tail.load(ordering: .acquiring)
        if position >= UInt64(depth) {
            // Full unless the watchdog has read the oldest: take it back from its reads, and pass it on.
            let oldest = position - UInt64(depth)
            var head = rings[ring].head.load(ordering: .acquiring)
            while head <= oldest {
                let (taken, current) = rings[ring].head.compareExchange(
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
        rings[ring].tail.store(position + 1, ordering: .releasing)
    }

    /// The calling thread's ring (`tid` is its kernel tid), taken now if it has none; nil when none is free.
    private func ring(of tid: Int32) -> Int? {
        let word = stallcap_marker_ring_slot()
        let field = Int(word & 0xffff)
        if word >> 16 == tag && field >= 1 && field <= threads { return field - 1 }
        let current = generation.load(ordering: .acquiring) & 0x7fff
        if word >> 16 == tag && field == 0x8000 | Int(current) { return nil }  // none free, none freed since
        for index in 0..<threads {
            let owner = rings[index].owner.load(ordering: .acquiring)
            // A ring owned by this tid belonged to a thread that has exited (tids are unique among live threads),
            // or to this thread before its word named another table: it is this thread's now.
            if owner == tid
                || (owner == 0
                    && rings[index].owner.compareExchange(expected: 0, desired: tid, ordering: .acquiringAndReleasing)
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
    func slot(ring: Int, position: UInt64) -> UnsafeMutablePointer<Atomic<UInt64>> {
        words + (ring * depth + Int(position & UInt64(depth - 1))) * Self.slotWords
    }

    /// Moves the event at `position` (taken back by its producer) to the shared ring, or counts it as lost when
    /// the ring has used its spill budget or the shared ring is full.
    private func spill(ring: Int, position: UInt64) {
        let spilledSoFar = rings[ring].spilled.load(ordering: .relaxed)
        guard spilledSoFar &- rings[ring].spilledAtDrain.load(ordering: .relaxed) < spillBudget else {
            countLost(ring)
            return
        }
        let event = Event(self.slot(ring: ring, position: position))
        let moved = event.withName { name in
            overflow.push(kind: event.kind, spanID: event.spanID, threadID: event.tid, timestampNs: event.timestampNs,
                          name: name)
        }
        if moved { rings[ring].spilled.store(spilledSoFar &+ 1, ordering: .relaxed) } else { countLost(ring) }
    }

    /// Counts one event of `ring` as lost (by its producer, the only writer of the count).
    private func countLost(_ ring: Int) {
        rings[ring].lost.store(rings[ring].lost.load(ordering: .relaxed) &+ 1, ordering: .relaxed)
    }

    /// One ring's owner (a kernel tid, 0 when free), positions (the consumer's `head`, the producer's `tail`) and
    /// counts, alone on a cache line: a flood on one ring does not slow another's. `lost` and `spilled` count the
    /// events the ring lost and moved to the shared ring, in all: written by its producer alone (a load and a store,
    /// no read-modify-write); `spilledAtDrain` is `spilled` at the last drain (the consumer's), where the ring's
    /// spill budget starts.
    struct RingState: ~Copyable {
        let owner = Atomic<Int32>(0)
        let head = Atomic<UInt64>(0), tail = Atomic<UInt64>(0)
        let lost = Atomic<UInt64>(0), spilled = Atomic<UInt64>(0), spilledAtDrain = Atomic<UInt64>(0)
        private let padding: (UInt64, UInt64) = (0, 0)
    }

    /// One event as read from a slot (a copy: the slot may be rewritten meanwhile).
    struct Event {
        var header: UInt64, spanID: UInt64, timestampNs: UInt64
        var text: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)

        init(_ slot: UnsafeMutablePointer<Atomic<UInt64>>) {
            header = slot[0].load(ordering: .relaxed)
            spanID = slot[1].load(ordering: .relaxed)
            timestampNs = slot[2].load(ordering: .relaxed)
            let words = (min(Int((header >> 8) & 0xff), MarkerRecord.maxNameBytes) + 7) / 8
            withUnsafeMutableBytes(of: &text) { bytes in
                for word in 0..<words {
                    bytes.storeBytes(of: slot[3 + word].load(ordering: .relaxed), toByteOffset: word * 8, as: UInt64.self)
                }
            }
        }

        var kind: UInt8 { UInt8(truncatingIfNeeded: header) }
        var length: Int { min(Int((header >> 8) & 0xff), MarkerRecord.maxNameBytes) }
        var tid: Int32 { Int32(bitPattern: UInt32(truncatingIfNeeded: header >> 32)) }

        /// Calls `body` with the name's bytes (on the stack).
        func withName<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
            withUnsafeBytes(of: text) { body(UnsafeRawBufferPointer(rebasing: $0[0..<length])) }
        }
    }
}
