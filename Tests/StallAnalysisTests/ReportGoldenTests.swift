import Foundation
import StallFormat
import Testing

@testable import StallAnalysis

/// The text and JSON report of the fixed synthetic capture, against Fixtures/report/. `STALLPROF_BLESS=1`
/// rewrites the expected files.
@Suite struct ReportGoldenTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/report")

    /// The mixed capture with a fixed executable path and source name, so the output does not depend on where
    /// the tests were built.
    func report() throws -> StallReport {
        var records = ReportFixtures.mixedRecords()
        if case .process(var process) = records[0] {
            process.executable = "/app/fixture"
            records[0] = .process(process)
        }
        let path = try ReportFixtures.write(records, name: "golden")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let capture = try CaptureReader.parse(CaptureReader.readWholeFile(path), source: "mixed.stalls")
        return StallReport(captures: [capture])
    }

    func check(_ actual: String, _ name: String) throws {
        let url = Self.directory.appendingPathComponent(name)
        if ProcessInfo.processInfo.environment[EnvironmentName.bless] == "1" {
            try FileManager.default.createDirectory(at: Self.directory, withIntermediateDirectories: true)
            try actual.write(to: url, atomically: true, encoding: .utf8)
        }
        let expected = try String(contentsOf: url, encoding: .utf8)
        #expect(actual == expected, "differs from Fixtures/report/\(name) (\(EnvironmentName.bless)=1 rewrites it)")
    }

    @Test func textMatchesTheExpectedFile() throws { try check(try report().text(), "mixed.txt") }

    @Test func jsonMatchesTheExpectedFile() throws { try check(try report().json(), "mixed.json") }
}
