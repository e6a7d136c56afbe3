import Foundation
import StallBisect
import StallFormat
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The outputs of a bisection: JSON, JUnit, the GitHub summary, the journal.
@Suite struct BisectReportTests {
    func outcome() throws -> BisectOutcome {
        let repro = SimulatedRepro(causes: [["autoscroll", "lazy-stack"]])
        let flags = ["autoscroll", "lazy-stack", "markdown-cache", "avatars"]
        return try BisectSearch(flags: flags, run: repro.predicate()).search()
    }

    @Test func jsonHasTheSchemaFieldsAndRoundTrips() throws {
        let report = BisectReport(try outcome(), command: ["chat-freeze"], consulted: ["autoscroll", "lazy-stack", "markdown-cache"])
        let json = try report.json()
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        #expect(object["schema"] as? String == "stallprof.bisect/v1")
        #expect(object["verdict"] as? String == "found")
        #expect(object["causes"] as? [[String]] == [["autoscroll", "lazy-stack"]])
        #expect(object["fixes"] as? [String] == ["autoscroll", "lazy-stack"])
        #expect(object["minimalFix"] as? [String] == ["autoscroll"])
        #expect(object["unconsultedFlags"] as? [String] == ["avatars"])
        let trials = try #require(object["trials"] as? [[String: Any]])
        #expect(object["runs"] as? Int == trials.count)
        #expect(trials.first?["disabled"] as? [String] == [])
        #expect(trials.first?["verdict"] as? String == "frozen")
        let decoded = try JSONDecoder().decode(BisectReport.self, from: Data(json.utf8))
        #expect(decoded.trials == report.trials)
    }

    @Test func junitHasOneCasePerClaimAndFailsOnOtherVerdicts() throws {
        let found = BisectReport(try outcome(), command: ["app"], consulted: [])
        let xml = found.junit()
        #expect(xml.components(separatedBy: "<testcase ").count - 1 == found.claims.count)
        #expect(xml.contains("failures=\"0\""))
        let none = try BisectSearch(flags: ["a"], run: SimulatedRepro(causes: []).predicate()).search()
        let failed = BisectReport(none, command: ["app"], consulted: []).junit()
        #expect(failed.contains("failures=\"1\"") && failed.contains("not-reproducible"))
    }

    /// Flag names, claims and messages come from the user's command line and the app's output: control
    /// characters, NUL, U+FFFE/U+FFFF and markup in them must still give well-formed XML (python3's parser).
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "python3 not installed"))
    func junitIsWellFormedForHostileText() throws {
        let hostile = "a\u{0}b\u{1}c\u{1B}d\u{FFFE}e\u{FFFF}f<g>&\"h\"'i']]>"
        let none = try BisectSearch(flags: [hostile], run: SimulatedRepro(causes: []).predicate()).search()
        var report = BisectReport(none, command: ["app"], consulted: [])
        report.message = "freezes with \(hostile)\u{7}"
        var found = BisectReport(try outcome(), command: ["app"], consulted: [])
        for index in found.claims.indices {
            found.claims[index].statement += hostile
            found.claims[index].evidence = hostile + found.claims[index].evidence
        }
        found.claims[0].passed = false
        for xml in [report.junit(), found.junit()] {
            let path = "/tmp/stallprof-junit-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).xml"
            try Data(xml.utf8).write(to: URL(fileURLWithPath: path))
            defer { unlink(path) }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            process.arguments = ["-c", "import sys, xml.etree.ElementTree as E\n"
                + "r = E.parse(sys.argv[1]).getroot()\n"
                + "print(len(list(r.iter('testcase'))), len(list(r.iter('failure'))))", path]
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            try process.run()
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "\(output)")
            let cases = xml.components(separatedBy: "<testcase ").count - 1
            let failures = xml.components(separatedBy: "<failure ").count - 1
            #expect(output == "\(cases) \(failures)\n", "\(output)")
            #expect(xml.contains("&lt;g&gt;&amp;&quot;h&quot;&apos;i&apos;]]&gt;"))
            #expect(!xml.unicodeScalars.contains { $0.value < 9 || $0.value == 0xFFFE || $0.value == 0xFFFF })
        }
    }

    @Test func markdownSummaryHasATableRowPerRun() throws {
        let report = BisectReport(try outcome(), command: ["app"], consulted: [])
        let summary = report.markdownSummary()
        #expect(summary.hasPrefix("### stallprof bisect: found"))
        #expect(summary.contains("| causes | `autoscroll`, `lazy-stack` |"))
        let rows = summary.split(separator: "\n").filter { $0.hasPrefix("| ") && $0.split(separator: "|").first.map { Int($0.trimmingCharacters(in: .whitespaces)) != nil } == true }
        #expect(rows.count == report.runs)
    }

    @Test func journalReplaysAndIgnoresACutLastLine() throws {
        let path = "/tmp/stallprof-journal-test-\(getpid())"
        defer { unlink(path) }
        let flags = ["a", "b"]
        let trials = [
            BisectTrial(disabled: [], phase: .calibrate, observation: BisectObservation(.frozen, mainThreadCPU: 1, seconds: 1.2)),
            BisectTrial(disabled: ["a", "b"], phase: .calibrate, observation: BisectObservation(.good, detail: "exit 0")),
        ]
        do {
            let journal = try BisectJournal(path: path, flags: flags, command: ["app"], resuming: false)
            try trials.forEach(journal.append)
        }
        let fd = open(path, O_WRONLY | O_APPEND)
        _ = "{\"disabled\":[\"a\"],\"pha".withCString { write(fd, $0, strlen($0)) }
        close(fd)
        #expect(try BisectJournal.load(path: path, flags: flags, command: ["app"]) == trials)
        #expect(throws: StallError.self) { try BisectJournal.load(path: path, flags: ["a"], command: ["app"]) }
        #expect(try BisectJournal.load(path: path + ".missing", flags: flags, command: ["app"]).isEmpty)
        let more = BisectTrial(disabled: ["a"], phase: .search, observation: BisectObservation(.good))
        do {
            let resumed = try BisectJournal(path: path, flags: flags, command: ["app"], resuming: true)
            try resumed.append(more)
        }
        #expect(try BisectJournal.load(path: path, flags: flags, command: ["app"]) == trials + [more])
    }

    @Test func progressLineNamesTheConfiguration() {
        let trial = BisectTrial(disabled: ["autoscroll"], phase: .verify, observation: BisectObservation(.good, seconds: 2.1, detail: "exit 0"))
        #expect(BisectProgress.line(trial, number: 3) == "run 3 [verify] disabled {autoscroll}: good (2.1 s, exit 0)")
    }
}
