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
