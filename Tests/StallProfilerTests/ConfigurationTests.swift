import CStallCapture
import StallFormat
import Testing
#if canImport(Glibc)
import Glibc
#endif

@testable import StallProfiler

@Suite struct ConfigurationTests {
    @Test func defaultsAreThoseDocumented() {
        let configuration = StallWatchdog.Configuration(outputPath: "app.stalls")
        #expect(configuration.threshold == .milliseconds(250))
        #expect(configuration.sampleInterval == .milliseconds(10))
        #expect(configuration.maxFrames >= 128)
        // Twice the interval, 20 ms, but a request is never waited for longer than two ticks.
        #expect(WatchdogTiming(configuration).sampleTimeoutNs == min(20_000_000, 2 * Int64(stallcap_tick_ns())))
        #expect(WatchdogTiming(configuration).ownerSampleTimeoutNs == 100_000_000)
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

    @Test func capturePathPlaceholdersExpandAtStart() throws {
        // 2026-01-14 09:30:12.345 UTC.
        let wallNs: UInt64 = 1_768_383_012_345_000_000
        #expect(try CapturePath.expand("/tmp/app-%p-%t-100%%.stalls", origin: "x", pid: 4242, wallNs: wallNs)
            == "/tmp/app-4242-20260114T093012.345Z-100%.stalls")
        #expect(try CapturePath.expand("plain.stalls", origin: "x", pid: 1, wallNs: 0) == "plain.stalls")
        #expect(CapturePath.timestamp(5_000_000) == "19700101T000000.005Z")
        // LLVM_PROFILE_FILE's %h and %m are not ours; a lone % at the end is a mistake too.
        for bad in ["app-%h.stalls", "app-%m.stalls", "app.stalls%"] {
            let error = #expect(throws: StallWatchdogError.self) {
                try StallWatchdog.configuration(fromEnvironment: [EnvironmentName.output: bad])
            }
            #expect(error?.description.contains("\(EnvironmentName.output)=\(bad): unknown placeholder") == true)
            #expect(throws: StallWatchdogError.self) { try StallWatchdog.Configuration(outputPath: bad).validate() }
        }
        // The template is kept in the configuration; StallWatchdog.start expands it (CaptureOwnershipTests).
        let configuration = try StallWatchdog.configuration(fromEnvironment: [EnvironmentName.output: "a-%p.stalls"])
        #expect(configuration?.outputPath == "a-%p.stalls")
    }

    @Test func environmentUnsetStartsNothing() throws {
        #expect(try StallWatchdog.configuration(fromEnvironment: [:]) == nil)
        #expect(try StallWatchdog.startFromEnvironment([EnvironmentName.threshold: "100"]) == nil)
    }

    @Test func environmentValuesAreRead() throws {
        let configuration = try #require(try StallWatchdog.configuration(fromEnvironment: [
            EnvironmentName.output: "/tmp/x.stalls", EnvironmentName.threshold: "500", EnvironmentName.interval: "2.5",
        ]))
        #expect(configuration.outputPath == "/tmp/x.stalls")
        #expect(configuration.threshold == .milliseconds(500))
        #expect(configuration.sampleInterval == .microseconds(2500))
    }

    @Test func thePoolIsWatchedFromTheEnvironment() throws {
        let output = [EnvironmentName.output: "/tmp/x.stalls"]
        let watched = try #require(try StallWatchdog.configuration(fromEnvironment: output.merging(
            [EnvironmentName.pool: "80"]) { $1 }))
        #expect(watched.targets.map(\.name) == ["pool"] && watched.targets.first?.threshold == .milliseconds(80))
        #expect(watched.targets.first?.pool != nil)
        for off in ["0", "", " "] {
            let configuration = try StallWatchdog.configuration(fromEnvironment: output.merging([EnvironmentName.pool: off]) { $1 })
            #expect(configuration?.targets.isEmpty == true, "'\(off)'")
        }
        let error = #expect(throws: StallWatchdogError.self) {
            try StallWatchdog.configuration(fromEnvironment: output.merging([EnvironmentName.pool: "5"]) { $1 })
        }
        #expect("\(error.map { "\($0)" } ?? "")".contains("\(EnvironmentName.pool)=5: "), "\(String(describing: error))")
        #expect(throws: StallWatchdogError.self) {
            try StallWatchdog.configuration(fromEnvironment: output.merging([EnvironmentName.pool: "soon"]) { $1 })
        }
    }

    @Test func environmentValuesMayHaveBlanksAround() throws {
        let configuration = try #require(try StallWatchdog.configuration(fromEnvironment: [
            EnvironmentName.output: "/tmp/x.stalls", EnvironmentName.threshold: " 400\t", EnvironmentName.interval: "\t5 ",
        ]))
        #expect(configuration.threshold == .milliseconds(400))
        #expect(configuration.sampleInterval == .milliseconds(5))
        #expect(throws: StallWatchdogError.self) {
            try StallWatchdog.configuration(fromEnvironment: [EnvironmentName.output: "x", EnvironmentName.threshold: "4 00"])
        }
    }

    @Test func theProcessEnvironmentHoldsOnlyTheWatchdogVariables() {
        let names: Set = [
            EnvironmentName.output, EnvironmentName.threshold, EnvironmentName.interval, EnvironmentName.saturation,
            EnvironmentName.pool,
        ]
        let environment = StallWatchdog.processEnvironment()
        #expect(Set(environment.keys).isSubset(of: names))
        for name in names {
            #expect(environment[name] == getenv(name).map { String(cString: $0) }, "\(name)")
        }
    }

    @Test func theEnvironmentAndTheCodeMeetTheSameBoundsAndTheMessageNamesTheVariable() throws {
        var configuration = StallWatchdog.Configuration(outputPath: "x")
        configuration.threshold = .milliseconds(5)
        let fromCode = #expect(throws: StallWatchdogError.self) { try configuration.validate() }
        #expect(fromCode == .invalidConfiguration("threshold must be between 10 ms and 1 hour, not 0.005 seconds"))
        let fromEnvironment = #expect(throws: StallWatchdogError.self) {
            try StallWatchdog.configuration(fromEnvironment: [EnvironmentName.output: "x", EnvironmentName.threshold: "5"])
        }
        #expect(fromEnvironment == .invalidConfiguration(
            "\(EnvironmentName.threshold)=5: threshold must be between 10 ms and 1 hour, not 0.005 seconds"))
        let lowest = try StallWatchdog.configuration(fromEnvironment: [
            EnvironmentName.output: "x", EnvironmentName.threshold: "10", EnvironmentName.interval: "0.5",
        ])
        #expect(lowest?.threshold == .milliseconds(10) && lowest?.sampleInterval == .microseconds(500))
        let saturation = #expect(throws: StallWatchdogError.self) {
            try StallWatchdog.configuration(fromEnvironment: [EnvironmentName.output: "x", EnvironmentName.saturation: "-5"])
        }
        #expect(saturation?.description.contains("\(EnvironmentName.saturation)=-5: saturationPeriod must be") == true)
    }

    @Test(arguments: [
        (EnvironmentName.threshold, "abc"), (EnvironmentName.threshold, "-5"), (EnvironmentName.threshold, "0"),
        (EnvironmentName.interval, "nan"), (EnvironmentName.interval, "1000"), (EnvironmentName.threshold, "1"),
        (EnvironmentName.threshold, "1e13"), (EnvironmentName.interval, "inf"),
    ])
    func invalidEnvironmentValuesAreClearErrors(name: String, value: String) {
        do {
            _ = try StallWatchdog.configuration(fromEnvironment: [EnvironmentName.output: "x", name: value])
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

@Suite struct SaturationConfigurationTests {
    @Test func saturationIsOnForASecondByDefaultAndValidated() throws {
        var configuration = StallWatchdog.Configuration(outputPath: "x")
        #expect(configuration.saturationPeriod == .seconds(1))
        configuration.saturationPeriod = .milliseconds(50)
        #expect(throws: StallWatchdogError.self) { try configuration.validate() }
        configuration.saturationPeriod = nil
        #expect(throws: Never.self) { try configuration.validate() }
        configuration.saturationPeriod = .milliseconds(500)
        #expect(throws: Never.self) { try configuration.validate() }
    }

    @Test func theEnvironmentSetsOrTurnsOffSaturation() throws {
        let base = [EnvironmentName.output: "/tmp/x.stalls"]
        let off = try #require(try StallWatchdog.configuration(fromEnvironment: base.merging([EnvironmentName.saturation: "0"]) { $1 }))
        #expect(off.saturationPeriod == nil)
        let set = try #require(try StallWatchdog.configuration(fromEnvironment: base.merging([EnvironmentName.saturation: "400"]) { $1 }))
        #expect(set.saturationPeriod == .milliseconds(400))
        #expect(throws: StallWatchdogError.self) {
            try StallWatchdog.configuration(fromEnvironment: base.merging([EnvironmentName.saturation: "soon"]) { $1 })
        }
        #expect(throws: StallWatchdogError.self) {
            try StallWatchdog.configuration(fromEnvironment: base.merging([EnvironmentName.saturation: "20"]) { $1 })
        }
    }

    @Test func activityNeverExceedsTheMeasuredWindow() {
        // A 10 ms run-queue wait credited inside a 1 ms window (the 1995 % of short stalls).
        let (cpu, wait) = EpisodeSampler.activity(cpuNs: 500_000, waitNs: 10_000_000, measuredNs: 1_000_000)
        #expect(cpu == 500_000 && wait == 500_000)
        let (cpu2, wait2) = EpisodeSampler.activity(cpuNs: 2_000_000, waitNs: 0, measuredNs: 1_000_000)
        #expect(cpu2 == 1_000_000 && wait2 == 0)
        let (cpu3, wait3) = EpisodeSampler.activity(cpuNs: 300, waitNs: 200, measuredNs: 1_000)
        #expect(cpu3 == 300 && wait3 == 200)
    }
}
