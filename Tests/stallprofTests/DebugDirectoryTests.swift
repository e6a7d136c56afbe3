import Foundation
import StallFormat
import Testing

/// A capture whose binary is gone (moved off the machine, or stripped) is named from a debug file found by build-id
/// (`--debug-dir`, `STALLPROF_DEBUG_DIRS`), as gdb and Debian's -dbgsym packages lay them out; a file whose
/// build-id differs is never used.
@Suite struct DebugDirectoryTests {
    /// Runs a copy of stall-demo from a directory of its own (a busy stall), splits its debug information off with
    /// `objcopy --only-keep-debug` into `debug/stall-demo.debug`, and deletes the copy. Returns the directory and
    /// the capture's build-id of the binary, as hex.
    func captureOfAGoneBinary() throws -> (directory: String, capture: String, buildID: String) {
        let directory = CLI.temporary("debug-dir")
        try FileManager.default.createDirectory(atPath: directory + "/bin", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: directory + "/debug", withIntermediateDirectories: true)
        let binary = directory + "/bin/stall-demo", capture = directory + "/c.stalls"
        try FileManager.default.copyItem(atPath: CLI.product("stall-demo"), toPath: binary)
        let env = [EnvironmentName.threshold: "100", EnvironmentName.interval: "5"]
        _ = try CLI.run(["--stall", "busy", "--stall-ms", "600", "--output", capture], environment: env, executable: binary)
        let split = try CLI.run(["--only-keep-debug", binary, directory + "/debug/stall-demo.debug"],
                                executable: "/usr/bin/objcopy")
        try #require(split.status == 0, "objcopy: \(split.err)")
        try FileManager.default.removeItem(atPath: binary)
        let parsed = try CaptureReader.parse(Array(try Data(contentsOf: URL(fileURLWithPath: capture))), source: capture)
        let image = try #require(parsed.images.first { $0.path == binary })
        return (directory, capture, image.buildIDHex)
    }

    @Test func aGoneBinaryIsNamedFromItsDebugFileByNameOrByBuildID() throws {
        let (directory, capture, hex) = try captureOfAGoneBinary()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let gone = try CLI.run(["fold", capture])
        #expect(gone.status == 0 && gone.out.contains("[stall-demo]") && !gone.out.contains("BusyWork.descend"))
        #expect(gone.err.contains("\(directory)/bin/stall-demo: cannot read the file, and no debug file"), "\(gone.err)")

        let byName = try CLI.run(["fold", "--debug-dir", directory + "/nothing", "--debug-dir", directory + "/debug", capture])
        #expect(byName.status == 0 && byName.out.contains("BusyWork.descend"))
        // Only PLT stubs may stay unnamed: a debug file keeps no .plt (objcopy makes it NOBITS), and samples land in
        // them under ASan's instrumented build. Every other frame of the binary is named.
        // A stub is where a sample landed: the leaf, the last frame of a folded line.
        for line in byName.out.split(separator: "\n") {
            let frames = (line.split(separator: " ").dropLast().joined(separator: " ")).split(separator: ";")
            #expect(!frames.dropLast().contains("[stall-demo]"), "\(line)")
        }
        #expect(byName.err.isEmpty, "\(byName.err)")

        // gdb's layout, given by the environment.
        let byID = directory + "/ids/.build-id/" + hex.prefix(2)
        try FileManager.default.createDirectory(atPath: byID, withIntermediateDirectories: true)
        try FileManager.default.moveItem(atPath: directory + "/debug/stall-demo.debug", toPath: "\(byID)/\(hex.dropFirst(2)).debug")
        let fromEnvironment = try CLI.run(
            ["report", capture], environment: [EnvironmentName.debugDirectories: "/nonexistent:\(directory)/ids"])
        #expect(fromEnvironment.status == 0 && fromEnvironment.out.contains("BusyWork.burn(until:)"), "\(fromEnvironment.err)")
        // The app's frames are told from its debug file too: its module is found there (StallSamples, a library
        // linked in, is not the app's), and `_start` is never one (the rule that tells them once read only the
        // image's own file: no module found, and every frame of the executable, unnamed there, the app's).
        let json = try CLI.run(["report", "--json", capture], environment: [EnvironmentName.debugDirectories: "\(directory)/ids"])
        let captureInfo = try #require((try CLI.json(json.bytes)["captures"] as? [[String: Any]])?.first)
        #expect(captureInfo["appModules"] as? [String] == ["stall_demo"])
        let episode = try #require((try CLI.json(json.bytes)["episodes"] as? [[String: Any]])?.first)
        let appFrames = (episode["appFrames"] as? [[String: Any]] ?? []).compactMap { $0["function"] as? String }
        #expect(appFrames.contains { $0.hasPrefix("closure #1 @Swift.MainActor @Sendable () -> () in stall_demo") }, "\(appFrames)")
        // `[stall-demo]` may be one under ASan: samples land in PLT stubs there, which a debug file cannot name.
        #expect(!appFrames.contains("_start"), "\(appFrames)")
    }

    @Test func aDebugFileOfAnotherBuildIsNeverUsed() throws {
        let (directory, capture, _) = try captureOfAGoneBinary()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Another program under the gone binary's name.
        try FileManager.default.createDirectory(atPath: directory + "/other", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: CLI.product("stall-demo-async"), toPath: directory + "/other/stall-demo")
        let result = try CLI.run(["fold", "--debug-dir", directory + "/other", capture])
        #expect(result.status == 0 && result.out.contains("[stall-demo]"))
        #expect(result.err.contains("\(directory)/other/stall-demo: build-id differs from that of"), "\(result.err)")
    }
}
