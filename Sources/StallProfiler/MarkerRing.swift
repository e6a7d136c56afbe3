import CStallCapture
import StallFormat
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The bounded, lock-free queue shared by every thread: it carries the ``StallMarker`` events that do not fit in
/// the per-thread rings (``ThreadMarkerRings``: a thread's older markers, spilled when its own ring is full, and
/// the markers of threads without a ring of their own) to the watchdog thread.
///
/// A fixed array of fixed-size slots, allocated once (at the first watchdog start) and kept for the life of the
/// process, with a sequence number per slot (Dmitry Vyukov's bounded queue): a producer claims a slot with one
/// compare-and-swap on the tail, copies its event into it and publishes it with a release store; the watchdog
/// thread, the only consumer, reads published slots in order and hands them back. No producer ever waits: when
/// the ring is full the event is dropped and counted. Nothing here allocates, takes a lock or makes a system call.
final class MarkerRing: @unchecked Sendable {
    /// Slots in the shared ring: the most spilled markers between two drains (the watchdog drains at every step,
    /// at least four times per threshold and at every sample during an episode).
    static let defaultCapacity = 1024
    /// Bytes of one slot: kind (1), name length (1), tid (4 at 4), span id (8 at 8), time (8 at 16), name (64 at 24).
    static let slotSize = 88
    static let nameOffset = 24

    /// True while a watchdog runs: markers are recorded only then. The one load every marker call makes.
    static let active = Atomic<Bool>(false)
    /// Span ids, unique within the process run.
    static let nextSpanID = Atomic<UInt64>(1)
    /// The ring; created by the first watchdog start, before ``active`` is first set.
    static let shared = MarkerRing()

    /// Slots in this ring, a power of two.
    let capacity: Int
    private let sequences: UnsafeMutablePointer<Atomic<UInt64>>
    private let slots: UnsafeMutableRawPointer
    private let tail = Atomic<UInt64>(0)
    /// Markers of threads without a ring of their own dropped because the ring was full, not yet reported by the
    /// consumer (a thread with a ring counts its losses in it).
    let dropped = Atomic<UInt64>(0)
    /// When the current (or last) watchdog started recording, monotonic nanoseconds.
    private(set) var startedAtNs: UInt64 = 0
    /// The consumer's position (touched by the watchdog thread only, or by `start` while none runs).
    private var head: UInt64 = 0

    /// A ring of `capacity` slots (a power of two). The watchdog uses ``shared`` (kept for the life of the
    /// process, so a producer never writes into freed memory); tests make their own.
    init(capacity: Int = MarkerRing.defaultCapacity) {
        precondition(capacity > 0 && capacity & (capacity - 1) == 0, "a power of two")
        self.capacity = capacity
        sequences = .allocate(capacity: capacity)
        for index in 0..<capacity { (sequences + index).initialize(to: Atomic(UInt64(index))) }
        slots = .allocate(byteCount: capacity * Self.slotSize, alignment: 16)
        slots.initializeMemory(as: UInt8.self, repeating: 0, count: capacity * Self.slotSize)
    }

    deinit {
        sequences.deinitialize(count: capacity)
        sequences.deallocate()
        slots.deallocate()
    }

    /// Copies one event of the calling thread, now, into a free slot, or counts it as dropped (``dropped``) when the
    /// ring is full. `name` is at most ``MarkerRecord/maxNameBytes`` bytes (cut by the caller).
    func push(kind: MarkerRecord.Kind, spanID: UInt64, name: UnsafeRawBufferPointer) {
        if !push(kind: kind.rawValue, spanID: spanID, threadID: stallcap_cached_tid(),
                 timestampNs: stallcap_monotonic_ns(), name: name)
        {
            dropped.add(1, ordering: .relaxed)
        }
    }

