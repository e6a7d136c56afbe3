import CStallCapture
import Dispatch
import Foundation
import Testing

/// A sample's turn (which queued block its thread runs), found as the handler finds it: the same wherever a block
/// is sampled, different from block to block, and nothing outside a block.
@Suite struct QueueTurnTests {
    /// What one block saw: its turn at two depths of its own code.
    struct Seen: Sendable {
        var shallow: UInt64
        var deep: UInt64
    }

    /// The blocks' findings, in the order they ran.
    final class SeenList: @unchecked Sendable {
        private let lock = NSLock()
        private var list: [Seen] = []
        func append(_ seen: Seen) { lock.withLock { list.append(seen) } }
        var all: [Seen] { lock.withLock { list } }
    }

    @inline(never)
    static func turnBelow(depth: Int) -> UInt64 {
        if depth == 0 { return stallcap_queue_turn_here() }
        let turn = turnBelow(depth: depth - 1)
        return turn &+ UInt64(depth & 0)  // work after the call: no tail call, a real frame per level
    }

    @Test func aBlockHasOneTurnAtEveryDepthAndTheNextBlockAnother() throws {
        #expect(stallcap_set_queue_code() == 0)
        let queue = DispatchQueue(label: "stallprof.turn-test")
        let seen = SeenList()
        let group = DispatchGroup()
        for _ in 0..<4 {
            queue.async(group: group) {
                let shallow = stallcap_queue_turn_here()
                let deep = QueueTurnTests.turnBelow(depth: 12)
                seen.append(Seen(shallow: shallow, deep: deep))
            }
        }
        group.wait()
        let all = seen.all
        #expect(all.count == 4)
        for block in all {
            #expect(block.shallow != 0)
            #expect(block.shallow == block.deep, "\(all)")
        }
        // Blocks run one after another on the queue: each has its own turn (a continuation is reused only after
        // its block ended, and the next one is a different block).
        for (a, b) in zip(all, all.dropFirst()) { #expect(a.shallow != b.shallow, "\(all)") }
        // Outside any block (a thread of its own, not a queue's): no turn.
        let outside = SeenList()
        let done = DispatchSemaphore(value: 0)
        Thread {
            outside.append(Seen(shallow: stallcap_queue_turn_here(), deep: QueueTurnTests.turnBelow(depth: 3)))
            done.signal()
        }.start()
        done.wait()
        #expect(outside.all.map(\.shallow) == [0] && outside.all.map(\.deep) == [0])
    }
}
