import Foundation
import StallFormat
import StallTestSupport
import Testing

@testable import StallAnalysis

/// The rate each episode was sampled at: `samplesPerSecond` and `askedSamplesPerSecond` in `report --json`, and the
/// text's "sampling: asked 1000/s, got 250/s (one per scheduler tick)" where the watchdog's figure fell short.
@Suite struct ReportSampleRateTests {
    static let tickLimited = EpisodeSampleRate(samplesPerKilosecond: 250_000, tickNs: 4_000_000, limit: .tick)

    /// A capture asked for `intervalNs` between samples, holding busy stalls, the i-th ending with `rates[i]` (nil:
    /// an end record as older writers wrote it).
    func capture(intervalNs: UInt64, rates: [EpisodeSampleRate?]) throws -> Capture {
        let stalls = rates.enumerated().flatMap { index, rate in
            ReportFixtures.episode(
                UInt32(index + 1), at: 2_000 + UInt64(index) * 2_000, durationMs: 500, state: .busy,
                samples: Array(repeating: [ReportFixtures.height, ReportFixtures.pass, ReportFixtures.system], count: 4)
            ).map { record -> CaptureRecord in
                guard case .stallEnd(var end) = record else { return record }
                end.sampleRate = rate
                return .stallEnd(end)
            }
        }
        let records = ReportFixtures.records(stalls).map { record -> CaptureRecord in
            guard case .process(var process) = record else { return record }
            process.sampleIntervalNs = intervalNs
            return .process(process)
        }
        return try ReportFixtures.capture(records, name: "rates")
    }

    func episodes(_ report: StallReport) throws -> [[String: Any]] {
        let root = try #require(try JSONSerialization.jsonObject(with: Data(report.json().utf8)) as? [String: Any])
        return try #require(root["episodes"] as? [[String: Any]])
    }

    @Test func askedOneKilohertzGotOnePerTick() throws {
        let report = StallReport(captures: [try capture(intervalNs: 1_000_000, rates: [Self.tickLimited])])
        #expect(report.text().contains("\n  sampling: asked 1000/s, got 250/s (one per scheduler tick)\n"), "\(report.text())")
        let episode = try #require(try episodes(report).first)
        #expect(episode["samplesPerSecond"] as? Double == 250)
        #expect(episode["askedSamplesPerSecond"] as? Double == 1000)
        #expect(episode["sampleRateLimit"] as? String == "tick")
        #expect(episode["tickMs"] as? Double == 4)
    }

    /// Short for another reason (no limit named): the figures alone. Kept (within a tenth): no line.
    @Test func aShortfallWithoutALimitAndARateKept() throws {
        let short = EpisodeSampleRate(samplesPerKilosecond: 61_500, tickNs: 0, limit: .none)
        let kept = EpisodeSampleRate(samplesPerKilosecond: 97_000, tickNs: 0, limit: .none)
        let shortText = StallReport(captures: [try capture(intervalNs: 10_000_000, rates: [short])]).text()
        #expect(shortText.contains("\n  sampling: asked 100/s, got 62/s\n"), "\(shortText)")
        let keptReport = StallReport(captures: [try capture(intervalNs: 10_000_000, rates: [kept])])
        #expect(!keptReport.text().contains("sampling:"))
        let episode = try #require(try episodes(keptReport).first)
        #expect(episode["samplesPerSecond"] as? Double == 97 && episode["sampleRateLimit"] as? String == "none")
        #expect(episode["tickMs"] is NSNull)
    }

    /// Captures written before the watchdog recorded the rate: the JSON computes it from the end record's count over
    /// its span (4 samples over 500 ms); the text says nothing (the watchdog's figure is not there).
    @Test func olderCapturesHaveTheFiguresInTheJSONOnly() throws {
        let report = StallReport(captures: [try capture(intervalNs: 1_000_000, rates: [nil])])
        #expect(!report.text().contains("sampling:"))
        let episode = try #require(try episodes(report).first)
        #expect(episode["samplesPerSecond"] as? Double == 8)
        #expect(episode["askedSamplesPerSecond"] as? Double == 1000)
        #expect(episode["sampleRateLimit"] is NSNull && episode["tickMs"] is NSNull)
    }

    /// Alike episodes make one group: its line says how many of them fell short, and the range they got.
    @Test func aGroupSaysHowManyOfItsEpisodesFellShort() throws {
        let slower = EpisodeSampleRate(samplesPerKilosecond: 238_400, tickNs: 4_000_000, limit: .tick)
        let kept = EpisodeSampleRate(samplesPerKilosecond: 995_000, tickNs: 4_000_000, limit: .none)
        let report = StallReport(captures: [try capture(intervalNs: 1_000_000, rates: [Self.tickLimited, slower, kept])])
        #expect(report.groups.count == 1)
        let text = report.text()
        #expect(text.contains("\n  sampling: asked 1000/s, got 238-250/s in 2 of 3 episodes (one per scheduler\n    tick)\n"),
                "\(text)")
        #expect(try episodes(report).map { $0["samplesPerSecond"] as? Double } == [250, 238.4, 995])
    }

    @Test func ratesReadAsWholeNumbersAboveTen() {
        #expect(SamplingShortfall.perSecond(1000) == "1000/s")
        #expect(SamplingShortfall.perSecond(333.333) == "333/s")
        #expect(SamplingShortfall.perSecond(2.46) == "2.5/s")
        #expect(SamplingShortfall.perSecond(.infinity) == "?/s")
    }
}
