import Foundation
import StallFormat
import StallTestSupport
import Testing

/// Captures with hostile markers (thousands, unpaired ends, begins never ended, an end twice, names of 63 bytes
/// of multi-byte UTF-8, empty names, `;` and line breaks in names) through every command that reads markers.
@Suite struct HostileMarkerTests {
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
        let (reportStatus, reportJSON, reportErr) = try CLI.run(["report", "--json", capture]).tuple
        #expect(reportStatus == 0, "\(reportErr)")
        let report = try CLI.json(reportJSON)
        #expect((report["markers"] as? [[String: Any]])?.count == 5_000 + 3)
        let (textStatus, _, _) = try CLI.run(["report", capture]).tuple
        #expect(textStatus == 0)
        let (chartStatus, svg, _) = try CLI.run(["flamegraph", "--flamechart", capture]).tuple
        #expect(chartStatus == 0 && String(decoding: svg, as: UTF8.self).contains("</svg>"))
        let (traceStatus, trace, _) = try CLI.run(["export", "--format", "chrome-trace", capture]).tuple
        #expect(traceStatus == 0)
        let events = try #require(try CLI.json(trace)["traceEvents"] as? [[String: Any]])
        #expect(events.filter { $0["cat"] as? String == "marker" }.count == 5_000 + 3)
        for tid in [4242, 4243] {
            let problems = TraceNesting.problems(events.filter { $0["tid"] as? Int == tid && $0["ph"] as? String != "M" })
            #expect(problems.isEmpty, "\(problems)")
        }
        let names = Set(events.compactMap { $0["name"] as? String })
        #expect(names.contains(String(repeating: "é", count: 31) + "x") && names.contains("a;b\nc"))
        for format in ["speedscope", "pprof"] {
            let (status, output, _) = try CLI.run(["export", "--format", format, capture, "-o", "/dev/null"]).tuple
            #expect(status == 0 && output.isEmpty, "\(format)")
        }
    }
}
