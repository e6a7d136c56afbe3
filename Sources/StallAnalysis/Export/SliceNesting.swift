/// Makes the complete (`X`) slices of each thread nest, as Perfetto needs them to.
///
/// Perfetto's trace processor keeps one stack of open slices per thread track; a complete slice that starts inside
/// an open one and ends after it (the two cross) is dropped whole (stat `slice_drop_overlapping_complete_event`).
/// A main-thread stall and an interval marker cross routinely: the stall ends when the main queue answers the
/// watchdog, a fraction of a millisecond after the marked callback returns. So the exporter clips: of a crossing
/// pair, the one whose end moves less is ended where Perfetto can nest it (the later one at the earlier one's
/// end, or the earlier one at the later one's start), and that event's `args` say by how much. Starts never
/// move; an end only moves earlier. Zero-length slices and instants never cross anything.
enum SliceNesting {
    /// One complete slice: its track (pid and tid) and its extent in nanoseconds.
    struct Slice {
        var pid: Int32
        var tid: Int32
        var start: UInt64
        var end: UInt64
    }

    /// Each slice's end after clipping, by index into `slices`; an end equal to the slice's own end is unclipped.
    static func ends(of slices: [Slice]) -> [UInt64] {
        var ends = slices.map(\.end)
        var tracks: [Track: [Int]] = [:]
        for index in slices.indices { tracks[Track(pid: slices[index].pid, tid: slices[index].tid), default: []].append(index) }
        for var members in tracks.values {
            members.sort { order(slices[$0], slices[$1], $0, $1) }
            nest(members, slices: slices, ends: &ends)
        }
        return ends
    }

    /// Perfetto's order of slices on one track: by start, the longer first at the same start (so it is the
    /// parent), then by index.
    static func order(_ a: Slice, _ b: Slice, _ i: Int, _ j: Int) -> Bool {
        if a.start != b.start { return a.start < b.start }
        if a.end != b.end { return a.end > b.end }
        return i < j
    }

    /// Replays Perfetto's stack for one track's slices (in ``order(_:_:_:_:)``), clipping each crossing pair.
    private static func nest(_ members: [Int], slices: [Slice], ends: inout [UInt64]) {
        // Open slices, outermost first: index and the latest end of any slice nested in it so far.
        var stack: [(index: Int, childEnd: UInt64)] = []
        func pop() {
            let top = stack.removeLast()
            if !stack.isEmpty { stack[stack.count - 1].childEnd = max(stack[stack.count - 1].childEnd, ends[top.index]) }
        }
        for index in members {
            let start = slices[index].start
            var end = ends[index]
            while let top = stack.last {
                if ends[top.index] <= start {
                    pop()
                    continue
                }
                let topEnd = ends[top.index]
                if end <= topEnd { break }
                // They cross: top.start <= start < topEnd < end (the order puts the longer first at equal starts).
                if topEnd - start < end - topEnd && top.childEnd <= start && slices[top.index].start < start {
                    ends[top.index] = start
                    pop()
                    continue
                }
                end = topEnd
                break
            }
            ends[index] = end
            stack.append((index, start))
        }
    }

    private struct Track: Hashable {
        var pid: Int32
        var tid: Int32
    }
}
