import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import StallProfiler

@Suite struct StallFlagsTests {
    @Test func listedFlagsAreDisabledOthersEnabled() {
        var registry = FlagRegistry(disabledList: " autoscroll, lazy-stack ,,", reportPath: nil)
        let answers = ["autoscroll", "lazy-stack", "markdown-cache", ""].map { registry.isEnabled($0) }
        #expect(answers == [false, false, true, true])
    }

    @Test func nothingDisabledWithoutTheVariable() {
        var registry = FlagRegistry(disabledList: nil, reportPath: nil)
        let enabled = registry.isEnabled("autoscroll")
        #expect(enabled)
    }

    @Test func reportsEachConsultedNameOnce() throws {
        let path = "/tmp/stallflags-report-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { unlink(path) }
        do {
            var registry = FlagRegistry(disabledList: "b", reportPath: path)
            _ = registry.isEnabled("a")
            _ = registry.isEnabled("b")
            _ = registry.isEnabled("a")
            _ = registry.isEnabled("c")
        }
        let fd = open(path, O_RDONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = read(fd, &buffer, buffer.count)
        #expect(String(decoding: buffer.prefix(max(0, count)), as: UTF8.self) == "a\nb\nc\n")
    }
}

@Suite struct StallFlagsDescriptorTests {
    @Test func aReportDescriptorTheAppClosedAndReusedIsLeftAloneAndThePathReopened() throws {
        let path = "/tmp/stallflags-taken-\(getpid())-\(UInt32.random(in: 0...UInt32.max))", appPath = path + ".app"
        defer {
            unlink(path)
            unlink(appPath)
        }
        var registry = FlagRegistry(disabledList: nil, reportPath: path)
        _ = registry.isEnabled("a")
        let number = registry.reportDescriptor
        // The app closes a descriptor it does not own, and its own file takes the number: in one step with dup2,
        // since other tests' threads in this process open files too and could take the number in between.
        let opened = open(appPath, O_RDWR | O_CREAT | O_TRUNC, 0o644)
        try #require(opened >= 0)
        let app = dup2(opened, number)
        close(opened)
        defer { close(app) }
        try #require(app == number)
        #expect(write(app, "app\n", 4) == 4)
        _ = registry.isEnabled("b")
        #expect(registry.reportDescriptor != number)
        func contents(_ file: String) -> String {
            (try? String(contentsOfFile: file, encoding: .utf8)) ?? "unreadable"
        }
        #expect(contents(appPath) == "app\n")
        #expect(contents(path) == "a\nb\n")
    }
}
