import Foundation
import StallTestSupport
import Testing

/// `stallprof export` as a user runs it: formats, -o, exit codes for bad usage (64) and bad data (65).
@Suite struct ExportCLITests {
    static func run(_ arguments: [String], input: String = "") throws -> (Int32, [UInt8], String) {
        let result = try CLI.run(["export"] + arguments, input: Array(input.utf8))
        return (result.status, result.bytes, result.err)
    }

    @Test func exportsCapturesInEachFormat() throws {
        let capture = try ReportFixtures.write(ReportFixtures.mixedRecords(), name: "export-cli")
        defer { try? FileManager.default.removeItem(atPath: capture) }
        let (status, json, _) = try Self.run(["--format", "speedscope", "--stall", "1", "--stall", "4", capture])
        #expect(status == 0)
        let document = try CLI.json(json)
        #expect((document["profiles"] as? [[String: Any]])?.compactMap { $0["name"] as? String }
            == ["stall 1 (busy) at 2000 ms", "stall 4 (blocked) at 12000 ms"])
        let (traceStatus, trace, _) = try Self.run(["--format", "chrome-trace", "--state", "blocked", capture])
        #expect(traceStatus == 0)
        let events = try #require(try CLI.json(trace)["traceEvents"] as? [[String: Any]])
        #expect(Set(events.filter { $0["cat"] as? String == "stall" }.compactMap { $0["name"] as? String }) == ["blocked stall"])
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("export-cli-\(getpid()).pb.gz").path
        defer { try? FileManager.default.removeItem(atPath: out) }
        let (pprofStatus, stdout, _) = try Self.run(["--format", "pprof", capture, "-o", out])
        #expect(pprofStatus == 0 && stdout.isEmpty)
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)).starts(with: [0x1F, 0x8B]))
        // Perfetto: a Trace, packets (field 1, length-delimited) from its first byte.
        let (perfettoStatus, perfetto, _) = try Self.run(["--format", "perfetto", capture])
        #expect(perfettoStatus == 0 && perfetto.first == 0x0A && perfetto.count > 100)
    }

    @Test func foldedStandardInputExportsWithoutTimes() throws {
        let (status, json, _) = try Self.run(["--format", "speedscope", "-"], input: "main;a 2\nmain;b 1\n")
        #expect(status == 0)
        let profile = try #require((try CLI.json(json)["profiles"] as? [[String: Any]])?.first)
        #expect(profile["unit"] as? String == "none" && profile["weights"] as? [Int] == [2, 1])
    }

    @Test func badUsageAndBadDataExitCodes() throws {
        #expect(try Self.run(["main;a 1"]).0 == 64)  // no --format
        #expect(try Self.run(["--format", "svg", "-"]).0 == 64)
        let trace = try CLI.temporary(Array(#"{"traceEvents":[]}"#.utf8), suffix: ".json")
        defer { try? FileManager.default.removeItem(atPath: trace) }
        let (status, _, errors) = try Self.run(["--format", "pprof", "-o", "/dev/null", trace])
        #expect(status == 65 && errors.contains("a Chrome trace (traceEvents)"))
        let (noStacks, _, noStacksError) = try Self.run(["--format", "speedscope", "-"], input: "# only a comment\n")
        #expect(noStacks == 65 && !noStacksError.isEmpty)
        let capture = try ReportFixtures.write(ReportFixtures.mixedRecords(), name: "export-cli-mixed")
        defer { try? FileManager.default.removeItem(atPath: capture) }
        let folded = try CLI.temporary(Array("main;a 1\n".utf8), suffix: ".folded")
        defer { try? FileManager.default.removeItem(atPath: folded) }
        let (mixed, _, mixedError) = try Self.run(["--format", "speedscope", capture, folded])
        #expect(mixed == 64 && mixedError.contains("export them separately"))
        // Folded stacks have no times, and Perfetto's samples no weights: a usage error that says where to go.
        let (untimed, untimedOut, untimedError) = try Self.run(["--format", "perfetto", folded])
        #expect(untimed == 64 && untimedOut.isEmpty && untimedError.contains("perfetto needs timed samples"))
    }

    @Test func perfScriptKeepsItsTimesAndPprofItsCpuNanoseconds() throws {
        let perf = CLI.fixture("perf-script.txt")
        let (status, json, _) = try Self.run(["--format", "speedscope", perf])
        #expect(status == 0)
        let profiles = try #require(try CLI.json(json)["profiles"] as? [[String: Any]])
        // A profile per thread, in milliseconds: each cpu-clock sample weighs its period.
        #expect(profiles.first?["name"] as? String == "my app (tid 4243)" && profiles.count == 5)
        #expect(profiles.allSatisfy { $0["unit"] as? String == "milliseconds" })
        #expect(profiles.first?["weights"] as? [Double] == [0.25, 0.25])
        let (traceStatus, trace, _) = try Self.run(["--format", "chrome-trace", perf])
        let events = try #require(try CLI.json(trace)["traceEvents"] as? [[String: Any]])
        #expect(traceStatus == 0 && events.contains { $0["name"] as? String == "thread_name" && $0["tid"] as? Int == 4243 })
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("perf-cli-\(getpid()).pb").path
        defer { try? FileManager.default.removeItem(atPath: out) }
        #expect(try Self.run(["--format", "pprof", "--no-gzip", perf, "-o", out]).0 == 0)
        // The string table holds its sample types verbatim: cpu/nanoseconds, no wall time.
        let profile = try Data(contentsOf: URL(fileURLWithPath: out))
        #expect(profile.range(of: Data("\u{3}cpu".utf8)) != nil && profile.range(of: Data("\u{4}wall".utf8)) == nil)
    }

    /// Folded stacks whose export is longer than the piece an export is written in (256 KiB).
    static let manyStacks: String = (0..<20_000).map { "main;RunLoop.run;level\($0 % 9);Cell.layout(\($0));leaf \(1 + $0 % 7)\n" }
        .joined()

    @Test func anExportWrittenAsItIsMadeIsTheSameToAFileAndToStandardOutput() throws {
        let input = try CLI.temporary(Array(Self.manyStacks.utf8), suffix: ".folded")
        defer { try? FileManager.default.removeItem(atPath: input) }
        for format in ["speedscope", "chrome-trace", "pprof"] {
            let out = CLI.temporary("export.\(format)")
            defer { try? FileManager.default.removeItem(atPath: out) }
            let (status, stdout, errors) = try Self.run(["--format", format, input])
            let (fileStatus, nothing, _) = try Self.run(["--format", format, "-o", out, input])
            #expect(status == 0 && fileStatus == 0, "\(format): \(errors)")
            let written = Array(try Data(contentsOf: URL(fileURLWithPath: out)))
            #expect(nothing.isEmpty && stdout.count > 1 << 18 && written == stdout, "\(format): \(stdout.count) bytes")
        }
    }

    @Test func anExportThatCannotBeWrittenSaysWhereAndExits1() throws {
        let input = try CLI.temporary(Array(Self.manyStacks.utf8), suffix: ".folded")
        defer { try? FileManager.default.removeItem(atPath: input) }
        for format in ["speedscope", "chrome-trace", "pprof"] {
            let (status, _, errors) = try Self.run(["--format", format, "-o", "/dev/full", input])
            #expect(status == 1 && errors.contains("/dev/full") && errors.contains("No space left"), "\(format): \(errors)")
        }
    }
}
