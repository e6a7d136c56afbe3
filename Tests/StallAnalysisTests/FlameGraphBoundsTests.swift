import Testing

@testable import StallAnalysis
import StallFormat

/// The flame graph's bounds: a cap on the frames it draws, so memory and output stay bounded.
@Suite struct FlameGraphBoundsTests {
    @Test func tooManyFramesToDrawIsBadDataNamingTheInput() throws {
        let stacks = (0..<50).map { WeightedStack(stack: "main;f\($0);g\($0)", count: 1, before: nil) }
        var diagnostics = Diagnostics()
        let renderer = SVGFlameGraph()
        let svg = try renderer.render(OrderedStacks(stacks: stacks), maxFrames: 200, input: "in.folded",
                                      diagnostics: &diagnostics)
        #expect(try #require(SVGFrames(svg)).structure.count == 102)  // all, main, 50 f, 50 g
        do {
            _ = try renderer.render(OrderedStacks(stacks: stacks), maxFrames: 100, input: "in.folded",
                                    diagnostics: &diagnostics)
            Issue.record("no error")
        } catch StallError.badData(let path, _, let reason) {
            #expect(path == "in.folded" && reason.contains("would draw 102 frames, more than 100"))
        }
    }
}
