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
