import Foundation
import StallFormat
import Testing

/// `stallprof report` on a real freeze: chat-freeze under the watchdog (it never settles with its default
/// flags), killed once a stall with samples is on disk. Structural assertions only.
@Suite(.serialized)
struct ReportEndToEndTests {
    static var chatFreeze: String { CLI.product("chat-freeze") }

    /// Runs chat-freeze until its capture holds a stall with at least 30 samples (at most 30 s), then kills it.
    func recordChatFreeze(_ path: String) throws -> Capture {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.chatFreeze)
        process.arguments = ["--chunk-ms", "3"]
        process.environment = [EnvironmentName.output: path, EnvironmentName.threshold: "200", EnvironmentName.interval: "10"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        for _ in 0..<300 {
            usleep(100_000)
            if let capture = try? CaptureReader.parse(CaptureReader.readWholeFile(path), source: path),
                capture.stalls.contains(where: { $0.samples.count >= 30 })
            {
                return capture
            }
            if !process.isRunning { break }
        }
        Issue.record("no stall with 30 samples was recorded")
        return Capture(source: path)
    }

    @Test func chatFreezeReportNamesTheDriverBesideTheLeaf() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("report-e2e-\(getpid()).stalls").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let capture = try recordChatFreeze(path)
        try #require(!capture.stalls.isEmpty)
        let (status, json, _) = try CLI.run(["report", "--json", path], input: "")
        #expect(status == 0)
        let root = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let episodes = try #require(root["episodes"] as? [[String: Any]])
        let stall = try #require(episodes.first { ($0["samples"] as? Int ?? 0) >= 30 })
        #expect(stall["kind"] as? String == "stall" && stall["state"] as? String == "busy")
        let appFrames = (stall["appFrames"] as? [[String: Any]] ?? []).compactMap { $0["function"] as? String }
        let pass = try #require(appFrames.first { $0.contains("ChatLayout.pass") }, "appFrames: \(appFrames)")
        let passShare = (stall["appFrames"] as? [[String: Any]])?.first { $0["function"] as? String == pass }?["share"] as? Double
        #expect((passShare ?? 0) > 0.5, "the driver is on the stack in most samples")
        // The leaf that burns the time is Markdown code: a self function in release builds; in debug builds the
        // true leaves are the standard library's string functions it calls, and Markdown is the innermost app frame.
        let topSelf = (stall["topSelf"] as? [[String: Any]] ?? []).compactMap { $0["function"] as? String }
        let appSelf = (stall["appSelf"] as? [[String: Any]] ?? []).compactMap { $0["function"] as? String }
        #expect(topSelf.contains { $0.contains("Markdown") } || appSelf.first?.contains("Markdown") == true,
                "topSelf: \(topSelf.prefix(5)), appSelf: \(appSelf)")
        #expect(appFrames.contains { $0.contains("Markdown.height") })
        let (_, text, _) = try CLI.run(["report", path], input: "")
        #expect(text.contains("app frames on the stack"))
        #expect(text.contains("ChatLayout.pass"))
        #expect(text.split(separator: "\n").allSatisfy { $0.count <= 80 })
    }
}

/// App code by module, end to end (issue 18): dependency-loop, whose stall is entirely inside ChatUI (a SwiftPM
/// module linked into the same executable), recorded and reported.
@Suite(.serialized)
struct AppModuleEndToEndTests {
    /// Records one run of dependency-loop with a 1 s layout stall; returns the capture's path.
    func record() throws -> String {
        let path = CLI.temporary("dependency-loop.stalls")
        let environment = [EnvironmentName.output: path, EnvironmentName.threshold: "200", EnvironmentName.interval: "10"]
        let run = try CLI.run(["--stall-ms", "1000"], environment: environment, executable: CLI.product("dependency-loop"))
        #expect(run.status == 0, "\(run.err)")
        return path
    }

    /// The episodes of `report --json` with `arguments`, and its captures.
    func report(_ arguments: [String]) throws -> (episodes: [[String: Any]], captures: [[String: Any]]) {
        let result = try CLI.run(["report", "--json"] + arguments)
        #expect(result.status == 0, "\(result.err)")
        let root = try CLI.json(result.bytes)
        return (try #require(root["episodes"] as? [[String: Any]]), try #require(root["captures"] as? [[String: Any]]))
    }

    /// The stall: the episode with the most samples.
    func longest(_ episodes: [[String: Any]]) throws -> [String: Any] {
        try #require(episodes.max { ($0["samples"] as? Int ?? 0) < ($1["samples"] as? Int ?? 0) })
    }

    @Test func theHintNamesTheDependencyAndAppModuleMakesItAppCode() throws {
        let path = try record()
        defer { unlink(path) }

        // By default the app is the executable's own module (top-level code: named after the executable).
        let (episodes, captures) = try report([path])
        #expect(captures.first?["appModules"] as? [String] == ["dependency_loop"])
        let stall = try longest(episodes)
        #expect(stall["kind"] as? String == "stall" && (stall["samples"] as? Int ?? 0) >= 30, "\(stall)")
        #expect((stall["appFrames"] as? [Any])?.isEmpty == true, "no frame of the app's module: \(stall["appFrames"] ?? "")")
        #expect((stall["noAppCodeShare"] as? Double ?? 0) >= 0.9)
        let hints = try #require(stall["hints"] as? [[String: Any]])
        let hint = try #require(hints.first { $0["kind"] as? String == "no-app-code" }, "\(hints)")
        #expect(hint["module"] as? String == "ChatUI")
        let text = try #require(hint["text"] as? String)
        #expect(text.hasPrefix("no frame of dependency_loop on the stack in "), "\(text)")
        #expect(text.contains("; the loop is in ChatUI (ChatUI.Window.") && text.hasSuffix("; bisect its components"), "\(text)")
        let (_, plainText, _) = try CLI.run(["report", path], input: "")
        #expect(plainText.contains("  app code: module dependency_loop\n"))
        #expect(plainText.contains("hint: no frame of dependency_loop on the stack"))

        // --app-module ChatUI: ChatUI's frames are app code, each with its module; no such hint.
        let (owned, ownedCaptures) = try report(["--app-module", "ChatUI", path])
        #expect(ownedCaptures.first?["appModules"] as? [String] == ["ChatUI"])
        let ownedStall = try longest(owned)
        let appFrames = try #require(ownedStall["appFrames"] as? [[String: Any]])
        #expect(appFrames.contains { ($0["function"] as? String)?.hasPrefix("ChatUI.Window.layoutPass(") == true }, "\(appFrames)")
        #expect(!appFrames.isEmpty && appFrames.allSatisfy { $0["module"] as? String == "ChatUI" }, "\(appFrames)")
        let ownedHints = try #require(ownedStall["hints"] as? [[String: Any]])
        #expect(!ownedHints.contains { $0["kind"] as? String == "no-app-code" }, "\(ownedHints)")
        // Two modules: the union counts; the flag is repeatable.
        let (both, bothCaptures) = try report(["--app-module", "ChatUI", "--app-module", "dependency_loop", path])
        #expect(bothCaptures.first?["appModules"] as? [String] == ["ChatUI", "dependency_loop"])
        #expect((try longest(both)["appFrames"] as? [Any])?.count == appFrames.count)
    }
}
