import Testing
@testable import StallAnalysis

@Suite struct FoldedStacksTableTests {
    @Test func mergesAndSortsByBytes() {
        var stacks = FoldedStacks()
        stacks.add(folded: "b;c", count: 1)
        stacks.add(folded: "a;Z", count: 2)
        stacks.add(folded: "b;c", count: 3)
        stacks.add(folded: "a", count: 0.5)
        #expect(stacks.count == 3)
        #expect(stacks.rendered() == "a 0.5\na;Z 2\nb;c 4\n")
    }

    @Test func growsPastItsFirstIndex() {
        var stacks = FoldedStacks()
        for i in 0..<5000 { stacks.add(folded: "s\(i % 1000)", count: 1) }
        #expect(stacks.count == 1000)
        #expect(stacks.total == 5000)
        #expect(stacks.counts["s999"] == 5)
    }
}

/// The perf importer's cache of folded frame lines, on the same table.
@Suite struct FrameCacheTests {
    @Test func aKeyIsFoundOnlyWithItsFlagAndTheCacheStartsOverAtItsLimit() {
        var cache = FrameCache(limit: 64)
        let key = Array("  4005d0 main+0x10 (/app)".utf8)
        key.withUnsafeBufferPointer { key in
            var out: [UInt8] = []
            #expect(!cache.append(key, flag: false, to: &out))
            cache.insert(key, flag: false, value: ArraySlice("main".utf8))
            #expect(cache.append(key, flag: false, to: &out) && out == Array("main".utf8))
            #expect(!cache.append(key, flag: true, to: &out))
            cache.insert(key, flag: true, value: ArraySlice("main_[j]".utf8))
            out = []
            #expect(cache.append(key, flag: true, to: &out) && out == Array("main_[j]".utf8))
            // Past 64 bytes it starts over: the older entries are gone, the new one is there.
            let other = Array("  4005e0 helper+0x4 (/app)".utf8)
            other.withUnsafeBufferPointer { other in
                cache.insert(other, flag: false, value: ArraySlice("helper".utf8))
                #expect(!cache.append(key, flag: false, to: &out))
                out = []
                #expect(cache.append(other, flag: false, to: &out) && out == Array("helper".utf8))
            }
        }
    }
}
