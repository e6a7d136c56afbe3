import Foundation
import StallFormat
import Testing

/// `stallprof symbolicate`: a capture of a stripped app, symbolicated where its debug file is, reads the same on a
/// machine without the binaries: fold (plain, with lines and inlines, short names), report (text and JSON) and each
/// export give what they gave from the binaries.
@Suite struct SymbolicateTests {
    /// Runs a stripped copy of stall-demo (a busy stall) from a directory of its own, its debug information split
    /// off first with `objcopy --only-keep-debug` into `debug/stall-demo.debug`. Returns the directory and capture.
    func captureOfAStrippedApp() throws -> (directory: String, capture: String) {
        let directory = CLI.temporary("symbolicate")
        for sub in ["bin", "debug"] {
            try FileManager.default.createDirectory(atPath: directory + "/" + sub, withIntermediateDirectories: true)
        }
        let binary = directory + "/bin/stall-demo", capture = directory + "/c.stalls"
        try FileManager.default.copyItem(atPath: CLI.product("stall-demo"), toPath: binary)
        for arguments in [["--only-keep-debug", binary, directory + "/debug/stall-demo.debug"], ["--strip-all", binary]] {
            let objcopy = try CLI.run(arguments, executable: "/usr/bin/objcopy")
            try #require(objcopy.status == 0, "objcopy: \(objcopy.err)")
        }
        let env = [EnvironmentName.threshold: "100", EnvironmentName.interval: "5"]
        let run = try CLI.run(["--stall", "busy", "--stall-ms", "600", "--output", capture], environment: env, executable: binary)
        try #require(run.status == 0, "\(run.err)")
        return (directory, capture)
    }

    /// `path` with the last character of its file name replaced by `~`: as long as before, no such file, yet in the
    /// same directory and with the same name as far as telling system libraries from the app goes (`libc.so.~`).
    static func elsewhere(_ path: String) -> String {
        guard path.hasPrefix("/"), let last = path.last, last != "/" else { return path }
        return String(path.dropLast()) + "~"
    }

    /// The capture at `path` as another machine holds it: every path in it (images, the executable, the
    /// symbolication's) moved ``elsewhere(_:)``, written to `out`. Returns what was renamed (old, new): the paths,
    /// then their file names.
    static func moveAway(_ path: String, to out: String) throws -> [(String, String)] {
        let bytes = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        var moved: [String: String] = [:]
        func move(_ old: String) -> String {
            let new = elsewhere(old)
            if new != old { moved[old] = new }
            return new
        }
        let records = try CaptureReader.records(bytes, source: path).records.map { record -> CaptureRecord in
            switch record {
            case .process(var process):
                process.executable = move(process.executable)
                return .process(process)
            case .image(var image):
                image.path = move(image.path)
                return .image(image)
            case .symbolication(var symbolication):
                for index in symbolication.sources.indices {
                    symbolication.sources[index].image = move(symbolication.sources[index].image)
                }
                return .symbolication(symbolication)
            default: return record
            }
        }
        try Data(CaptureFormat.file(of: records)).write(to: URL(fileURLWithPath: out))
        let name = { (path: String) in String(path.split(separator: "/").last ?? "") }
        return moved.map { ($0.key, $0.value) } + moved.map { (name($0.key), name($0.value)) }
    }

    /// The lines only one of `expected` and `got` holds, each marked `-` or `+`: what a failure prints.
    static func difference(_ expected: String, _ got: String) -> String {
        let before = Set(expected.split(separator: "\n")), after = Set(got.split(separator: "\n"))
        return (before.subtracting(after).map { "- " + $0 } + after.subtracting(before).map { "+ " + $0 }).sorted()
            .joined(separator: "\n")
    }

