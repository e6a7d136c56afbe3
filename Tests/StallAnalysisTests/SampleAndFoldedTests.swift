import Testing
@testable import StallAnalysis

/// macOS sample reports and folded input.
@Suite struct SampleAndFoldedTests {
    @Test func sampleKeepsBlockedMainThreadWithSelfCounts() throws {
        let text = try FoldFixture.text("sample-report.txt")
        // The whole output: Fixtures/golden/fold/sample-report.expected.
        #expect(text.contains(";MyApp`$s5MyApp4loadyyF;libsystem_kernel`__ulock_wait 25\n"))
    }

    @Test func sampleFilterWaitingNoModulesAndDemangle() throws {
        let filtered = try FoldFixture.text("sample-report.txt") {
            $0.sample.filterWaiting = true
            $0.sample.noModules = true
        }
        #expect(!filtered.contains("__ulock_wait"))
        #expect(filtered.contains("Thread_1002;thread_start;work;memcpy 5\n"))
        let demangled = try FoldFixture.text("sample-report.txt") { $0.transforms.demangleSwift = true }
        #expect(demangled.contains("MyApp`MyApp.load() -> ();libsystem_kernel`__ulock_wait 25"))
    }

    @Test func sampleStructureErrors() {
        func failure(_ report: String) -> String? {
            FoldFixture.badData { try FoldFixture.foldBytes(Array(report.utf8)) { $0.format = .sample } }?.reason
        }
        let head = "Call graph:\n    3 Thread_1\n    + 3 start  (in dyld) + 1  [0x1]\n"
        #expect(failure(head)?.contains("cut short") == true)
        #expect(failure(head + "    +    3 odd  (in x)\nTotal number in stack\n")?.contains("odd indentation") == true)
        #expect(failure(head + "    +       3 deep  (in x)\nTotal number in stack\n")?.contains("skips a level") == true)
        #expect(failure(head + "    +   x deep  (in x)\nTotal number in stack\n")?.contains("invalid sample count") == true)
        #expect(failure(head + "no indent\nTotal number in stack\n")?.contains("four spaces") == true)
        #expect(failure(head + "Total number in stack\n") == nil)
    }

    @Test func foldedMergesFractionsAndCRLF() throws {
        let (text, warnings) = try FoldFixture.fold(["folded-mixed.txt"])
        #expect(text == "main;a;b 5\nmain;c 0.75\nmain;d 1\nmain;x;x;x;y 4\n")
        #expect(warnings == [
            "\(FoldFixture.path("folded-mixed.txt")): 1 unrecognized line skipped (line 6: \"not a stack line\"); --strict makes this an error"
        ])
        let merged = try FoldFixture.text("folded-mixed.txt") { $0.transforms.mergeRecursion = true }
        #expect(merged.contains("main;x;y 4\n"))
    }

    @Test func foldedUTF16WithByteOrderMark() throws {
        let text = "a;b 2\r\na;b 1\r\n"
        let le: [UInt8] = [0xFF, 0xFE] + text.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
        let be: [UInt8] = [0xFE, 0xFF] + text.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
        #expect(try FoldFixture.foldBytes(le) == "a;b 3\n")
        #expect(try FoldFixture.foldBytes(be) == "a;b 3\n")
    }

    @Test func severalInputsFoldTogether() throws {
        let (text, _) = try FoldFixture.fold(["folded-mixed.txt", "folded-mixed.txt"])
        #expect(text.hasPrefix("main;a;b 10\n"))
    }
}
