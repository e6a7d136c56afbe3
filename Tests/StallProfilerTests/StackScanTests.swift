import CStallCapture
import Foundation
import StallAnalysis
import StallFormat
import Testing

@testable import StallProfiler

/// The stack-memory walk on synthetic stacks: a heap buffer stands in for a thread's stack, filled with real
/// return addresses of this process (from a known chain of calls) and frame records pointing within it.
@Suite struct StackScanTests {
    /// Return addresses in `level3`, `level2`, `level1`, `level0` (leaf first): each call leads into the previous.
    static let chain: [UInt64] = level0()

    /// A 16-aligned fake stack of `size` zero bytes.
    final class FakeStack {
        let base: UnsafeMutableRawPointer
        let size: Int
        init(size: Int = 32768) {
            self.size = size
            base = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 16)
            base.initializeMemory(as: UInt8.self, repeating: 0, count: size)
        }
        deinit { base.deallocate() }
        var address: UInt64 { UInt64(UInt(bitPattern: base)) }
        subscript(offset: Int) -> UInt64 {
            get { base.load(fromByteOffset: offset, as: UInt64.self) }
            set { base.storeBytes(of: newValue, toByteOffset: offset, as: UInt64.self) }
        }
        /// A frame record at `offset`: saved frame pointer (an offset, or 0), return address.
        func record(at offset: Int, next: Int?, returnAddress: UInt64) {
            self[offset] = next.map { address + UInt64($0) } ?? 0
            self[offset + 8] = returnAddress
        }
        /// Walks it from its start, with leaf `pc`.
        func walk(pc: UInt64, end: Int? = nil, maxScan: UInt32 = 65536, maxFrames: Int = 64) -> ([UInt64], UInt32) {
            var frames = [UInt](repeating: 0, count: maxFrames)
            var flags: UInt32 = 0
            let count = frames.withUnsafeMutableBufferPointer {
                stallcap_stack_from_memory(
                    pc, address, address + UInt64(end ?? size), maxScan, $0.baseAddress, UInt32(maxFrames), &flags)
            }
            return (frames[0..<Int(count)].map { UInt64($0) }, flags)
        }
    }

    @Test func theCallChainIsMadeOfReturnAddresses() throws {
        let chain = Self.chain
        try #require(chain.count == 4)
        for address in chain { #expect(stallcap_is_return_address(address) == 1) }
        for (inner, outer) in zip(chain, chain.dropFirst()) { #expect(stallcap_call_reaches(outer, inner) == 1) }
        let heap = FakeStack(size: 64)
        #expect(stallcap_is_return_address(heap.address) == 0)
        #expect(stallcap_is_return_address(0) == 0)
    }

    @Test func scannedWordsThenTheFrameRecordChain() throws {
        let c = Self.chain, stack = FakeStack()
        try #require(c.count == 4)
        stack[64] = c[1]
        stack[72] = c[3]  // a code address whose call does not lead into level2: not taken
        stack.record(at: 256, next: 512, returnAddress: c[2])
        stack.record(at: 512, next: 768, returnAddress: c[3])
        stack.record(at: 768, next: nil, returnAddress: c[3])
        let (frames, flags) = stack.walk(pc: c[0])
        #expect(frames == [c[0], c[1], c[2], c[3], c[3]])
        #expect(flags & UInt32(STALLCAP_MEMSTACK_SCANNED) != 0 && flags & UInt32(STALLCAP_MEMSTACK_CHAIN) != 0)
        #expect(flags & UInt32(STALLCAP_MEMSTACK_TRUNCATED) == 0)
    }

    @Test func theScanStopsAtItsByteBound() throws {
        let c = Self.chain, stack = FakeStack()
        try #require(c.count == 4)
        stack[8192] = c[1]
        #expect(stack.walk(pc: c[0], maxScan: 4096).0 == [c[0]])
        #expect(stack.walk(pc: c[0], maxScan: 16384).0 == [c[0], c[1]])
        #expect(stack.walk(pc: c[0], end: 8192).0 == [c[0]])  // never past the stack's end either
    }

    @Test func aChainThatTurnsDownwardEnds() throws {
        let c = Self.chain, stack = FakeStack()
        try #require(c.count == 4)
        stack.record(at: 256, next: 512, returnAddress: c[1])
        stack.record(at: 512, next: 768, returnAddress: c[2])
        stack.record(at: 768, next: 512, returnAddress: c[3])  // points back down: a loop
        #expect(stack.walk(pc: c[0]).0 == [c[0], c[1], c[2], c[3]])
    }

    @Test func aChainNeverLeavesTheStack() throws {
        let c = Self.chain, stack = FakeStack()
        try #require(c.count == 4)
        stack.record(at: 256, next: 512, returnAddress: c[1])
        stack.record(at: 512, next: 1024, returnAddress: c[2])
        stack.record(at: 1024, next: nil, returnAddress: c[3])  // beyond the end given below: never read
        #expect(stack.walk(pc: c[0], end: 1024 + 8).0 == [c[0], c[1], c[2]])
        #expect(stack.walk(pc: c[0]).0 == [c[0], c[1], c[2], c[3]])
    }

    @Test func framesAreBoundedAndTruncationIsFlagged() throws {
        let c = Self.chain, stack = FakeStack()
        try #require(c.count == 4)
        for index in 0..<100 {
            stack.record(at: 256 + index * 32, next: index == 99 ? nil : 256 + (index + 1) * 32, returnAddress: c[2])
        }
        let (frames, flags) = stack.walk(pc: c[0], maxFrames: 16)
        #expect(frames.count == 16)
        #expect(flags & UInt32(STALLCAP_MEMSTACK_TRUNCATED) != 0)
        #expect(stack.walk(pc: c[0], maxFrames: 128).0.count == 101)
    }

    @Test func unreadableMemoryEndsTheWalkWithoutAFault() {
        var frames = [UInt](repeating: 0, count: 8)
        var flags: UInt32 = 0
        // Page 1 is never mapped: every read fails, the leaf alone comes back.
        let count = frames.withUnsafeMutableBufferPointer {
            stallcap_stack_from_memory(0x1234, 0x1000, 0x9000, 65536, $0.baseAddress, 8, &flags)
        }
        #expect(count == 1 && frames[0] == 0x1234)
    }
}

// A known chain of calls: each level calls the next and keeps working after it (no tail calls).
@inline(never) func level0() -> [UInt64] { var r = level1(); r.append(0); return inChain(r, "level0") }
@inline(never) func level1() -> [UInt64] { var r = level2(); r.append(0); return inChain(r, "level1") }
@inline(never) func level2() -> [UInt64] { var r = level3(); r.append(0); return inChain(r, "level2") }
@inline(never) func level3() -> [UInt64] { Thread.callStackReturnAddresses.map { $0.uint64Value } }

/// Keeps, from a full call stack, the return addresses in `level3` ... `level0`, leaf first (once the stack has
/// gone through all four levels).
func inChain(_ partial: [UInt64], _ level: String) -> [UInt64] {
    guard level == "level0" else { return partial }
    let stack = Array(partial.dropLast(3))
    let symbolizer = Symbolizer(images: ImageMap.current().0)
    let names = stack.map { symbolizer.name(for: $0, isReturnAddress: true) }
    return ["level3", "level2", "level1", "level0"].compactMap { wanted in
        names.firstIndex { $0.contains("\(wanted)()") }.map { stack[$0] }
    }
}
