import Testing

@testable import StallProfiler

@Suite struct ConfigurationTests {
    @Test func defaultsAreThoseDocumented() {
        let configuration = StallWatchdog.Configuration(outputPath: "app.stalls")
        #expect(configuration.threshold == .milliseconds(250))
        #expect(configuration.sampleInterval == .milliseconds(10))
        #expect(configuration.maxFrames >= 128)
        #expect(configuration.effectiveSampleTimeoutNs == 20_000_000)
    }

    @Test func outOfRangeFieldsAreRejected() {
        var configuration = StallWatchdog.Configuration(outputPath: "x")
        configuration.sampleTimeout = .seconds(5)
        #expect(throws: StallWatchdogError.self) { try configuration.validate() }
        configuration.sampleTimeout = .milliseconds(50)
        #expect(throws: Never.self) { try configuration.validate() }
        configuration.blockedResampleInterval = .seconds(-1)
        #expect(throws: StallWatchdogError.self) { try configuration.validate() }
        configuration.blockedResampleInterval = .seconds(1)
        configuration.maxFrames = 1000
        #expect(throws: StallWatchdogError.self) { try configuration.validate() }
    }

    @Test func environmentUnsetStartsNothing() throws {
        #expect(try StallWatchdog.configuration(fromEnvironment: [:]) == nil)
        #expect(try StallWatchdog.startFromEnvironment(["STALLPROF_THRESHOLD_MS": "100"]) == nil)
    }

    @Test func environmentValuesAreRead() throws {
        let configuration = try #require(try StallWatchdog.configuration(fromEnvironment: [
            "STALLPROF_OUTPUT": "/tmp/x.stalls", "STALLPROF_THRESHOLD_MS": "500", "STALLPROF_INTERVAL_MS": "2.5",
        ]))
        #expect(configuration.outputPath == "/tmp/x.stalls")
        #expect(configuration.threshold == .milliseconds(500))
        #expect(configuration.sampleInterval == .microseconds(2500))
    }

    @Test(arguments: [
        ("STALLPROF_THRESHOLD_MS", "abc"), ("STALLPROF_THRESHOLD_MS", "-5"), ("STALLPROF_THRESHOLD_MS", "0"),
        ("STALLPROF_INTERVAL_MS", "nan"), ("STALLPROF_INTERVAL_MS", "1000"), ("STALLPROF_THRESHOLD_MS", "1"),
        ("STALLPROF_THRESHOLD_MS", "1e13"), ("STALLPROF_INTERVAL_MS", "inf"),
    ])
    func invalidEnvironmentValuesAreClearErrors(name: String, value: String) {
        do {
            _ = try StallWatchdog.configuration(fromEnvironment: ["STALLPROF_OUTPUT": "x", name: value])
            Issue.record("\(name)=\(value) was accepted")
        } catch let error as StallWatchdogError {
            guard case .invalidConfiguration(let message) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(message.contains(name) || message.contains("threshold") || message.contains("sampleInterval"))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}
