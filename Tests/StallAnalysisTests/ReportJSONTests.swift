import Foundation
import StallFormat
import Testing

@testable import StallAnalysis

/// `stallprof report --json`: the shape of issue 8, parsed back with JSONSerialization; `--kind` in fold and
/// report through the CLI.
@Suite struct ReportJSONTests {
    func parse(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    func mixedJSON() throws -> [String: Any] {
        let capture = try ReportFixtures.capture(ReportFixtures.mixedRecords(), name: "json")
        return try parse(StallReport(captures: [capture]).json())
    }

    func isNumber(_ value: Any?) -> Bool { value is Double || value is Int }

    @Test func everyKeyAndTypeOfTheDocumentedShape() throws {
        let root = try mixedJSON()
        #expect(root["schema"] as? String == "stallprof.report/v2")
        // Every marker of the capture (the shape, then its capture), by start time.
        let markers = try #require(root["markers"] as? [[String: Any]])
        #expect(markers.map { $0["name"] as? String } == ["touchDown", "perform", "prefetch", "sync", "idle"])
        #expect(markers.allSatisfy { $0["capture"] as? Int == 0 && $0["startMs"] is Double && $0["tid"] is Int })
        #expect(markers[0].keys.sorted() == ["capture", "kind", "name", "startMs", "tid"], "an instant has no duration")
        #expect(markers[1]["kind"] as? String == "interval" && markers[1]["durationMs"] as? Double == 1_000)
        #expect(markers[3]["durationMs"] is NSNull, "never ended")
        let captures = try #require(root["captures"] as? [[String: Any]])
        #expect(captures.count == 1)
        #expect(captures[0]["path"] is String && captures[0]["pid"] as? Int == 4242)
        #expect(captures[0]["executable"] as? String == ReportFixtures.ownImage.path)
        #expect(captures[0]["startWall"] as? String == "2026-11-30T21:00:00.123Z")
        let episodes = try #require(root["episodes"] as? [[String: Any]])
        #expect(episodes.count == 6)
        for episode in episodes {
            #expect(episode["capture"] as? Int == 0 && episode["id"] is Int && episode["tid"] as? Int == 4242)
            #expect(["stall", "saturated"].contains(episode["kind"] as? String ?? ""))
            #expect(["busy", "blocked"].contains(episode["state"] as? String ?? ""))
            #expect(isNumber(episode["startMs"]) && isNumber(episode["durationMs"]) && isNumber(episode["cpuRatio"]))
            #expect(episode["unfinished"] as? Bool == false)
            #expect(episode["samples"] is Int && episode["missedSamples"] is Int)
            #expect(episode["heaviestStack"] is [String])
            let frames = try #require(episode["heaviestStackFrames"] as? [[String: Any]])
            #expect(frames.map { $0["function"] as? String ?? "" } == episode["heaviestStack"] as? [String])
            #expect(frames.allSatisfy { $0.keys.sorted() == ["file", "function", "inlined", "line"] })
            for key in ["topSelf", "appFrames"] {
                let shares = try #require(episode[key] as? [[String: Any]])
                for share in shares {
                    #expect(share["function"] is String)
                    // Where in its source (issue 19): null here, the fixture functions' code is compiler-generated.
                    #expect((share["file"] is String || share["file"] is NSNull) && (share["line"] is Int || share["line"] is NSNull))
                    #expect(share["inlined"] is [[String: Any]])
                    let value = try #require(share["share"] as? Double)
                    #expect(value >= 0 && value <= 1)
                }
                let values = shares.compactMap { $0["share"] as? Double }
                #expect(values == values.sorted(by: >))
            }
            let cpu = try #require(episode["cpuRatio"] as? Double)
            #expect(cpu >= 0 && cpu <= 1)
            #expect(episode["blockedOn"] is NSNull || episode["blockedOn"] is [String: Any])
            #expect(episode["startWall"] is String)
            let hints = try #require(episode["hints"] as? [[String: Any]])
            // A no-app-code hint also names the module the time went to (none here: the system's code).
            #expect(hints.allSatisfy {
                $0.keys.sorted() == ($0["kind"] as? String == "no-app-code" ? ["kind", "module", "text"] : ["kind", "text"])
                    && $0["kind"] is String && $0["text"] is String
            })
            #expect(hints.allSatisfy { $0["kind"] as? String != "no-app-code" || $0["module"] is NSNull })
            #expect(episode["markers"] is [[String: Any]])
        }
        // An episode's markers: those within a second of it (same clock and origin as its startMs).
        let aroundFirst = try #require(episodes[0]["markers"] as? [[String: Any]])
        #expect(aroundFirst.map { $0["name"] as? String } == ["touchDown", "perform", "prefetch"])
        #expect(aroundFirst[0]["startMs"] as? Double == 1_600 && aroundFirst[0]["kind"] as? String == "instant")
        #expect(aroundFirst[1]["startMs"] as? Double == 1_950)
        #expect(aroundFirst[2]["tid"] as? Int == 4300 && aroundFirst[2]["capture"] == nil)
        #expect((episodes[1]["markers"] as? [Any])?.isEmpty == true)
        #expect((episodes[5]["markers"] as? [[String: Any]])?.map { $0["name"] as? String } == ["sync"])
        let first = episodes[0]
        #expect(first["startMs"] as? Double == 2_000 && first["durationMs"] as? Double == 1_000)
        #expect(first["cpuRatio"] as? Double == 1, "1.3 clamped")
        #expect(first["samples"] as? Int == 10 && first["missedSamples"] as? Int == 1)
        #expect(first["heaviestStack"] as? [String]
            == ["[libsystemfake.so.1]", "stallprof_fixture_layout_pass", "stallprof_fixture_markdown_height"])
        let appFrames = try #require(first["appFrames"] as? [[String: Any]])
        #expect(appFrames.map { $0["function"] as? String } == ["stallprof_fixture_layout_pass", "stallprof_fixture_markdown_height"])
        #expect(appFrames.allSatisfy {
            $0.keys.sorted() == ["file", "function", "inlined", "line", "module", "share"] && $0["module"] is NSNull },
                "C functions: app code by their image, no module")
        #expect(first["startWall"] as? String == "2026-11-30T21:00:02.123Z")
        #expect(episodes[1]["kind"] as? String == "saturated")
        let summary = try #require(root["summary"] as? [String: Any])
        #expect(summary["stalls"] as? Int == 5 && summary["saturated"] as? Int == 1)
        #expect(summary["p50Ms"] as? Double == 700 && summary["p90Ms"] as? Double == 2_000 && summary["maxMs"] as? Double == 2_000)
        #expect(summary["stallSecondsPerHour"] as? Double == 318)
        let groups = try #require(root["groups"] as? [[String: Any]])
        #expect(groups.count == 6 && groups.allSatisfy { $0["count"] as? Int == 1 && $0["fingerprint"] is String })
    }

    @Test func blockedOnObjects() throws {
        let episodes = try #require(try mixedJSON()["episodes"] as? [[String: Any]])
        #expect(episodes[0]["blockedOn"] is NSNull)
        #expect(episodes[5]["blockedOn"] is NSNull, "a busy episode's passing wait is left out")
        let mutex = try #require(episodes[3]["blockedOn"] as? [String: Any])
        #expect(mutex["kind"] as? String == "mutex" && mutex["ownerTid"] as? Int == 4321)
        #expect(mutex["ownerName"] as? String == "lock-holder" && mutex["syscall"] as? String == "futex")
        #expect(mutex["ownerStack"] as? [String]
            == ["[libsystemfake.so.1]", "stallprof_fixture_owner_work", "[libsystemfake.so.1]"])
        let read = try #require(episodes[4]["blockedOn"] as? [String: Any])
        #expect(read["kind"] as? String == "syscall" && read["syscall"] as? String == "read")
        #expect(read["ownerTid"] == nil && read["detail"] as? String == "read fd 5 (pipe:[1234])")
    }

    @Test func stringsAreEscapedAndEmptyReportsStillParse() throws {
        let text = JSONValue.object([("a\"b", .string("tab\there\u{1}\\ \u{2028}é"))]).written()
        #expect(text == "{\"a\\\"b\": \"tab\\there\\u0001\\\\ \\u2028é\"}")
        let parsed = try parse(text)
        #expect(parsed["a\"b"] as? String == "tab\there\u{1}\\ \u{2028}é")
        #expect(JSONValue.double(.nan).written() == "null" && JSONValue.double(.infinity).written() == "null")
        let empty = try parse(StallReport(captures: [Capture(source: "e")]).json())
        let summary = try #require(empty["summary"] as? [String: Any])
        #expect(summary["p50Ms"] is NSNull && summary["stalls"] as? Int == 0)
        #expect((empty["episodes"] as? [Any])?.isEmpty == true)
    }

    @Test func iso8601AndNameFitting() {
        #expect(ReportFormat.iso8601(0) == "1970-01-01T00:00:00.000Z")
        #expect(ReportFormat.iso8601(951_782_400_999_000_000) == "2000-02-29T00:00:00.999Z")
        #expect(ReportFormat.fit("static M.f(a: Swift.Int) -> Swift.Int", width: 30) == "static M.f(a: Swift.Int)")
        #expect(ReportFormat.fit("M.T.(pass in _C317CB8B6FF4787DE7E9A80FE96A7AF6)(Swift.Array<M.Message>) -> Swift.Bool", width: 40)
            == "M.T.pass(Swift.Array<M.Message>)")
        #expect(ReportFormat.fit("(extension in Swift):Swift.Collection.split(maxSplits: Swift.Int) -> [A]", width: 46)
            == "(extension in Swift):Swift.Collection.split(…)")
        #expect(ReportFormat.fit(String(repeating: "x", count: 90), width: 10).count == 10)
        // A thread's line: only its function is shortened as a name; the thread's name and tid stay (a specialized
        // function used to shorten the whole line to the function alone).
        let frame = "specialized static StallSamples.BlockedWork.holdLock(seconds: Swift.Double) -> ()"
        let line = ReportFormat.fit("lock-holder [30579] owner: S clock_nanosleep 1.000 s, in ", then: frame, width: 74)
        #expect(line.hasPrefix("lock-holder [30579] owner: S clock_nanosleep 1.000 s, in specialized") && line.count <= 74, "\(line)")
        #expect(ReportFormat.fit(String(repeating: "p", count: 90), then: "f()", width: 10).count == 10)
        // A line that fits is whole, also without a function (a thread without a stack).
        let frameless = String(repeating: "t", count: 74)
        #expect(ReportFormat.fit(frameless, then: "", width: 74) == frameless)
        #expect(ReportFormat.fit("a [1] ", then: "f()", width: 9) == "a [1] f()")
        // Wide characters take two columns (a CJK thread name: the line still fits 80 columns on a terminal).
        let wide = ReportFormat.fit("数据库写入器 [12] owner: S futex wait, in ", then: String(repeating: "f", count: 60), width: 74)
        #expect(wide.columns == 74 && wide.hasSuffix("…"), "\(wide) \(wide.columns)")
        #expect("数据".columns == 4 && "e\u{301}".columns == 1 && "数据库".prefix(columns: 5) == "数据")
    }

    @Test func appCodeRule() {
        #expect(AppCodeRule.isSystemPath("/opt/swift/usr/lib/swift/linux/libFoundation.so"))
        #expect(AppCodeRule.isSystemPath("/lib/x86_64-linux-gnu/libc.so.6") && AppCodeRule.isSystemPath("linux-vdso.so.1"))
        #expect(AppCodeRule.isSystemPath("/app/Frameworks/libswiftCore.so"))
        #expect(!AppCodeRule.isSystemPath("/app/lib/libMyKit.so") && !AppCodeRule.isSystemPath("/home/me/app"))
        #expect(AppCodeRule.isEntryPoint("main") && AppCodeRule.isEntryPoint("static demo.Main.$main() -> ()"))
        #expect(!AppCodeRule.isAppFunction("generic specialization <Swift.Int> of Swift.IndexingIterator.next() -> A?"))
        #expect(!AppCodeRule.isAppFunction("closure #1 (A) -> A in static Swift.MainActor.assumeIsolated<A>(_: () -> A) -> A"))
        #expect(!AppCodeRule.isAppFunction("outlined destroy of Swift.Array<A>") && !AppCodeRule.isAppFunction("f@plt"))
        #expect(!AppCodeRule.isAppFunction("__swift_instantiateConcreteTypeFromMangledName"))
        #expect(!AppCodeRule.isAppFunction("partial apply forwarder for closure #1 () -> () in app.View.pass() -> ()"))
        #expect(AppCodeRule.isAppFunction("closure #1 @Swift.MainActor () -> () in closure #3 (Foundation.Timer) -> () in chat_freeze"))
        #expect(AppCodeRule.isAppFunction("generic specialization <Swift.Int> of chat_freeze.Box.get() -> A"))
        #expect(AppCodeRule.isAppFunction("static chat_freeze.Markdown.height(of: [Block]) -> Swift.Double"))
        // Sanitizer runtimes linked into an instrumented executable (tools/sanitize.sh address) are not app code.
        #expect(!AppCodeRule.isAppFunction("_ZL17asan_thread_startPv") && !AppCodeRule.isAppFunction("__tsan_thread_start_func"))
        #expect(!AppCodeRule.isAppFunction("_ZN6__asan9AsanThread11ThreadStartEy") && !AppCodeRule.isAppFunction("__interceptor_pthread_create"))
        #expect(AppCodeRule.isAppFunction("_ZN7MyKit6layoutEv") && AppCodeRule.isAppFunction("cell_height.HostingView.layoutPass() -> ()"))
        // stallprof's own code linked into the app (seen under ASan: 1 % of a stall's samples in the first ping's
        // stallcap_warm_thread) is not the app's.
        #expect(!AppCodeRule.isAppFunction("stallcap_warm_thread") && !AppCodeRule.isAppFunction("stallcap_unwind_here"))
        #expect(!AppCodeRule.isAppFunction("StallProfiler.WatchdogShared.answer(ping: Swift.UInt64) -> ()"))
    }

    @Test func syscallNames() {
        #expect(SyscallNames.name(0, architecture: .x86_64) == "read" && SyscallNames.name(63, architecture: .aarch64) == "read")
        #expect(SyscallNames.name(202, architecture: .x86_64) == "futex" && SyscallNames.name(98, architecture: .aarch64) == "futex")
        #expect(SyscallNames.name(232, architecture: .x86_64) == "epoll_wait" && SyscallNames.name(999, architecture: .x86_64) == "syscall 999")
    }
}
