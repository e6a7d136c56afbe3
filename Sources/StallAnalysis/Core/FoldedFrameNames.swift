#if canImport(Glibc)
import Glibc
#endif

/// Takes folded stacks (`root;...;leaf` bytes) apart into their frames, one stack after the other: each distinct
/// name's bytes are looked up in one table and given a number by the caller once, the first time they are met, and
/// the frames a stack shares with the start of the one before (byte-sorted stacks mostly begin alike) are taken
/// over without a look-up. A million stacks of a dozen frames cost a few look-ups each and a String per distinct
/// name only. The export's ``TimelineBuilder`` and the profile ``ProfileReport`` read folded stacks through it.
struct FoldedFrameNames {
    private var table = ByteKeyTable(capacity: 1024)
    private var numbers: [Int32] = []
    /// The frames of the last stack split, root first, by number.
    private(set) var frames: [Int32] = []
    /// Where each of those frames ends in its stack: the offset of its `;`, or the stack's length.
    private var ends: [Int] = []
    /// The last stack's bytes.
    private var previous: [UInt8] = []

    /// Splits `stack` into ``frames``; those it shares with the start of the previous stack are not looked up
    /// again. Names are split at every `;`, empty ones kept (`a;;b` has three frames); an empty stack
    /// has none. `number` gives a name met for the first time its number (the name as a String: invalid UTF-8
    /// repaired).
    mutating func split(_ stack: UnsafeBufferPointer<UInt8>, number: (String) -> Int32) {
        let shared = sharedFrames(stack)
        frames.removeSubrange(shared...)
        ends.removeSubrange(shared...)
        previous.removeAll(keepingCapacity: true)
        previous.append(contentsOf: stack)
        guard let base = stack.baseAddress, !stack.isEmpty else { return }
        var start = ends.last.map { $0 + 1 } ?? 0
        while start <= stack.count {
            let end = memchr(base + start, Int32(UInt8(ascii: ";")), stack.count - start)
                .map { UnsafePointer($0.assumingMemoryBound(to: UInt8.self)) - base } ?? stack.count
            let name = UnsafeRawBufferPointer(start: base + start, count: end - start)
            let (index, inserted) = table.findOrInsert(name, hash: ByteKeyTable.hash(name))
            if inserted { numbers.append(number(String(decoding: name, as: UTF8.self))) }
            frames.append(numbers[index])
            ends.append(end)
            start = end + 1
        }
    }

    /// How many whole frames `stack` shares with the start of the previous stack.
    private func sharedFrames(_ stack: UnsafeBufferPointer<UInt8>) -> Int {
        guard !stack.isEmpty, !ends.isEmpty else { return 0 }
        let limit = min(stack.count, previous.count)
        return previous.withUnsafeBytes { previous in
            let (a, b) = (UnsafeRawPointer(stack.baseAddress!), previous.baseAddress!)
            var same = 0
            while same + 8 <= limit && a.loadUnaligned(fromByteOffset: same, as: UInt64.self)
                == b.loadUnaligned(fromByteOffset: same, as: UInt64.self) { same += 8 }
            while same < limit && stack[same] == previous[same] { same += 1 }
            // A frame is shared when its `;` is, or when it ends where one of the two stacks ends and the other
            // has its `;` there (`a;b` after `a`).
            var shared = 0
            while shared < ends.count {
                let end = ends[shared]
                guard end < same || (end == same && (end == stack.count || stack[end] == UInt8(ascii: ";"))) else {
                    break
                }
                shared += 1
            }
            return shared
        }
    }
}
