import Foundation
import Testing

/// StallMarker with no watchdog running: no system call and no heap allocation on the calling thread. Runs
/// `watchdog-trials marker-noop`, which makes its marker calls under a seccomp filter that kills the process on any
/// system call but write and exit, and counts the thread's allocations when tools/bench-markers/count-allocations.c
/// is preloaded (built here with the system's C compiler; not under a sanitizer, whose runtime must load first).
@Suite struct MarkerNoopTests {
    /// The allocation counter built into a temporary directory, or nil without a C compiler.
    static func allocationCounter() throws -> String? {
        let compiler = "/usr/bin/cc"
        guard FileManager.default.isExecutableFile(atPath: compiler) else { return nil }
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("tools/bench-markers/count-allocations.c").path
        let library = TestSupport.temporaryPath("count-allocations.so")
        let result = try TestSupport.run(
            URL(fileURLWithPath: compiler), ["-shared", "-fPIC", "-O2", "-o", library, source])
        try #require(result.status == 0, "cc: \(result.stderr)")
        return library
    }

    /// A sanitizer's runtime makes system calls of its own inside any call (and must load before a preload).
    static let sanitized = ProcessInfo.processInfo.environment.keys.contains { $0 == "ASAN_OPTIONS" || $0 == "TSAN_OPTIONS" }

    @Test(.enabled(if: !sanitized, "a sanitizer's runtime makes system calls of its own"))
    func markerCallsWithoutAWatchdogMakeNoSystemCallAndNoAllocation() throws {
        let library = try Self.allocationCounter()
        defer { if let library { unlink(library) } }
        var environment: [String: String] = [:]
        if let library { environment["LD_PRELOAD"] = library }
        let result = try TestSupport.run(
            TestSupport.productsDirectory.appendingPathComponent("watchdog-trials"), ["marker-noop"],
            environment: environment)
        // A system call inside a marker call ends the process with SIGSYS (exit status 159 from a shell; here the
        // signal number in terminationStatus).
        #expect(result.status == 0, "\(result.status): \(result.stderr)")
        #expect(result.stderr.contains("calls without a system call 600000\n"), "\(result.stderr)")
        if library != nil { #expect(result.stderr.contains("heap allocations 0\n"), "\(result.stderr)") }
    }
}
