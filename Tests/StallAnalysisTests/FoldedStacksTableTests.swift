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
