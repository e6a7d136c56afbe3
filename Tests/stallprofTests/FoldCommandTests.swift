import Foundation
import StallAnalysis
import StallFormat
import Testing

/// `stallprof fold` on real captures: names, `--state`, and what happens with bad input.
@Suite struct FoldCommandTests {
    static let demo = CLI.product("stall-demo")

    /// Runs stallprof; returns status, stdout and stderr.
    func stallprof(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
        let result = try CLI.run(arguments)
        return (result.status, result.out, result.err)
    }

    /// One capture holding a busy and a blocked stall? The demo makes one stall per run, so fold two captures.
    func captures() throws -> (busy: String, blocked: String) {
        let busy = CLI.temporary("fold-busy.stalls"), blocked = CLI.temporary("fold-blocked.stalls")
        let env = [EnvironmentName.threshold: "100", EnvironmentName.interval: "5"]
        _ = try CLI.run(["--stall", "busy", "--stall-ms", "400", "--output", busy], environment: env, executable: Self.demo)
        _ = try CLI.run(["--stall", "blocked", "--stall-ms", "400", "--output", blocked], environment: env, executable: Self.demo)
        return (busy, blocked)
    }

    /// The vDSO is a file on no disk: the watchdog puts a copy in the capture (type 12) and its frames are named
    /// from it, as perf names them, not `[vdso]`. Every address of the copy's text is looked up (samples land in
    /// the vDSO about 1 % of the demo's busy time: too seldom to count on); a fold of the capture has no `[vdso]`.
    @Test func vdsoFramesAreNamedFromTheCopyInTheCapture() throws {
        let busy = CLI.temporary("fold-vdso.stalls")
        defer { unlink(busy) }
        let env = [EnvironmentName.threshold: "100", EnvironmentName.interval: "5"]
        _ = try CLI.run(["--stall", "busy", "--stall-ms", "400", "--output", busy], environment: env, executable: Self.demo)
        let capture = try CaptureReader.parse(Array(try Data(contentsOf: URL(fileURLWithPath: busy))), source: busy)
        let copy = try #require(capture.imageContents.first, "no image contents record")
        let vdso = try #require(capture.images.first { $0.start <= copy.address && copy.address < $0.end })
        #expect(vdso.path.hasPrefix("linux-vdso"), "\(vdso.path)")
        let symbolizer = Symbolizer(capture: capture)
        let names = Set(stride(from: vdso.start, to: vdso.end, by: 4).map { symbolizer.name(for: $0, isReturnAddress: false) })
        #expect(names.contains("__vdso_clock_gettime") || names.contains("__kernel_clock_gettime"), "\(names)")
        // Without the copy (a capture from an older writer), perf's name.
        #expect(Symbolizer(images: capture.images).name(for: copy.address + 0x800, isReturnAddress: false) == "[vdso]")
        let folded = try stallprof(["fold", busy])
        #expect(folded.status == 0 && !folded.out.contains("[vdso]"), "\(folded.out)")
    }

    @Test func foldPrintsSortedDemangledStacksAndFiltersByState() throws {
        let (busy, blocked) = try captures()
        defer { unlink(busy); unlink(blocked) }
        let all = try stallprof(["fold", busy, blocked])
        #expect(all.status == 0, "\(all.err)")
        let lines = all.out.split(separator: "\n").map(String.init)
        #expect(lines == lines.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) })
        for line in lines {
            let count = try #require(line.split(separator: " ").last)
            #expect(Int(count) ?? 0 > 0)
        }
        #expect(all.out.contains("static StallSamples.BusyWork.descend(_: Swift.Int, until: Swift.UInt64) -> Swift.UInt64"))
        #expect(all.out.contains("StallSamples.BlockedWork.lockContended"))
        #expect(!all.out.contains("$s12StallSamples"))

        let busyOnly = try stallprof(["fold", "--state", "busy", busy, blocked])
        #expect(busyOnly.out.contains("BusyWork.descend") && !busyOnly.out.contains("BlockedWork"))
        let blockedOnly = try stallprof(["fold", "--state=blocked", busy, blocked])
        #expect(blockedOnly.out.contains("BlockedWork") && !blockedOnly.out.contains("BusyWork.descend"))

        let simple = try stallprof(["fold", "--simplify-names", busy])
        #expect(simple.out.contains("static BusyWork.descend(_:until:);static BusyWork.descend(_:until:)"))
        let svg = try stallprof(["flamegraph", "--simplify-names", "--state", "busy", busy])
        #expect(svg.status == 0 && svg.out.contains("BusyWork.descend(_:until:)"))
        let chart = try stallprof(["flamegraph", "--flamechart", busy, blocked])
        #expect(chart.status == 0 && chart.out.contains("Flame Chart") && chart.out.contains("BlockedWork"))

        let mangled = try stallprof(["fold", "--no-demangle", busy])
        #expect(mangled.out.contains("$s12StallSamples8BusyWorkO7descend"))

        let output = CLI.temporary("fold.out")
        defer { unlink(output) }
        let toFile = try stallprof(["fold", "-o", output, busy, blocked])
        #expect(toFile.status == 0 && toFile.out.isEmpty)
        #expect(try String(contentsOfFile: output, encoding: .utf8) == all.out)
    }