    /// `bytes` with every new path put back to its old one (same lengths: binary output stays valid).
    static func restored(_ bytes: [UInt8], _ moved: [(String, String)]) -> [UInt8] {
        var data = Data(bytes)
        for (old, new) in moved {
            let from = Data(new.utf8), to = Data(old.utf8)
            var start = data.startIndex
            while let range = data.range(of: from, in: start..<data.endIndex) {
                data.replaceSubrange(range, with: to)
                start = range.lowerBound + to.count
            }
        }
        return Array(data)
    }

    @Test func aSymbolicatedCaptureReadsTheSameWithoutItsBinaries() throws {
        let (directory, capture) = try captureOfAStrippedApp()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let commands: [[String]] = [
            ["fold"], ["fold", "--lines", "--inline"], ["fold", "--names", "short"], ["report"], ["report", "--json"],
            ["export", "--format", "speedscope", "--lines"], ["export", "--format", "chrome-trace"],
            ["export", "--format", "pprof", "--no-gzip"],
        ]
        let debug = ["--debug-dir", directory + "/debug"]
        let reference = try commands.map { command in try CLI.run(command + debug + [capture]) }
        for (command, result) in zip(commands, reference) { #expect(result.status == 0, "\(command): \(result.err)") }
        #expect(reference[0].out.contains("BusyWork.descend"))
        #expect(reference[1].out.contains("Workloads.swift:"))

        // Symbolicated without the debug file first: what could not be resolved is left to the files, so the
        // debug file still names it later.
        let early = directory + "/e.stalls"
        #expect(try CLI.run(["symbolicate", capture, "-o", early]).status == 0)
        let earlyFold = try CLI.run(["fold"] + debug + [early])
        #expect(earlyFold.out == reference[0].out, "\(Self.difference(reference[0].out, earlyFold.out))")

        let symbolicated = directory + "/s.stalls"
        let made = try CLI.run(["symbolicate"] + debug + [capture, "-o", symbolicated])
        #expect(made.status == 0, "\(made.err)")
        for sub in ["bin", "debug"] { try FileManager.default.removeItem(atPath: directory + "/" + sub) }
        // Symbolicated again without the binaries: what the first run found is kept, without a warning about it.
        let again = directory + "/a.stalls"
        let remade = try CLI.run(["symbolicate", symbolicated, "-o", again])
        #expect(remade.status == 0 && !remade.err.contains("stall-demo"), "\(remade.err)")
        for (from, to) in [(symbolicated, "/m.stalls"), (again, "/n.stalls")] {
            try compare(commands, reference, capture: capture, symbolicated: from, at: directory + to, directory: directory)
        }
    }

    /// Runs `commands` on `symbolicated` moved away (``moveAway(_:to:)``, to `path`: as long as `capture`'s path,
    /// which the report names) and compares with `reference`, the same commands on `capture` with its binaries.
    func compare(_ commands: [[String]], _ reference: [CLI.Result], capture: String, symbolicated: String, at away: String,
                 directory: String) throws {
        let moved = try Self.moveAway(symbolicated, to: away) + [(capture, away)]
        #expect(moved.count >= 7, "\(moved)")  // the executable, the Swift runtime, libc at least
        for (command, expected) in zip(commands, reference) {
            let result = try CLI.run(command + [away])
            #expect(result.status == 0, "\(command): \(result.err)")
            // The same warnings (images without lines among them), naming the same capture.
            #expect(String(decoding: Self.restored(Array(result.err.utf8), moved), as: UTF8.self) == expected.err,
                    "\(command): \(result.err)")
            var got = Self.restored(result.bytes, moved)
            if command == ["report"] {
                let text = String(decoding: got, as: UTF8.self)
                // The header wraps at 80 columns: words, not lines.
                let words = text.split(whereSeparator: \.isWhitespace).joined(separator: " ")
                #expect(words.contains("symbolicated") && words.contains("lines from stall-demo.debug"), "\(text)")
                got = Array(Self.withoutSymbolication(text).utf8)
            }
            if command == ["report", "--json"] {
                var json = try CLI.json(got), captures = try #require(json["captures"] as? [[String: Any]])
                let record = try #require(captures[0]["symbolication"] as? [String: Any])
                #expect((record["images"] as? [[String: Any]])?.contains { $0["lines"] as? String == directory + "/debug/stall-demo.debug" } == true)
                captures[0]["symbolication"] = NSNull()
                json["captures"] = captures
                #expect(NSDictionary(dictionary: json) == NSDictionary(dictionary: try CLI.json(expected.bytes)))
                continue
            }
            #expect(got == expected.bytes, "\(command): \(Self.firstDifference(got, expected.bytes))")
        }
    }

