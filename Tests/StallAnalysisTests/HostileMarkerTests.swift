import Foundation
import StallFormat
import Testing
@testable import StallAnalysis

/// Captures with hostile markers (thousands, unpaired ends, begins never ended, an end twice, names of 63 bytes
/// of multi-byte UTF-8, empty names, `;` and line breaks in names) through every command that reads markers.
@Suite(.enabled(if: BuiltCLI.path != nil, "stallprof is not built beside the tests"))
struct HostileMarkerTests {
    static func records() -> [CaptureRecord] {
        let at = { (ms: UInt64) in ReportFixtures.startNs + ms * 1_000_000 }
        let long = String(repeating: "é", count: 31) + "x"  // 63 bytes
        var markers: [MarkerRecord] = [
            MarkerRecord(kind: .end, spanID: 999, threadID: 4242, timestampNs: at(1), name: ""),  // no begin
            MarkerRecord(kind: .begin, spanID: 1, threadID: 4242, timestampNs: at(1_500), name: long),  // never ends
            MarkerRecord(kind: .begin, spanID: 2, threadID: 4242, timestampNs: at(1_900), name: "a;b\nc"),
            MarkerRecord(kind: .end, spanID: 2, threadID: 4242, timestampNs: at(2_500), name: ""),
            MarkerRecord(kind: .end, spanID: 2, threadID: 4242, timestampNs: at(2_600), name: ""),  // twice
            MarkerRecord(kind: .instant, spanID: 0, threadID: 4242, timestampNs: at(2_100), name: ""),
            MarkerRecord(kind: .dropped, spanID: 7, threadID: 0, timestampNs: at(2_200), name: ""),
        ]
        for index in 0..<5_000 {  // crossing intervals on two threads
            let start = at(1_000) + UInt64(index) * 700_000
            markers.append(MarkerRecord(kind: .begin, spanID: 10 + UInt64(index), threadID: 4242 + Int32(index % 2),
                                        timestampNs: start, name: "step 🙂 \(index)"))
            markers.append(MarkerRecord(kind: .end, spanID: 10 + UInt64(index), threadID: 4242,
                                        timestampNs: start + 1_000_000 + UInt64(index % 5) * 300_000, name: ""))
        }
        return ReportFixtures.records(
            ReportFixtures.episode(1, at: 2_000, durationMs: 1_000, state: .busy,
                                   samples: Array(repeating: [ReportFixtures.height, ReportFixtures.pass], count: 5))
            + markers.map { .marker($0) })
    }

    @Test func everyMarkerConsumerReadsThemWithoutTrapping() throws {
        let capture = try ReportFixtures.write(Self.records(), name: "hostile-markers")
        defer { try? FileManager.default.removeItem(atPath: capture) }
        let cli = BuiltCLI.path!
        let (reportStatus, reportJSON, reportErr) = try ExportTools.run(cli, ["report", "--json", capture])
        #expect(reportStatus == 0, "\(reportErr)")
        let report = try ExportTests.json(reportJSON)
        #expect((report["markers"] as? [[String: Any]])?.count == 5_000 + 3)
        let (textStatus, _, _) = try ExportTools.run(cli, ["report", capture])
        #expect(textStatus == 0)
        let (chartStatus, svg, _) = try ExportTools.run(cli, ["flamegraph", "--flamechart", capture])
        #expect(chartStatus == 0 && String(decoding: svg, as: UTF8.self).contains("</svg>"))
        let (traceStatus, trace, _) = try ExportTools.run(cli, ["export", "--format", "chrome-trace", capture])
        #expect(traceStatus == 0)
        let events = try #require(try ExportTests.json(trace)["traceEvents"] as? [[String: Any]])
        #expect(events.filter { $0["cat"] as? String == "marker" }.count == 5_000 + 3)
        for tid in [4242, 4243] {
            ChromeTraceNestingTests.expectNested(events.filter { $0["tid"] as? Int == tid && $0["ph"] as? String != "M" })
        }
        let names = Set(events.compactMap { $0["name"] as? String })
        #expect(names.contains(String(repeating: "é", count: 31) + "x") && names.contains("a;b\nc"))
        for format in ["speedscope", "pprof"] {
            let (status, output, _) = try ExportTools.run(cli, ["export", "--format", format, capture, "-o", "/dev/null"])
            #expect(status == 0 && output.isEmpty, "\(format)")
        }
    }
}

/// A marker name is the app's string: in the text report a line break or a terminal escape in it must not break
/// the timeline's lines or reach the terminal.
@Suite struct MarkerNameTextTests {
    @Test func controlCharactersInMarkerNamesAreReplaced() throws {
        let report = try ReportMarkersTests().report([
            (.instant, 0, 2_100, "open\nfile", 4242), (.instant, 0, 2_200, "\u{1B}[2Jclear\u{7F}", 4242),
        ])
        let text = report.text()
        #expect(!text.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x7F })
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.contains { $0.hasSuffix("open?file") }, "\(text)")
        #expect(lines.contains { $0.hasSuffix("?[2Jclear?") })
        #expect(!lines.contains { $0.hasPrefix("file") })
    }
}

/// Where the `stallprof` executable of this build is: beside the tests' resource bundle.
enum BuiltCLI {
    static let path: String? = {
        let directory = Bundle.module.bundleURL.deletingLastPathComponent()
        let path = directory.appendingPathComponent("stallprof").path
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }()
}