    @Test func reportSummarizesRealCaptures() throws {
        let (busy, blocked) = try captures()
        defer { unlink(busy); unlink(blocked) }
        let report = try stallprof(["report", busy, blocked])
        #expect(report.status == 0, "\(report.err)")
        #expect(report.out.contains("capture \(busy)\n  pid "))
        #expect(report.out.contains("2 episodes: 2 stalls, 0 saturated (1 busy, 1 blocked)"))
        // Names read short in the text (--names short is its default), as Xcode shows Swift frames.
        #expect(report.out.contains("BusyWork.burn(until:)") && !report.out.contains("Swift.UInt64"))
        #expect(report.out.contains("__lll_lock_wait") || report.out.contains("pthread_mutex_lock"))
        // The blocked stall's leaf is libc's wait; the report also names the app's frames, the innermost one
        // (nearest the leaf) in every sample. stall-demo's own module (top-level code: named after the
        // executable) has only the closure that runs the stall; its workloads live in StallSamples, a module of
        // their own, app code once --app-module says so.
        #expect(report.out.contains("app code: module stall_demo\n"))
        #expect(report.out.contains("app frames on the stack"))
        // Each with the line most of its samples were at (issue 19), below it when the two do not fit on one row.
        #expect(report.out.contains("100%   100%   closure #1 in stall_demo at main.swift:"))
        #expect(!report.out.contains("%   BlockedWork.lockContended"))
        let owned = try stallprof(["report", "--app-module", "stall_demo", "--app-module", "StallSamples", busy, blocked])
        #expect(owned.out.contains("app code: modules StallSamples, stall_demo\n"))
        #expect(owned.out.contains("100%   100%   BlockedWork.lockContended(_:) at Workloads.swift:"))
        #expect(report.out.split(separator: "\n").allSatisfy { $0.count <= 80 })
        // --names full: as the demangler writes them; the location then goes on a row of its own when it must.
        let full = try stallprof(["report", "--names", "full", busy, blocked])
        #expect(full.out.contains("100%   100%   closure #1 ") && full.out.contains(" in stall_demo\n"))
        #expect(full.out.contains("\n                  at main.swift:") && full.out.contains("StallSamples.BusyWork.burn"))
        #expect(try stallprof(["report", "--names", "long", busy]).status == 64)
        let short = try stallprof(["report", "--simplify-names", "--names", "full", "--state", "busy", busy])
        #expect(short.out.contains("BusyWork.burn(until:)") && !short.out.contains("Swift.UInt64"))
        #expect(try stallprof(["report", "--top", "0", busy]).status == 64)
        #expect(try stallprof(["report", "/nonexistent.stalls"]).status == 66)
    }

    @Test func truncatedCaptureFoldsWithAWarning() throws {
        let (busy, blocked) = try captures()
        defer { unlink(busy); unlink(blocked) }
        var bytes = try CaptureReader.readWholeFile(busy)
        bytes.removeLast(7)
        let cut = CLI.temporary("cut.stalls")
        defer { unlink(cut) }
        _ = FileManager.default.createFile(atPath: cut, contents: Data(bytes))
        let result = try stallprof(["fold", cut])
        #expect(result.status == 0)
        #expect(result.err.contains("\(cut): byte "))
        #expect(result.err.contains("ends inside a record"))
        #expect(result.out.contains("BusyWork.descend"))
    }

    @Test func badInputAndUsageGetTheirExitCodes() throws {
        let foreign = CLI.temporary("foreign.txt")
        let empty = CLI.temporary("empty")
        let corrupt = CLI.temporary("corrupt.stalls")
        defer { unlink(foreign); unlink(empty); unlink(corrupt) }
        _ = FileManager.default.createFile(atPath: foreign, contents: Data("hello world\n".utf8))
        _ = FileManager.default.createFile(atPath: empty, contents: Data())
        var bytes = CaptureFormat.magic + [1, 0, 0, 0, 0, 0, 0, 0] + [1, 4, 0, 0, 0, 9, 9, 9, 9, 0, 0, 0, 0]
        bytes += [6, 8, 0, 0, 0] + [UInt8](repeating: 0, count: 12)
        _ = FileManager.default.createFile(atPath: corrupt, contents: Data(bytes))

        let foreignResult = try stallprof(["fold", foreign])
        #expect(foreignResult.status == 65)
        #expect(foreignResult.err.contains(foreign) && foreignResult.err.contains("line 1"))
        // An empty input is a warning naming it and exit 0, as for every command (issue 9).
        let emptyResult = try stallprof(["fold", empty])
        #expect(emptyResult.status == 0 && emptyResult.err.contains("\(empty): empty input"))
        let corruptResult = try stallprof(["fold", "--format", "stallprof", corrupt])
        #expect(corruptResult.status == 65)
        #expect(corruptResult.err.contains("\(corrupt): byte 16"))
        // The version, as perf and inferno users ask for it: -V, and after a subcommand too.
        for arguments in [["--version"], ["-V"], ["fold", "--version"], ["report", "-V"]] {
            let asked = try stallprof(arguments)
            #expect(asked.status == 0 && asked.out.hasPrefix("stallprof "), "\(arguments): \(asked)")
        }
        let missing = try stallprof(["fold", "/nonexistent/file.stalls"])
        #expect(missing.status == 66)  // sysexits' EX_NOINPUT
        #expect(missing.err.contains("/nonexistent/file.stalls"))

        // No FILE: standard input when it is not a terminal (the test runner's is not); a terminal is a usage
        // error (TrustCLITests).
        #expect(try stallprof(["fold", "--state", "sleepy", foreign]).status == 64)
        #expect(try stallprof(["fold", "--bogus", foreign]).status == 64)
        #expect(try stallprof(["frobnicate"]).status == 64)
        #expect(try stallprof([]).status == 64)
        let help = try stallprof(["fold", "--help"])
        #expect(help.status == 0 && help.out.contains("USAGE: stallprof fold"))
        #expect(try stallprof(["--help"]).status == 0)
    }
}
