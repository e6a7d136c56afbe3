import StallFormat

/// App events on the stall timeline: put them where the order of events matters, and `stallprof report` shows
/// them beside the stalls, on the same clock.
///
/// ```swift
/// StallMarker.mark("touchDown")                 // an instant
/// let span = StallMarker.begin("perform")       // an interval
/// // ...
/// span.end()
/// ```
///
/// - When no watchdog runs, every call is one atomic load and a return: no allocation, no system call.
/// - When one runs, a call reads the monotonic clock (vDSO, no system call) and the thread's cached kernel tid
///   (one `gettid` per thread, the first time), and copies the event into the thread's own preallocated ring of 32
///   slots (one of 64 such rings), which the watchdog thread drains into the capture; when it is full, its oldest
///   event moves to a shared lock-free ring of 1,024 slots. No lock, no allocation (a native `String`'s bytes are
///   read in place), never a wait: each thread keeps its 32 most recent markers before each drain whatever other
///   threads do, and a marker that fits nowhere is dropped and counted for its thread (the capture says how many).
/// - Callable from any thread. Names keep at most 63 bytes of UTF-8 (``MarkerRecord/maxNameBytes``), cut at a
///   Unicode scalar boundary. A string literal takes the `String` overload (an immortal string, read in place);
///   the `StaticString` overloads serve names already typed `StaticString`.
public enum StallMarker {
    /// An interval begun with ``StallMarker/begin(_:)-(StaticString)``; ``end()`` ends it.
    public struct Span: Sendable, Hashable {
        /// The span id that pairs the begin and end records; 0 when no watchdog ran at the begin (then `end()`
        /// records nothing).
        public let id: UInt64

        /// Ends the interval (from any thread). Ending it twice records a second end, which readers ignore.
        public func end() {
            guard id != 0, MarkerRing.active.load(ordering: .acquiring) else { return }
            ThreadMarkerRings.shared.push(kind: .end, spanID: id, name: UnsafeRawBufferPointer(start: nil, count: 0))
        }
    }

    /// Marks an instant named `name`.
    public static func mark(_ name: StaticString) {
        guard MarkerRing.active.load(ordering: .acquiring) else { return }
        withName(name) { ThreadMarkerRings.shared.push(kind: .instant, spanID: 0, name: $0) }
    }

    /// Marks an instant named `name` (a native string's bytes are read in place, not copied to the heap).
    public static func mark(_ name: String) {
        guard MarkerRing.active.load(ordering: .acquiring) else { return }
        withName(name) { ThreadMarkerRings.shared.push(kind: .instant, spanID: 0, name: $0) }
    }

    /// Begins an interval named `name`; call ``Span/end()`` on the result when it ends.
    public static func begin(_ name: StaticString) -> Span {
        guard MarkerRing.active.load(ordering: .acquiring) else { return Span(id: 0) }
        let id = MarkerRing.nextSpanID.add(1, ordering: .relaxed).oldValue
        withName(name) { ThreadMarkerRings.shared.push(kind: .begin, spanID: id, name: $0) }
        return Span(id: id)
    }

    /// Begins an interval named `name`; call ``Span/end()`` on the result when it ends.
    public static func begin(_ name: String) -> Span {
        guard MarkerRing.active.load(ordering: .acquiring) else { return Span(id: 0) }
        let id = MarkerRing.nextSpanID.add(1, ordering: .relaxed).oldValue
        withName(name) { ThreadMarkerRings.shared.push(kind: .begin, spanID: id, name: $0) }
        return Span(id: id)
    }

    /// Calls `body` with `name`'s UTF-8 bytes, cut to the bound.
    static func withName(_ name: StaticString, _ body: (UnsafeRawBufferPointer) -> Void) {
        if name.hasPointerRepresentation {
            let bytes = UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
            body(UnsafeRawBufferPointer(rebasing: bytes[0..<boundedLength(bytes)]))
        } else {
            // A one-scalar literal: at most 4 bytes, encoded on the stack.
            var encoded: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0)
            var count = 0
            withUnsafeMutableBytes(of: &encoded) { raw in
                UTF8.encode(name.unicodeScalar) { unit in
                    raw[count] = unit
                    count += 1
                }
            }
            withUnsafeBytes(of: &encoded) { body(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
        }
    }

    /// Calls `body` with `name`'s UTF-8 bytes, cut to the bound: in place for a native string (a small one is
    /// copied to the stack by the standard library), else copied into a stack buffer.
    static func withName(_ name: String, _ body: (UnsafeRawBufferPointer) -> Void) {
        let done: Void? = name.utf8.withContiguousStorageIfAvailable { utf8 in
            let bytes = UnsafeRawBufferPointer(utf8)
            body(UnsafeRawBufferPointer(rebasing: bytes[0..<boundedLength(bytes)]))
        }
        guard done == nil else { return }
        // A bridged or otherwise foreign string: copy at most the bound plus one byte (to see where it may be cut).
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: MarkerRecord.maxNameBytes + 1) { buffer in
            var count = 0
            for byte in name.utf8 {
                if count == buffer.count { break }
                buffer[count] = byte
                count += 1
            }
            let bytes = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[0..<count])
            body(UnsafeRawBufferPointer(rebasing: bytes[0..<boundedLength(bytes)]))
        }
    }

    /// How many of `bytes` (UTF-8) a name keeps: all up to ``MarkerRecord/maxNameBytes``, else the longest
    /// prefix within it that ends at a scalar boundary (the cut never splits a multi-byte scalar).
    static func boundedLength(_ bytes: UnsafeRawBufferPointer) -> Int {
        let limit = MarkerRecord.maxNameBytes
        guard bytes.count > limit else { return bytes.count }
        var cut = limit
        while cut > 0 && bytes[cut] & 0xC0 == 0x80 { cut -= 1 }  // bytes[cut] continues the scalar before it
        return cut
    }
}
