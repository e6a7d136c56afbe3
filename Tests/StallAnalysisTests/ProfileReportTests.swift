import Foundation
import StallTestSupport
import Testing

@testable import StallAnalysis
import StallFormat

/// ``ProfileReport``: `stallprof report` on profiles that are not captures, and ``ReportInput`` choosing the kind.
@Suite struct ProfileReportTests {
    /// The perf-script fixture read as `report` reads it.
    static func perfReport(_ configure: (inout FoldOptions) -> Void = { _ in }) throws -> ProfileReport {
        var options = FoldOptions()
        configure(&options)
        var diagnostics = Diagnostics()
        let input = try ReportInput.read([InputSource(path: FoldFixture.path("perf-script.txt"))], options: options,
                                         diagnostics: &diagnostics)
        guard case .profile(let stacks, let inputs) = input else { throw ProfileReportTestFailure.notAProfile }
        #expect(inputs.map(\.format) == [.perf])
        return ProfileReport(stacks, inputs: inputs)
    }

    /// A sample without a call chain (`perf record -g` of code it could not unwind), even first in the file: perf
    /// script all the same; `fold` keeps stackcollapse-perf.pl's bare process, `report` names it `[no stack]`,
    /// never reading the process as a function.
    @Test func aSampleWithoutACallChainIsNoStackNotAFunction() throws {
        let text = "swift-frontend 1234 1.000: 100 cycles:\n\nprog 123 1.000: 100 cycles:\n\t    55e0 main+0x10 (/tmp/a)\n\n"
        #expect(try FoldFixture.foldBytes(Array(text.utf8)) == "prog;main 100\nswift-frontend 100\n")
        #expect(PerfScriptImporter.recognizes(Array("a 1 1.0: 1 cycles:\n\nb 2 2.0: 1 cycles:\n\n".utf8)[...]))
        #expect(!PerfScriptImporter.recognizes(Array("a 1 1.0: 1 cycles:\n\nhello\n".utf8)[...]))
        let path = try CLIFreeTemporary.write(text)
        defer { unlink(path) }
        var diagnostics = Diagnostics()
        let input = try ReportInput.read([InputSource(path: path)], options: FoldOptions(), diagnostics: &diagnostics)
        guard case .profile(let stacks, let inputs) = input else { throw ProfileReportTestFailure.notAProfile }
        let report = ProfileReport(stacks, inputs: inputs)
        #expect(report.profile.topSelf.map(\.function).sorted() == ["[no stack]", "main"])
    }