    /// Copies one event into a free slot; false when the ring is full (the caller counts the loss). Lock-free: it
    /// retries only when another producer claimed the same slot first.
    func push(kind: UInt8, spanID: UInt64, threadID: Int32, timestampNs: UInt64, name: UnsafeRawBufferPointer) -> Bool {
        let length = min(name.count, MarkerRecord.maxNameBytes)
        var position = tail.load(ordering: .relaxed)
        while true {
            let index = Int(position & UInt64(capacity - 1))
            let sequence = sequences[index].load(ordering: .acquiring)
            if sequence == position {
                let (claimed, current) = tail.weakCompareExchange(
                    expected: position, desired: position &+ 1, ordering: .relaxed)
                if claimed {
                    let slot = slots + index * Self.slotSize
                    slot.storeBytes(of: kind, as: UInt8.self)
                    slot.storeBytes(of: UInt8(length), toByteOffset: 1, as: UInt8.self)
                    slot.storeBytes(of: threadID, toByteOffset: 4, as: Int32.self)
                    slot.storeBytes(of: spanID, toByteOffset: 8, as: UInt64.self)
                    slot.storeBytes(of: timestampNs, toByteOffset: 16, as: UInt64.self)
                    if let base = name.baseAddress { (slot + Self.nameOffset).copyMemory(from: base, byteCount: length) }
                    sequences[index].store(position &+ 1, ordering: .releasing)
                    return true
                }
                position = current
            } else if sequence < position {
                return false  // full: the consumer has not handed this slot back yet
            } else {
                position = tail.load(ordering: .relaxed)  // another producer took it; try the next one
            }
        }
    }

    /// Hands the published events, in claim order, to `body` (on the consumer thread), and frees their slots: at
    /// most one ring's worth, so producers that refill it as fast as it is read cannot keep the watchdog here.
    /// Stops at the first slot a producer has claimed but not yet published: it is read at the next drain.
    func drain(_ body: (MarkerRecord) -> Void) {
        for _ in 0..<capacity {
            let index = Int(head & UInt64(capacity - 1))
            guard sequences[index].load(ordering: .acquiring) == head &+ 1 else { return }
            let slot = UnsafeRawPointer(slots + index * Self.slotSize)
            let kind = MarkerRecord.Kind(rawValue: slot.load(as: UInt8.self)) ?? .instant
            let length = Int(slot.load(fromByteOffset: 1, as: UInt8.self))
            let name = String(decoding: UnsafeRawBufferPointer(start: slot + Self.nameOffset, count: length),
                              as: UTF8.self)
            body(MarkerRecord(
                kind: kind, spanID: slot.load(fromByteOffset: 8, as: UInt64.self),
                threadID: slot.load(fromByteOffset: 4, as: Int32.self),
                timestampNs: slot.load(fromByteOffset: 16, as: UInt64.self), name: name))
            sequences[index].store(head &+ UInt64(capacity), ordering: .releasing)
            head &+= 1
        }
    }

    /// Starts recording for a new watchdog: discards what an earlier one left (events published after its last
    /// drain), then lets markers in. Called (through ``ThreadMarkerRings/start()``) by `StallWatchdog.start` while
    /// no watchdog thread runs (the ring's single consumer).
    func start() {
        drain { _ in }
        startedAtNs = stallcap_monotonic_ns()
        _ = dropped.exchange(0, ordering: .relaxed)
        Self.active.store(true, ordering: .releasing)
    }

    /// In the child of a fork, where only the forking thread exists: empties the ring, including a slot another
    /// thread had claimed but not published when the process forked (it would block every later drain).
    func resetInChild() {
        for index in 0..<capacity { sequences[index].store(UInt64(index), ordering: .relaxed) }
        tail.store(0, ordering: .relaxed)
        head = 0
        _ = dropped.exchange(0, ordering: .relaxed)
    }

    /// Stops recording (markers become no-ops again); the caller drains what is left.
    func stop() {
        Self.active.store(false, ordering: .releasing)
    }
}
