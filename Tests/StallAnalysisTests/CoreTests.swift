import Foundation
import Testing

@testable import StallAnalysis
import StallFormat

@Suite struct FoldedStacksTests {
    @Test func mergesAndSortsByBytes() {
        var stacks = FoldedStacks()
        stacks.add(frames: ["main", "b"], count: 2)
        stacks.add(frames: ["main", "a"])
        stacks.add(folded: "main;b", count: 1)
        stacks.add(folded: "Main;z", count: 0.5)
        #expect(stacks.count == 3)
        #expect(stacks.total == 4.5)
        // Byte order puts uppercase before lowercase, as `LC_ALL=C sort` does.
        #expect(stacks.rendered() == "Main;z 0.5\nmain;a 1\nmain;b 3\n")
    }

    @Test func countsFormatLikeFoldedFiles() {
        #expect(FoldedStacks.format(3) == "3")
        #expect(FoldedStacks.format(0.25) == "0.25")
        #expect(FoldedStacks.format(1e12) == "1000000000000")
    }
}

@Suite struct ByteStreamTests {
    func stream(_ text: String) throws -> ByteStream {
        let path = NSTemporaryDirectory() + "bytestream-\(UUID().uuidString)"
        _ = FileManager.default.createFile(atPath: path, contents: Data(text.utf8))
        defer { unlink(path) }
        return try InputSource(path: path).open()  // the open descriptor outlives the unlink
    }

    func lines(_ stream: ByteStream) throws -> [String] {
        var result: [String] = []
        while let line = try stream.nextLine() { result.append(String(decoding: line, as: UTF8.self)) }
        return result
    }

    @Test func splitsLinesWithAndWithoutCRLFAndAFinalLineWithoutNewline() throws {
        #expect(try lines(stream("a\r\nb\n\nc")) == ["a", "b", "", "c"])
        #expect(try lines(stream("")) == [])
    }

    @Test func peekDoesNotConsume() throws {
        let s = try stream("hello\nworld\n")
        #expect(Array(try s.peek(3)) == Array("hel".utf8))
        #expect(try lines(s) == ["hello", "world"])
        #expect(s.lineNumber == 2)
    }

    @Test func longLinesAcrossManyChunks() throws {
        let long = String(repeating: "x", count: 300_000)
        #expect(try lines(stream("\(long)\nshort\n\(long)")) == [long, "short", long])
    }

    @Test func missingFilesAndDirectoriesAreInputErrors() {
        #expect(throws: StallError.self) { try InputSource(path: "/nonexistent/x").open() }
        #expect(throws: StallError.self) { try InputSource(path: "/tmp").open() }
    }
}

@Suite struct SwiftDemanglerTests {
    @Test func demanglesSwiftSymbolsAndLeavesOthers() {
        #expect(SwiftDemangler.demangle("$sSi1poiyS2i_SitFZ") == "static Swift.Int.+ infix(Swift.Int, Swift.Int) -> Swift.Int")
        #expect(SwiftDemangler.readable("_$sSS5countSivg") == "Swift.String.count.getter : Swift.Int")
        #expect(SwiftDemangler.demangle("pthread_mutex_lock") == nil)
        #expect(SwiftDemangler.readable("main") == "main")
    }

    @Test func aPLTStubOfASwiftFunctionDemanglesWithItsSuffixKept() {
        #expect(StackTransforms.demangled("$s4main3fooyyF@plt") == "main.foo() -> ()@plt")
        #expect(StackTransforms.demangled("$s4main3fooyyF@plt_[j]") == "main.foo() -> ()@plt_[j]")
        #expect(StackTransforms.demangled("memcpy@plt") == "memcpy@plt")
    }

    @Test func simplifiesWithTheToolchainsLibrary() throws {
        try #require(SwiftDemangler.canSimplify, "libswiftDemangle.so ships with the toolchain that built this test")
        #expect(SwiftDemangler.simplified("$s12StallSamples8BusyWorkO7descend_5untilS2i_s6UInt64VtFZ")
            == "static BusyWork.descend(_:until:)")
        #expect(SwiftDemangler.simplified("$sSi1poiyS2i_SitFZ") == "static Int.+ infix(_:_:)")
        #expect(SwiftDemangler.simplified("$sNotAValidSymbol") == nil)
        #expect(SwiftDemangler.simplified("memcpy") == nil)
    }
}
