import Foundation
import StallTestSupport
import Testing

/// `stallprof report` on profiles that are not captures, as a perf or FlameGraph user runs it.
@Suite struct ReportProfileCLITests {
    static let perf = CLI.fixture("perf-script.txt")

    @Test func perfScriptAsText() throws {
        let (status, text, errors) = try CLI.run(["report", "--top", "3", Self.perf], input: "")
        #expect(status == 0)
        #expect(errors.contains("1 unrecognized line skipped (line 34"))
        #expect(text.contains("  total 500 µs of time (500138 counts of 1 ns) in 6 distinct stacks\n"))
        #expect(text.contains("""
            top self functions (the leaf of each stack)
                self    share  function
              250 µs   49.99%  clock_gettime@@GLIBC_2.17
              250 µs   49.99%  native_safe_halt
              100 ns    0.02%  org/example/Foo:.bar

            top total functions
            """))
        #expect(text.contains("  500 µs   99.97%  my_app\n  250 µs   49.99%  [unknown]\n  250 µs   49.99%  main\n\n"))
    }

    @Test func perfScriptAsJSONWithPerfOptions() throws {
        let (status, out, _) = try CLI.run(["report", "--json", "--format", "perf", "--count", "samples", "--pid",
                                            "-"], input: try String(contentsOfFile: Self.perf, encoding: .utf8))
        #expect(status == 0)
        let json = try CLI.json(out)
        #expect(json["schema"] as? String == "stallprof.profile-report/v1")
        #expect(json["unit"] as? String == "samples" && json["total"] as? Int == 6)
        #expect((json["inputs"] as? [[String: Any]])?.first?["format"] as? String == "perf")
        let total = try #require(json["topTotal"] as? [[String: Any]])
        #expect(total.first?["function"] as? String == "my_app-4242" && total.first?["count"] as? Int == 2)
        // Without --count samples: periods; --event-filter picks the other event.
        let (_, periods, _) = try CLI.run(["report", "--json", "--event-filter", "instructions:u", Self.perf], input: "")
        let weighted = try CLI.json(periods)
        #expect(weighted["unit"] as? String == "instructions" && weighted["total"] as? Int == 1000)
        #expect((weighted["topSelf"] as? [[String: Any]])?.first?["function"] as? String == "skipped")
    }

    @Test func foldedRecursionFromStandardInput() throws {
        let (status, text, _) = try CLI.run(["report", "-"], input: "main;f;f;f;g 6\nmain;h 2\n")
        #expect(status == 0)
        #expect(text.hasPrefix("profile (folded): <stdin>\n  total 8 samples in 2 distinct stacks\n"))
        #expect(text.contains("      6   75.00%  f\n"))  // once per stack, not three times
        #expect(text.contains("hint: recursion: f calls itself (in 75 % of samples)"))
        let (_, merged, _) = try CLI.run(["report", "--merge-recursion", "-"], input: "main;f;f;f;g 6\nmain;h 2\n")
        #expect(!merged.contains("recursion"))
    }

    @Test func emptyBadStrictAndMixedInputs() throws {
        let empty = try CLI.temporary([], suffix: ".txt")
        let bad = try CLI.temporary(Array("not a profile at all\n".utf8), suffix: ".txt")
        let capture = try ReportFixtures.write(ReportFixtures.mixedRecords(), name: "report-profile-cli")
        defer { [empty, bad, capture].forEach { try? FileManager.default.removeItem(atPath: $0) } }
        let (emptyStatus, _, emptyError) = try CLI.run(["report", empty], input: "")
        #expect(emptyStatus == 0 && emptyError.contains("\(empty): empty input (no data)"))
        let (badStatus, badOut, badError) = try CLI.run(["report", bad], input: "")
        #expect(badStatus == 65 && badOut.isEmpty)
        #expect(badError.hasPrefix("stallprof: error: \(bad): line 1: cannot detect the format"))
        let (strictStatus, _, strictError) = try CLI.run(["report", "--strict", Self.perf], input: "")
        #expect(strictStatus == 65 && strictError.contains("\(Self.perf): line 34: "))
        let (mixedStatus, _, mixedError) = try CLI.run(["report", capture, Self.perf], input: "")
        #expect(mixedStatus == 64 && mixedError.contains("\(capture) is a stallprof capture and \(Self.perf) is not"))
        let (foldedStatus, _, _) = try CLI.run(["report", "--format", "folded", Self.perf], input: "")
        #expect(foldedStatus == 65)  // perf script is not folded text: no stack counts
        // A capture is still the stall report.
        let (captureStatus, captureText, _) = try CLI.run(["report", capture], input: "")
        #expect(captureStatus == 0 && captureText.contains("episodes:"))
    }
}
