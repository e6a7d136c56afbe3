import Testing

@testable import StallFormat

/// The stallEnd record's sampling rate (`samplesPerKilosecond`, `tickNs`, `rateLimit`, after `missedRunQueueNs`):
/// it round-trips, records written before it read without it, and ``Stall/samplesPerSecond`` falls back to the
/// older fields.
@Suite struct SampleRateFormatTests {
    let begin = StallBeginRecord(stallID: 1, startNs: 0, detectedNs: 150_000_000, threadID: 42)

    /// A busy episode asked for 1 kHz that got 250 samples a second, one per 4 ms tick.
    func end(rate: EpisodeSampleRate?, missedWait: UInt64? = 0) -> StallEndRecord {
        StallEndRecord(
            stallID: 1, endNs: 600_000_000, cpuNs: 480_000_000, runQueueNs: 10_000_000, measuredNs: 500_000_000,
            state: .busy, sampleCount: 125, missedCount: 0, pausedNs: 0, missedRunQueueNs: missedWait, sampleRate: rate)
    }

    let tickLimited = EpisodeSampleRate(samplesPerKilosecond: 250_000, tickNs: 4_000_000, limit: .tick)

    func payload(_ record: StallEndRecord) -> [UInt8] {
        var bytes: [UInt8] = []
        record.encode(into: &bytes)
        return bytes
    }

    @Test func theRateRoundTripsWithoutANewVersion() throws {
        let records: [CaptureRecord] = [.stallBegin(begin), .stallEnd(end(rate: tickLimited))]
        let bytes = CaptureRoundTripTests.encoded(records)
        #expect(bytes[8] == CaptureFormat.version && bytes[9] == 0, "a trailing field keeps the version")
        let (read, warning) = try CaptureReader.records(bytes, source: "rate.stalls")
        #expect(warning == nil)
        #expect(read == records)
        let capture = try CaptureReader.parse(bytes, source: "rate.stalls")
        #expect(capture.stalls[0].end?.sampleRate == tickLimited)
        #expect(capture.stalls[0].samplesPerSecond == 250)
    }

    /// What older readers see: the record's earlier fields, byte for byte, then 9 bytes they ignore.
    @Test func theRateIsAppendedAfterEveryOlderField() {
        let with = payload(end(rate: tickLimited)), without = payload(end(rate: nil))
        #expect(without.count == 61)
        #expect(with.count == 70)
        #expect(Array(with.prefix(61)) == without)
        #expect(Array(with.suffix(9)) == [0x90, 0xD0, 0x03, 0, 0x00, 0x09, 0x3D, 0, 1])
    }

    /// Records as each older writer ended them: after `missedRunQueueNs`, after `pausedNs`, after `missedCount`.
    @Test func olderRecordsReadWithoutARate() throws {
        let full = payload(end(rate: nil, missedWait: 7))
        for (length, missedWait) in [(61, UInt64(7) as UInt64?), (53, nil), (45, nil)] {
            var cursor = ByteCursor(bytes: Array(full.prefix(length)), offset: 0, source: "old")
            let read = try StallEndRecord.decode(&cursor)
            #expect(read.sampleRate == nil, "\(length) bytes")
            #expect(read.missedRunQueueNs == missedWait, "\(length) bytes")
            #expect(read.sampleCount == 125 && read.measuredNs == 500_000_000)
        }
    }

    /// A rate needs `missedRunQueueNs` before it: a nil one is written as 0. A limit this reader does not know reads
    /// as none.
    @Test func aRateWithoutTheMissedWaitAndAnUnknownLimit() throws {
        var cursor = ByteCursor(bytes: payload(end(rate: tickLimited, missedWait: nil)), offset: 0, source: "nil-wait")
        let read = try StallEndRecord.decode(&cursor)
        #expect(read.missedRunQueueNs == 0 && read.sampleRate == tickLimited)
        var bytes = payload(end(rate: tickLimited))
        bytes[bytes.count - 1] = 9
        cursor = ByteCursor(bytes: bytes, offset: 0, source: "future-limit")
        #expect(try StallEndRecord.decode(&cursor).sampleRate?.limit == SampleRateLimit.none)
    }

    /// Without the watchdog's figure: the end record's count over its span; unfinished: the samples' own spacing.
    @Test func theRateOfOlderAndUnfinishedEpisodes() {
        #expect(Stall(begin: begin, end: end(rate: nil)).samplesPerSecond == 250)
        var instant = end(rate: nil)
        instant.measuredNs = 0
        #expect(Stall(begin: begin, end: instant).samplesPerSecond == nil)
        let samples = (0..<11).map { index in
            Sample(timestampNs: 200_000_000 + UInt64(index) * 4_000_000, threadCPUNs: 0, runQueueNs: 0, flags: [],
                   frames: [1])
        }
        #expect(Stall(begin: begin, samples: samples).samplesPerSecond == 250)
        #expect(Stall(begin: begin, samples: Array(samples.prefix(1))).samplesPerSecond == nil)
    }

    @Test func ratesPerKilosecondRoundAndCap() {
        #expect(EpisodeSampleRate.perKilosecond(count: 125, overNs: 500_000_000) == 250_000)
        #expect(EpisodeSampleRate.perKilosecond(count: 1, overNs: 3_000_000) == 333_333)
        #expect(EpisodeSampleRate.perKilosecond(count: 5, overNs: 0) == 0)
        #expect(EpisodeSampleRate.perKilosecond(count: .max, overNs: 1) == 4_000_000_000)
    }
}
