import Foundation
import StallFormat
import StallSamples
import Testing

/// The host's descriptors are never the watchdog's, one capture file serves one process, and a deleted capture
/// is created again: each runs a sample app as a separate process.
@Suite struct CaptureOwnershipTests {
    static var trials: URL { TestSupport.productsDirectory.appendingPathComponent("watchdog-trials") }
    static var demo: URL { TestSupport.productsDirectory.appendingPathComponent("stall-demo") }
    static let environment = HostSurvivalTests.environment

    /// The numbers after `label: ` on the line of `text` that starts with it.
    static func numbers(after label: String, in text: String) -> [Int32] {
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(label + ": ") }) else { return [] }
        return line.dropFirst(label.count + 2).split(separator: " ").compactMap { Int32($0) }
    }

    /// How many lines of `text` contain `part`.
    static func lines(containing part: String, in text: String) -> Int {
        text.split(separator: "\n").filter { $0.contains(part) }.count
    }

    /// The app files of `directory` that no longer hold their text.
    static func changedAppFiles(in directory: String) -> [Int] {
        (0..<AppFiles.count).filter { index in
            let bytes = (try? FileReader.contents(of: "\(directory)/app-\(index)")) ?? []
            return bytes != Array(AppFiles.text(index).utf8)
        }
    }

    /// A fresh directory for the app's files.
    static func appDirectory() -> String {
        let directory = TestSupport.temporaryPath("app-files")
        mkdir(directory, 0o755)
        return directory
    }

    static func removeAll(_ directory: String) {
        for index in 0..<AppFiles.count { unlink("\(directory)/app-\(index)") }
        rmdir(directory)
    }

    /// The capture holds one busy stall, sampled, and was closed by stop().
    static func expectTheStall(in path: String) throws {
        let capture = try CaptureReader.read(path: path)
        #expect(capture.warnings.isEmpty && capture.closedCleanly)
        let stall = try #require(capture.stalls.first)
        #expect(stall.state == .busy)
        #expect(TestSupport.stacks(of: capture).contains { TestSupport.longestRun(of: "BusyWork.descend", in: $0) >= 20 })
    }

    /// Runs `watchdog-trials MODE APP-DIR` and `body` with its result, capture path and app directory.
    static func trial(_ mode: String, _ body: ((status: Int32, stderr: String), String, String) throws -> Void) throws {
        let path = TestSupport.temporaryPath("\(mode).stalls"), directory = Self.appDirectory()
        defer {
            unlink(path)
            Self.removeAll(directory)
        }
        try body(try TestSupport.run(
            Self.trials, [mode, directory], environment: Self.environment.merging([EnvironmentName.output: path]) { $1 }),
            path, directory)
    }

    // Before: the whole capture went into the app file on the capture's old number, and stop() wrote 8 bytes into
    // the file on the eventfd's.
    @Test func closingExactlyTheWatchdogsDescriptorsLeavesTheAppsFilesAloneAndTheStallRecorded() throws {
        try Self.trial("close-own") { result, path, directory in
            #expect(result.status == 0, "\(result.stderr)")
            let closed = Self.numbers(after: "closed", in: result.stderr), opened = Self.numbers(after: "opened", in: result.stderr)
            // The capture, the epoll set, the stop pipe's two ends, the duplicate, the CPU wake's signalfd, the AIO
            // watch's eventfd.
            #expect(closed.count == 7)
            #expect(Set(closed).isSubset(of: Set(opened)), "the app's files took every number: \(result.stderr)")
            #expect(Self.changedAppFiles(in: directory).isEmpty)
            #expect(Self.lines(containing: "of the capture file was closed by someone else", in: result.stderr) == 1)
            #expect(Self.lines(containing: "epoll set and stop pipe were closed by someone else", in: result.stderr) == 1)
            try Self.expectTheStall(in: path)
        }
    }

    @Test func closefromThreeLeavesTheAppsFilesAloneAndTheStallRecorded() throws {
        try Self.trial("closefrom") { result, path, directory in
            // `closed: 3 (pipe:[1]) 4 (pipe:[1]) 5 (/tmp/...stalls) ...`: which number held the capture.
            let line = result.stderr.split(separator: "\n").first { $0.hasPrefix("closed: ") } ?? ""
            let captureNumber = line.split(separator: " ").firstIndex { $0 == "(\(path))" }.flatMap {
                Int(line.split(separator: " ")[$0 - 1])
            }
            let number = try #require(captureNumber, "\(result.stderr)")
            let opened = Self.numbers(after: "opened", in: result.stderr).map(Int.init)
            let captureFile = try #require(opened.firstIndex(of: number), "the app's file took the capture's number")
            #expect(!Self.changedAppFiles(in: directory).contains(captureFile))
            #expect(Self.lines(containing: "of the capture file was closed by someone else", in: result.stderr) == 1)
            try Self.expectTheStall(in: path)
            // Every app file, on any number: the handler touches no descriptor (libunwind, used before, read and wrote
            // its validation pipe's numbers from inside the handler, and so the app's files that took them).
            #expect(result.status == 0, "\(result.stderr)")
            #expect(Self.changedAppFiles(in: directory).isEmpty)
        }
    }

    @Test func aSecondProcessOnACapturePathInUseIsRefusedNamingThePathAndThePid() throws {
        let path = TestSupport.temporaryPath("shared.stalls")
        defer { unlink(path) }
        let first = Process()
        first.executableURL = Self.demo
        first.arguments = ["--delay-ms", "2500", "--stall-ms", "400"]
        first.environment = ProcessInfo.processInfo.environment.merging(
            Self.environment.merging([EnvironmentName.output: path]) { $1 }) { $1 }
        first.standardOutput = FileHandle.nullDevice
        first.standardError = FileHandle.nullDevice
        try first.run()
        // Until the first has its file (locked before its header is written), at most 30 s.
        for _ in 0..<300 where ((try? FileReader.contents(of: path)) ?? []).count < CaptureFormat.headerSize {
            usleep(100_000)
        }
        let second = try TestSupport.run(
            Self.demo, ["--stall-ms", "300"], environment: Self.environment.merging([EnvironmentName.output: path]) { $1 })
        first.waitUntilExit()
        #expect(second.status == 1)
        #expect(second.stderr.contains("\(path): in use by another process (pid \(first.processIdentifier))"), "\(second.stderr)")
        // The first process's capture is whole: its own pid, its stall, nothing of the second.
        #expect(first.terminationStatus == 0)
        let capture = try CaptureReader.read(path: path)
        #expect(capture.process?.pid == first.processIdentifier && capture.closedCleanly && capture.stalls.count == 1)
    }

    @Test func aForkedChildOnItsParentsPathIsRefused() throws {
        let path = TestSupport.temporaryPath("family.stalls")
        defer { unlink(path) }
        let result = try TestSupport.run(
            Self.trials, ["fork", path], environment: Self.environment.merging([EnvironmentName.output: path]) { $1 })
        #expect(result.status == 3)
        let parent = try #require(Self.numbers(after: "parent pid", in: result.stderr).first, "\(result.stderr)")
        #expect(result.stderr.contains("child: cannot write the stall capture: \(path): in use by another process (pid \(parent))"))
        #expect(try CaptureReader.read(path: path).process?.pid == parent)
    }

    @Test func percentPGivesEachProcessOfATreeItsOwnFile() throws {
        let directory = Self.appDirectory()
        defer {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
                unlink("\(directory)/\(name)")
            }
            rmdir(directory)
        }
        // The parent's path from the environment, the child's from its Configuration: both expanded at start.
        let result = try TestSupport.run(
            Self.trials, ["fork", "\(directory)/child-%p.stalls"],
            environment: Self.environment.merging([EnvironmentName.output: "\(directory)/parent-%p.stalls"]) { $1 })
        #expect(result.status == 0, "\(result.stderr)")
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).sorted()
        try #require(names.count == 2, "\(names)")
        for name in names {
            let capture = try CaptureReader.read(path: "\(directory)/\(name)")
            let pid = try #require(capture.process?.pid)
            #expect(name == "child-\(pid).stalls" || name == "parent-\(pid).stalls")
            #expect(capture.closedCleanly)
        }
        #expect(names[0].hasPrefix("child-") && names[1].hasPrefix("parent-"))
    }

    @Test func aCaptureDeletedWhileTheAppRunsIsCreatedAgainWithTheStall() throws {
        let path = TestSupport.temporaryPath("deleted.stalls")
        defer { unlink(path) }
        // Before: everything after the deletion went into the deleted file, and was lost with it.
        let result = try TestSupport.run(
            Self.trials, ["delete-capture"], environment: Self.environment.merging([EnvironmentName.output: path]) { $1 })
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Self.lines(containing: "the capture file was deleted; the path is created again", in: result.stderr) == 1)
        try Self.expectTheStall(in: path)
        #expect(try CaptureReader.read(path: path).process?.pid != nil)
    }
}
