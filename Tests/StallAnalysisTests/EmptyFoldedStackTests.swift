import Testing

@testable import StallAnalysis

/// Folded lines with an empty stack (py-spy's raw output starts with ` 2`): counted like flamegraph.pl counts
/// them, by every command that reads folded text.
@Suite struct EmptyFoldedStackTests {
    @Test func foldKeepsThemAndReadsItsOwnOutputBack() throws {
        let text = try FoldFixture.foldBytes(Array(" 2\nmain;a 3\n 1 \r\n".utf8))
        #expect(text == " 3\nmain;a 3\n")
        #expect(try FoldFixture.foldBytes(Array(text.utf8)) == text)
        #expect(try FoldFixture.foldBytes(Array(" 2\n".utf8)) == " 2\n")  // detected as folded on its own
    }

    @Test func theFlameGraphCountsThemInTheTotal() throws {
        let stacks = [" 2", "main;a 3", " 1 4", "2"].compactMap { FoldedImporter.profileStack($0) }
        #expect(stacks == [WeightedStack(stack: "", count: 2), WeightedStack(stack: "main;a", count: 3),
                           WeightedStack(stack: "", count: 4, before: 1)])
        let layout = FrameLayout(OrderedStacks(stacks: stacks), options: FlameGraphOptions(), framesWidth: 1000)
        #expect(layout.total == 9)
        #expect(layout.frames.map { layout.name(of: $0) } == ["", "main", "a"])
        #expect(layout.frames.first { layout.name(of: $0) == "main" }?.width == 3)
    }

    @Test func theReaderRulesAreTheSameForFoldAndFlameGraph() throws {
        for line in ["main;a 5  ", "main;a 5\r", "main;a\t5", " main;a  5"] {
            #expect(FoldedImporter.profileStack(line) == WeightedStack(stack: "main;a", count: 5))
        }
        #expect(FoldedImporter.profileStack("main; 5") == WeightedStack(stack: "main;", count: 5))
        #expect(FoldedImporter.profileStack("main;  5") == WeightedStack(stack: "main;", count: 5))  // inferno's leaf ``
        // fold keeps flamegraph.pl's stack, everything before the one blank, so its own output reads back.
        #expect(try FoldFixture.foldBytes(Array("main;  5\n".utf8)) == "main;  5\n")
        #expect(FoldedImporter.profileStack("main;a 3 4") == WeightedStack(stack: "main;a", count: 4, before: 3))
        #expect(FoldedImporter.profileStack("5") == nil)
        #expect(FoldedImporter.profileStack("main;a") == nil)
    }
}