    @Test func perfScriptWeightedByPeriod() throws {
        let report = try Self.perfReport()
        #expect(report.unit == .time(nanosecondsPerCount: 1))
        #expect(report.profile.total == 500_138 && report.stacks == 6)
        #expect(report.profile.topSelf.map { "\($0.function) \(Int($0.count))" } == [
            "clock_gettime@@GLIBC_2.17 250000", "native_safe_halt 250000", "org/example/Foo:.bar 100", "tail 30",
            "alone 7", "std::function<int (int, int)>::operator 1",
        ])
        // Inclusive: the root of both my_app stacks has their sum; ties go outer frames first, then by name.
        #expect(report.profile.appFrames.prefix(4).map { "\($0.function) \(Int($0.count))" } == [
            "my_app 500000", "[unknown] 250000", "main 250000", "$s5MyApp6workeryyF 250000",
        ])
        #expect(report.profile.appFrames.count == 11)  // java (0.02 %) and the others are under 1 %
        #expect(report.profile.heaviestStackCount == 250_000 && report.profile.heaviestStack.last == "native_safe_halt")
        #expect(report.profile.hints.isEmpty)
        let text = report.text()
        #expect(text.hasPrefix("profile (perf script): "))
        #expect(text.contains("\n  total 500 µs of time (500138 counts of 1 ns) in 6 distinct stacks\n"))
        #expect(text.contains("  250 µs   49.99%  clock_gettime@@GLIBC_2.17\n"))
        #expect(text.contains("  500 µs   99.97%  my_app\n"))
        #expect(text.contains("heaviest stack: 250 µs, 49.99% (6 frames, root first)\n    my_app\n    [unknown]\n"))
    }

    @Test func perfScriptCountedPerSampleAsJSON() throws {
        let report = try Self.perfReport { $0.perf.countSamples = true; $0.perf.includePID = true }
        let json = try #require(try JSONSerialization.jsonObject(with: Data(report.json().utf8)) as? [String: Any])
        #expect(json["schema"] as? String == "stallprof.profile-report/v1")
        #expect(json["unit"] as? String == "samples" && json["total"] as? Int == 6 && json["stacks"] as? Int == 6)
        let total = try #require(json["topTotal"] as? [[String: Any]])
        #expect(total.first?["function"] as? String == "my_app-4242" && total.first?["count"] as? Int == 2)
        #expect(total.first?["share"] as? Double == 0.3333)
        let topSelf = try #require(json["topSelf"] as? [[String: Any]])
        #expect(topSelf.count == 5 && topSelf.allSatisfy { $0["count"] as? Int == 1 })
    }

    @Test func recursionCountsOncePerStackAndEmptyStacksCountInTheTotal() throws {
        var stacks = FoldedStacks()
        stacks.add(folded: "main;f;f;f;g", count: 6)
        stacks.add(folded: "main;h", count: 2)
        stacks.add(folded: "", count: 2)  // py-spy's idle ` 2` line
        let report = ProfileReport(stacks, inputs: [ProfileInput(path: "r.folded", format: .folded)])
        #expect(report.profile.total == 10)
        let f = try #require(report.profile.appFrames.first { $0.function == "f" })
        #expect(f.count == 6 && f.share == 0.6)
        #expect(report.profile.appFrames.first?.function == "main" && report.profile.appFrames.first?.count == 8)
        #expect(report.profile.hints.map(\.text) == ["recursion: f calls itself (in 60 % of samples)"])
        #expect(report.text().contains("hint: recursion: f calls itself (in 60 % of samples)\n"))
        #expect(report.text().contains("heaviest stack: 6 samples, 60.00% (5 frames, root first)\n"))

        var mutual = FoldedStacks()
        mutual.add(folded: "main;a;b;a;b;c", count: 3)
        mutual.add(folded: "main;[unknown];[unknown]", count: 5)  // unresolved frames prove no recursion
        mutual.unit = .named("cycles")
        let cycling = ProfileReport(mutual, inputs: [])
        #expect(cycling.profile.hints.isEmpty)  // 3 of 8: under half
        mutual.add(folded: "main;a;b;a", count: 10)
        let hints = ProfileReport(mutual, inputs: []).profile.hints.map(\.text)
        #expect(hints == ["recursion: the same frames keep cycling on the stack (in 72 % of cycles; 72 % show "
            + "this cycle): a -> b -> a"])
    }

    @Test func capturesAndProfilesDoNotMix() throws {
        let capture = try ReportFixtures.write(ReportFixtures.mixedRecords(), name: "profile-mix")
        defer { try? FileManager.default.removeItem(atPath: capture) }
        let perf = FoldFixture.path("perf-script.txt")
        for order in [[capture, perf], [perf, capture]] {
            var diagnostics = Diagnostics()
            #expect(throws: StallError.self) {
                try ReportInput.read(order.map(InputSource.init(path:)), options: FoldOptions(), diagnostics: &diagnostics)
            }
            do {
                _ = try ReportInput.read(order.map(InputSource.init(path:)), options: FoldOptions(), diagnostics: &diagnostics)
            } catch StallError.usage(let message) {
                #expect(message.hasPrefix("\(capture) is a stallprof capture and \(perf) is not"))
            }
        }
        var diagnostics = Diagnostics()
        guard case .captures(let captures) = try ReportInput.read(
            [InputSource(path: capture)], options: FoldOptions(), diagnostics: &diagnostics)
        else { throw ProfileReportTestFailure.notCaptures }
        #expect(captures.count == 1)
        // --format perf reads the capture as perf script text: binary, bad data with a position.
        var perfOnly = FoldOptions()
        perfOnly.format = .perf
        let failure = FoldFixture.badData {
            try ReportInput.read([InputSource(path: capture)], options: perfOnly, diagnostics: &diagnostics)
        }
        #expect(failure?.position.hasPrefix("byte ") == true)
    }
}

enum ProfileReportTestFailure: Error {
    case notAProfile, notCaptures
}

/// A temporary file for a test's text input.
enum CLIFreeTemporary {
    static func write(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("profile-\(UUID().uuidString).txt").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }
}
