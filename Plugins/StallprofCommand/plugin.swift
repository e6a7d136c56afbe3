import Foundation
import PackagePlugin

/// `swift package stallprof ARGUMENTS`: runs the `stallprof` CLI, which SwiftPM builds from this package for the
/// host, with the arguments as given, in the directory the command was run from; its output is the CLI's, and a
/// non-zero status fails the command (SwiftPM exits 1, saying `Plugin ended with exit code N`). Standard input is
/// empty (`-` reads nothing) and standard output is a pipe, so binary outputs need `-o`. A package that depends on
/// stallprof gets it too: `swift package stallprof report app.stalls`, `swift package stallprof bisect ...`. No
/// permissions are asked for: on Linux plugins are not sandboxed; on macOS, writing files (`-o`) needs
/// `swift package --allow-writing-to-directory DIR stallprof ...`.
@main
struct StallprofCommand: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {
        let tool = try context.tool(named: "stallprof")
        let process = Process()
        process.executableURL = tool.url
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice  // never a closed descriptor 0 the CLI could open a file on
        // The CLI's messages go through SwiftPM's diagnostics, to standard error, line by line as they come (the
        // plugin's own standard error reaches the terminal's standard output, where it would mix with the CLI's
        // output): `stallprof: error: X` as an error, `stallprof: warning: X` as a warning, any other line
        // (bisect's progress) as a remark.
        let messages = Pipe()
        process.standardError = messages
        try process.run()
        var pending = Data()
        while case let chunk = messages.fileHandleForReading.availableData, !chunk.isEmpty {
            pending.append(chunk)
            while let newline = pending.firstIndex(of: 10) {
                Self.report(String(decoding: pending[..<newline], as: UTF8.self))
                pending = pending[(newline + 1)...]
            }
        }
        if !pending.isEmpty { Self.report(String(decoding: pending, as: UTF8.self)) }
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            // The CLI has said what went wrong; its status is the plugin's.
            exit(process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus)
        }
    }

    /// One line the CLI wrote to standard error, as a diagnostic.
    static func report(_ line: String) {
        if line.hasPrefix("stallprof: error: ") {
            Diagnostics.error("stallprof: " + line.dropFirst("stallprof: error: ".count))
        } else if line.hasPrefix("stallprof: warning: ") {
            Diagnostics.warning("stallprof: " + line.dropFirst("stallprof: warning: ".count))
        } else if !line.isEmpty {
            Diagnostics.remark(line)
        }
    }
}
