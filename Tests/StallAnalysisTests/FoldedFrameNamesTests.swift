import Testing
@testable import StallAnalysis

/// How folded stacks are taken apart for the export and the profile report: every name looked up once, the frames a
/// stack shares with the one before taken over, whatever the order; and the report's stacks merged where Swift
/// holds two names equal.
@Suite struct FoldedFrameNamesTests {
    /// Splits `stacks` in order with one ``FoldedFrameNames`` and spells each back.
    static func spelled(_ stacks: [[UInt8]]) -> [[String]] {
        var names = FoldedFrameNames()
        var spelled: [String] = []
        return stacks.map { stack in
            stack.withUnsafeBufferPointer { bytes in
                names.split(bytes) { name in
                    spelled.append(name)
                    return Int32(spelled.count - 1)
                }
            }
            return names.frames.map { spelled[Int($0)] }
        }
    }

    /// What splitting at every `;` gives.
    static func naive(_ stack: [UInt8]) -> [String] {
        stack.isEmpty ? [] : stack.split(separator: UInt8(ascii: ";"), omittingEmptySubsequences: false)
            .map { String(decoding: $0, as: UTF8.self) }
    }

    @Test func stacksThatBeginAlikeSplitAsEveryStackAlone() {
        let stacks = ["a;b;c", "a;b", "a", "a;b;c;d", "a;bc", "a;b;", "a;b;;", ";", "", ";;", "a;b;c", "ab;c", "a",
                      "a;b;c;d", "a;;", "b"].map { Array($0.utf8) }
        #expect(Self.spelled(stacks) == stacks.map(Self.naive))
    }

    @Test func aThousandStacksInEveryOrderSplitAlike() {
        var state: UInt64 = 42
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(state >> 33) % bound
        }
        let stacks = (0..<1000).map { _ in
            Array((0..<(1 + next(6))).map { _ in ["main", "run", "a", "ab", "", "b"][next(6)] }.joined(separator: ";").utf8)
        }
        #expect(Self.spelled(stacks) == stacks.map(Self.naive))
        #expect(Self.spelled(stacks.sorted { $0.lexicographicallyPrecedes($1) })
            == stacks.sorted { $0.lexicographicallyPrecedes($1) }.map(Self.naive))
    }

    @Test func eachNameIsGivenItsNumberOnce() {
        var names = FoldedFrameNames()
        var given: [String] = []
        for stack in ["main;a;b", "main;a;c", "other;a;b", "main;a;b"] {
            Array(stack.utf8).withUnsafeBufferPointer { bytes in
                names.split(bytes) { name in
                    given.append(name)
                    return Int32(given.count - 1)
                }
            }
        }
        #expect(given == ["main", "a", "b", "c", "other"])
        #expect(names.frames == [0, 1, 2])
    }

    @Test func theReportMergesStacksWhoseNamesSwiftHoldsEqual() throws {
        // `café` composed and decomposed are one name to the report (as they were before stacks were numbered):
        // their stacks are one, the heaviest, with 2 + 4 samples.
        var folded = FoldedStacks()
        folded.add(folded: "main;work", count: 3)
        folded.add(folded: "main;cafe\u{301}", count: 2)
        folded.add(folded: "main;caf\u{E9}", count: 4)
        let report = ProfileReport(folded, inputs: [])
        #expect(report.profile.heaviestStackCount == 6 && report.profile.heaviestStack.count == 2)
        #expect(report.exact.heaviest.text == "6")
        // Without such names every stack is its own: the heaviest is found without looking stacks up.
        var plain = FoldedStacks()
        plain.add(folded: "main;work", count: 3)
        plain.add(folded: "main;idle", count: 3)
        plain.add(folded: "main;a;b", count: 2)
        let distinct = ProfileReport(plain, inputs: [])
        #expect(distinct.profile.heaviestStack == ["main", "idle"] && distinct.profile.heaviestStackCount == 3)
    }
}
