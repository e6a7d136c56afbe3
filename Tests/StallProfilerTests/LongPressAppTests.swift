import Foundation
import StallAnalysis
import StallFormat
import Testing

/// Issue 10's story end to end: samples/long-press under the watchdog, read back through `stallprof report`'s
/// JSON. The touch-down comes before the stall, the long-press callback holds it, the touch-up comes after.
@Suite struct LongPressAppTests {
    func number(_ value: Any?) -> Double? { (value as? Double) ?? (value as? Int).map(Double.init) }

    @Test func theReportShowsTouchDownTheStallInsideTheCallbackAndTouchUpInThatOrder() throws {
        let path = TestSupport.temporaryPath("long-press.stalls")
        defer { unlink(path) }
        let result = try TestSupport.run(
            TestSupport.productsDirectory.appendingPathComponent("long-press"), [],
            environment: [EnvironmentName.output: path])
        #expect(result.status == 0, "\(result.stderr)")
        let capture = try CaptureReader.read(path: path)
        #expect(capture.closedCleanly)
        #expect(capture.markers.map(\.name) == ["touchDown", "longPress", "touchUp"])
        #expect(capture.markers.allSatisfy { $0.tid == capture.process?.pid }, "marked on the main thread")

        let json = StallReport(captures: [capture]).json()
        let root = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let episodes = try #require(root["episodes"] as? [[String: Any]])
        let stall = try #require(episodes.first { $0["kind"] as? String == "stall" })
        #expect(episodes.count == 1, "one stall: the callback")
        #expect(stall["state"] as? String == "busy")
        let markers = try #require(stall["markers"] as? [[String: Any]])
        #expect(markers.map { $0["name"] as? String } == ["touchDown", "longPress", "touchUp"])
        #expect(markers.map { $0["kind"] as? String } == ["instant", "interval", "instant"])
        let start = try #require(number(stall["startMs"])), end = start + (try #require(number(stall["durationMs"])))
        let touchDown = try #require(number(markers[0]["startMs"]))
        let pressStart = try #require(number(markers[1]["startMs"]))
        let pressEnd = pressStart + (try #require(number(markers[1]["durationMs"])))
        let touchUp = try #require(number(markers[2]["startMs"]))
        // The stall's start is when the first unanswered ping was sent, and it ends when the main queue answers,
        // just after the callback returns: the callback contains the stall to within one ping period
        // (threshold / 4) at either end.
        let slack = 250.0 / 4
        #expect(touchDown < pressStart && touchDown < start)
        #expect(pressStart <= start + slack && end <= pressEnd + slack)
        #expect(pressStart < (start + end) / 2 && (start + end) / 2 < pressEnd, "the stall is inside the callback")
        #expect(touchUp >= pressEnd, "the touch-up is handled after the callback")
        #expect(touchUp >= start, "and after the stall began")
        // The report's text shows the same order on the stall's timeline: the touch-down, then the callback and the
        // stall, then the touch-up. The stall and the callback begin together: the watchdog pings as the main thread
        // wakes for the timer, often before the callback's first line marks it, so either may come first.
        let text = StallReport(captures: [capture]).text()
        let rows = text.split(separator: "\n").map(String.init)
        let row = { (name: String) in rows.firstIndex { $0.hasPrefix("    ") && $0.contains(name) } ?? -1 }
        for inside in ["longPress (", "stall 1 ("] {
            let order = [row("touchDown"), row(inside), row("touchUp")]
            #expect(order.allSatisfy { $0 >= 0 } && order == order.sorted(), "\(inside): \(text)")
        }

        // The Chrome trace (Perfetto) has the same events on the main thread, in the same order.
        var diagnostics = Diagnostics()
        let timeline = TimelineBuilder.build(capture, diagnostics: &diagnostics)
        let trace = try ChromeTraceExporter(options: .init()).export(timeline, diagnostics: &diagnostics)
        let traceRoot = try #require(try JSONSerialization.jsonObject(with: Data(trace)) as? [String: Any])
        let events = try #require(traceRoot["traceEvents"] as? [[String: Any]]).filter {
            ["marker", "stall"].contains($0["cat"] as? String)
        }
        let byName = { (name: String) in events.first { $0["name"] as? String == name } }
        let down = try #require(byName("touchDown")), press = try #require(byName("longPress"))
        let busy = try #require(byName("busy stall")), up = try #require(byName("touchUp"))
        #expect(down["ph"] as? String == "i" && press["ph"] as? String == "X" && up["ph"] as? String == "i")
        #expect([down, press, busy, up].allSatisfy { number($0["tid"]) == number(busy["tid"]) }, "one thread")
        let ts = { (event: [String: Any]) in number(event["ts"]) ?? -1 }
        let pressEndUs = ts(press) + (number(press["dur"]) ?? 0)
        let busyMiddle = ts(busy) + (number(busy["dur"]) ?? 0) / 2
        #expect(ts(down) < ts(press) && ts(press) < busyMiddle && busyMiddle < pressEndUs && pressEndUs <= ts(up))
        #expect(abs(ts(press) - pressStart * 1000) < 1000, "the trace and the report share the clock and origin")
    }
}
