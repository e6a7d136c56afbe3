import Foundation
import StallAnalysis
import Testing

/// `fold` over many inputs parses them in parallel: the result is the same sum, in the same order, with the same
/// first error, as one after the other.
@Suite struct ParallelFoldTests {
    func write(_ text: String, _ name: String) throws -> InputSource {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("parallel-\(getpid())-\(name)").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return InputSource(path: path)
    }

    @Test func manyInputsSumAsOneAfterTheOther() throws {
        let inputs = try (0..<12).map { index in
            try write((0..<200).map { "main;f\($0 % (index + 3));leaf\($0 % 7) \(index + 1)" }.joined(separator: "\n"),
                      "sum-\(index).folded")
        }
        defer { inputs.forEach { unlink($0.path) } }
        let (together, _) = try Folder.fold(inputs, options: FoldOptions())
        var sequential = FoldedStacks()
        var diagnostics = Diagnostics()
        for input in inputs {
            try Folder.fold(input.open(), options: FoldOptions(), into: &sequential, diagnostics: &diagnostics)
        }
        #expect(together.rendered() == sequential.rendered())
        #expect(together.total == Double((1...12).reduce(0) { $0 + 200 * $1 }))
    }

    @Test func aSumOverTheInputsTooLargeIsDroppedWithAWarning() throws {
        let first = try write("a;b 18446744073709551615\na;c 1\n", "overflow-1.folded")
        let second = try write("a;b 1\na;c 2\n", "overflow-2.folded")
        defer { [first, second].forEach { unlink($0.path) } }
        let (stacks, diagnostics) = try Folder.fold([first, second], options: FoldOptions())
        #expect(stacks.rendered() == "a;b 18446744073709551615\na;c 3\n")
        #expect(diagnostics.warnings.contains { $0.contains(second.path) && $0.contains("a;b") && $0.contains("2^64-1") })
    }

    @Test func theFirstBadInputInOrderIsTheError() throws {
        let good = try write("a;b 1\n", "order-good.folded")
        let bad1 = try write("a;b x\n", "order-bad1.folded")
        let bad2 = try write("\u{0}\u{1}binary", "order-bad2.folded")
        defer { [good, bad1, bad2].forEach { unlink($0.path) } }
        var options = FoldOptions()
        options.format = .folded
        options.folded.strict = true
        #expect {
            try Folder.fold([good, bad1, bad2], options: options)
        } throws: { error in
            "\(error)".contains(bad1.path)
        }
    }
}