    @Test func usageErrorsBadInputAndSeveralCapturesIntoADirectory() throws {
        let directory = CLI.temporary("symbolicate-usage")
        try FileManager.default.createDirectory(atPath: directory + "/a", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory + "/b", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory + "/out", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = directory + "/a/one.stalls", second = directory + "/b/two.stalls", same = directory + "/b/one.stalls"
        let env = [EnvironmentName.threshold: "100", EnvironmentName.interval: "5"]
        let run = try CLI.run(["--stall", "busy", "--stall-ms", "600", "--output", first], environment: env,
                              executable: CLI.product("stall-demo"))
        try #require(run.status == 0, "\(run.err)")
        for copy in [second, same] { try FileManager.default.copyItem(atPath: first, toPath: copy) }

        #expect(try CLI.run(["symbolicate"]).status == 64)
        let several = try CLI.run(["symbolicate", first, second])
        #expect(several.status == 64 && several.err.contains("several captures need -o DIR"), "\(several.err)")
        let clash = try CLI.run(["symbolicate", first, same, "-o", directory + "/out"])
        #expect(clash.status == 64 && clash.err.contains("both be written to \(directory)/out/one.stalls"), "\(clash.err)")
        let missing = try CLI.run(["symbolicate", directory + "/none.stalls", "-o", directory + "/x.stalls"])
        #expect(missing.status == 66, "\(missing.err)")
        let text = try CLI.temporary(Array("not a capture\n".utf8), suffix: ".txt")
        defer { unlink(text) }
        let bad = try CLI.run(["symbolicate", text, "-o", directory + "/x.stalls"])
        #expect(bad.status == 65 && bad.err.contains("\(text): byte 0: not a stallprof capture"), "\(bad.err)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/x.stalls"))

        // Into a directory, each under its own name; to standard output when it is no terminal.
        let both = try CLI.run(["symbolicate", first, second, "-o", directory + "/out"])
        #expect(both.status == 0, "\(both.err)")
        for name in ["one.stalls", "two.stalls"] {
            let capture = try CaptureReader.read(path: directory + "/out/" + name)
            #expect(capture.symbolication != nil && !capture.symbols.isEmpty)
        }
        let piped = try CLI.run(["symbolicate", first])
        #expect(piped.status == 0)
        let parsed = try CaptureReader.parse(piped.bytes, source: "stdout")
        #expect(parsed.symbolication?.appModules == ["stall_demo"])
        #expect(parsed.stalls.count == (try CaptureReader.read(path: first)).stalls.count)
    }

    /// The first line where `a` and `b` differ, both ways (binary output: its bytes' printable text).
    static func firstDifference(_ a: [UInt8], _ b: [UInt8]) -> String {
        let left = String(decoding: a, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        let right = String(decoding: b, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        for index in 0..<max(left.count, right.count) {
            let l = index < left.count ? left[index].prefix(300) : "(none)"
            let r = index < right.count ? right[index].prefix(300) : "(none)"
            if l != r { return "line \(index + 1): got \(l)\n  expected \(r)" }
        }
        return "same text, \(a.count) and \(b.count) bytes"
    }

    /// Report text without its `symbolicated ...` header line and that line's continuations.
    static func withoutSymbolication(_ text: String) -> String {
        var lines: [Substring] = [], skipping = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("  symbolicated ") { skipping = true; continue }
            if skipping && line.hasPrefix("    ") { continue }
            skipping = false
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}
