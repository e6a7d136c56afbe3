import Foundation
import Testing

/// Source lines in the report (issue 19), end to end: stall-demo's busy stall, whose frames are in
/// samples/StallSamples/Workloads.swift; each line the report names must lie inside the function it names.
@Suite struct ReportLinesTests {
    /// Workloads.swift's lines, and the range of lines of the function declared as `func NAME(`.
    static let source: [Substring] = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        let text = (try? String(contentsOf: url.appendingPathComponent("samples/StallSamples/Workloads.swift"), encoding: .utf8)) ?? ""
        return text.split(separator: "\n", omittingEmptySubsequences: false)
    }()

    /// Lines (1-based) from `func name(` to the line before the next declaration at its indentation or less.
    static func lines(ofFunction name: String) -> ClosedRange<Int>? {
        guard let start = source.firstIndex(where: { $0.contains("func \(name)(") }) else { return nil }
        let indent = source[start].prefix { $0 == " " }.count
        let end = source[(start + 1)...].firstIndex { line in
            let trimmed = line.drop { $0 == " " }
            return !trimmed.isEmpty && line.count - trimmed.count <= indent && trimmed != "}"
        } ?? source.count
        return (start + 1)...end
    }

    /// Runs stall-demo with `stall` for 600 ms into a new capture at `path` and returns the report's first episode
    /// (JSON).
    func firstEpisode(_ stall: String, path: String) throws -> [String: Any] {
        let run = try CLI.run(["--stall", stall, "--stall-ms", "600", "--output", path], executable: CLI.product("stall-demo"))
        #expect(run.status == 0, "\(run.err)")
        let json = try CLI.run(["report", "--json", path])
        let root = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [String: Any])
        return try #require((root["episodes"] as? [[String: Any]])?.first)
    }

    /// `flamegraph --lines`: the same frames as without, each title saying where most of its samples were, inside
    /// the function it names (`fold --lines` is the way to split a function's frames by line).
    @Test func theFlameGraphKeepsItsFramesAndItsTitlesSayTheirLines() throws {
        let path = CLI.temporary("lines-flame.stalls")
        defer { unlink(path) }
        let run = try CLI.run(["--stall", "busy", "--stall-ms", "600", "--output", path], executable: CLI.product("stall-demo"))
        #expect(run.status == 0, "\(run.err)")
        func titles(_ options: [String]) throws -> [String] {
            let svg = try CLI.run(["flamegraph"] + options + [path]).out
            return svg.components(separatedBy: "<title>").dropFirst().compactMap { $0.components(separatedBy: "</title>").first }
        }
        let plain = try titles([]), lined = try titles(["--lines"])
        #expect(!plain.contains { $0.contains(" at ") })
        let place = try #require(try Regex(#" at ([^ ]+):([0-9]+) \("#))
        #expect(lined.map { $0.replacing(place, with: " (") } == plain)
        let burn = try #require(lined.first { $0.contains("BusyWork.burn(until:") })
        let match = try #require(burn.firstMatch(of: place))
        #expect(match.output[1].substring == "Workloads.swift", "\(burn)")
        let line = try #require(Int(match.output[2].substring ?? ""))
        #expect(Self.lines(ofFunction: "burn")?.contains(line) == true, "\(burn)")
    }

    @Test func theHeaviestStackAndTopSelfNameLinesInsideTheirFunctions() throws {
        let path = CLI.temporary("lines.stalls")
        defer { unlink(path) }
        let episode = try firstEpisode("busy", path: path)
        let frames = try #require(episode["heaviestStackFrames"] as? [[String: Any]])
        #expect(frames.map { $0["function"] as? String ?? "" } == episode["heaviestStack"] as? [String])
        let descend = try #require(Self.lines(ofFunction: "descend")), burn = try #require(Self.lines(ofFunction: "burn"))
        var checked = 0
        for frame in frames {
            let function = frame["function"] as? String ?? ""
            guard function.contains("BusyWork.descend") || function.contains("BusyWork.burn") else { continue }
            // Code the compiler made up (line 0: spills, the loop's bookkeeping) has no line: null, never a guess.
            guard let file = frame["file"] as? String, let line = frame["line"] as? Int else {
                #expect(frame["line"] is NSNull)
                continue
            }
            #expect(file.hasSuffix("/samples/StallSamples/Workloads.swift"))
            #expect((function.contains("descend") ? descend : burn).contains(line), "\(function) at line \(line)")
            checked += 1
        }
        #expect(checked >= 2, "\(frames)")
        // fold's --inline and --lines shape names only: the report keeps one name per frame (it crashed once).
        let inline = try CLI.run(["report", "--inline", "--lines", path])
        #expect(inline.status == 0 && inline.out.contains(" at Workloads.swift:") && !inline.out.contains("_[i]"), "\(inline.err)")
        // The text: the top self function (the busy loop) with its line.
        let text = try CLI.run(["report", path]).out
        // Its line ends its row, or is a row of its own below it (` at ` or `at ` under the function).
        let rows = text.split(separator: "\n").map(String.init)
        let index = try #require(rows.firstIndex { $0.contains("BusyWork.") }, "\(text)")
        let top = rows[index].contains(" at Workloads.swift:") ? rows[index] : rows[index + 1]
        #expect(top.contains("at Workloads.swift:"), "\(text)")
        let line = try #require(Int(top.split(separator: ":").last ?? ""))
        #expect(burn.contains(line) || descend.contains(line) || Self.lines(ofFunction: "monotonicNanoseconds")?.contains(line) == true, "\(top)")
    }

    /// The lock owner's stack (taken from its memory: it sleeps in a system call) has its places too.
    @Test func theLockOwnersStackNamesItsLines() throws {
        let path = CLI.temporary("lines-blocked.stalls")
        defer { unlink(path) }
        let episode = try firstEpisode("blocked", path: path)
        let blocked = try #require(episode["blockedOn"] as? [String: Any], "\(episode)")
        let frames = try #require(blocked["ownerStackFrames"] as? [[String: Any]], "\(blocked)")
        #expect(frames.map { $0["function"] as? String ?? "" } == blocked["ownerStack"] as? [String])
        let holdLock = try #require(Self.lines(ofFunction: "holdLock"))
        let frame = try #require(frames.first { ($0["function"] as? String ?? "").contains("BlockedWork.holdLock") }, "\(frames)")
        let line = try #require(frame["line"] as? Int, "\(frame)")
        #expect((frame["file"] as? String)?.hasSuffix("/samples/StallSamples/Workloads.swift") == true)
        #expect(holdLock.contains(line), "holdLock at line \(line), its lines \(holdLock)")
    }
}
