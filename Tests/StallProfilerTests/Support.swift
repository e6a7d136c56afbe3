import Foundation
import StallAnalysis
import StallFormat

/// Helpers shared by the watchdog tests.
enum TestSupport {
    /// A fresh path in the temporary directory.
    static func temporaryPath(_ name: String) -> String {
        NSTemporaryDirectory() + "stallprof-test-\(getpid())-\(UUID().uuidString.prefix(8))-\(name)"
    }

    /// The directory holding the built products (the test bundle sits beside the executables).
    static var productsDirectory: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
    }

    /// Runs the sample app `product` with `arguments` under the watchdog (`STALLPROF_OUTPUT` a temporary path);
    /// returns its exit status, its standard error and the capture it wrote (read, then removed).
    static func runCapturing(_ product: String, _ arguments: [String]) throws
        -> (status: Int32, stderr: String, capture: Capture)
    {
        let path = temporaryPath("\(product).stalls")
        defer { unlink(path) }
        let result = try run(productsDirectory.appendingPathComponent(product), arguments,
                             environment: [EnvironmentName.output: path])
        return (result.status, result.stderr, try CaptureReader.read(path: path))
    }

    /// Folded stacks of a capture, root first, one entry per sample.
    static func stacks(of capture: Capture, state: StallStateFilter = .all) -> [[String]] {
        var options = StallCaptureImporter.Options()
        options.selection.state = state
        let symbolizer = Symbolizer(images: capture.images)
        return capture.stalls.filter { state.accepts($0.state) }.flatMap { stall in
            stall.samples.filter { !$0.frames.isEmpty }.map { symbolizer.rootFirstNames(leafFirst: $0.frames) }
        }
    }

    /// The longest run of consecutive frames containing `name`.
    static func longestRun(of name: String, in stack: [String]) -> Int {
        var best = 0, current = 0
        for frame in stack {
            current = frame.contains(name) ? current + 1 : 0
            best = max(best, current)
        }
        return best
    }

    /// Runs an executable to completion with extra environment variables; returns its exit status and stderr.
    @discardableResult
    static func run(_ executable: URL, _ arguments: [String], environment: [String: String] = [:]) throws
        -> (status: Int32, stderr: String)
    {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let data = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
