import Foundation
import Testing

@testable import StallFormat

/// What issue 17 ("right on an overloaded machine") added to the format: the stallEnd record's `missedRunQueueNs`
/// and the sample flag `waitingForCPU`.
@Suite struct OverloadFormatTests {
    let begin = StallBeginRecord(stallID: 1, startNs: 0, detectedNs: 250_000_000, threadID: 42)

    @Test func theMissedSampleWaitRoundTripsAndIsAbsentFromOlderRecords() throws {
        let end = StallEndRecord(
            stallID: 1, endNs: 900_000_000, cpuNs: 100_000_000, runQueueNs: 700_000_000, measuredNs: 850_000_000,
            state: .busy, sampleCount: 9, missedCount: 12, pausedNs: 0, missedRunQueueNs: 650_000_000)
        let old = StallEndRecord(
            stallID: 2, endNs: 900_000_000, cpuNs: 1, measuredNs: 2, state: .blocked, sampleCount: 1, missedCount: 0,
            pausedNs: 5)
        let records: [CaptureRecord] = [.stallBegin(begin), .stallEnd(end), .stallEnd(old)]
        let bytes = CaptureRoundTripTests.encoded(records)
        let (read, warning) = try CaptureReader.records(bytes, source: "overload.stalls")
        #expect(warning == nil)
        #expect(read == records)
        guard case .stallEnd(let back) = read[1], case .stallEnd(let older) = read[2] else {
            Issue.record("not end records")
            return
        }
        #expect(back.missedRunQueueNs == 650_000_000)
        #expect(older.missedRunQueueNs == nil, "a record that ends after pausedNs has no such field")
        #expect(Stall(begin: begin, end: back).missedRunQueueNs == 650_000_000)
        #expect(Stall(begin: begin).missedRunQueueNs == nil, "unfinished: unknown")
    }

    @Test func theWaitingFlagRoundTrips() throws {
        let sample = SampleRecord(
            stallID: 1, timestampNs: 300_000_000, threadCPUNs: 5, runQueueNs: 6, flags: [.repeated, .waitingForCPU],
            frames: [])
        let (read, _) = try CaptureReader.records(
            CaptureRoundTripTests.encoded([.stallBegin(begin), .sample(sample)]), source: "flag.stalls")
        #expect(read.last == .sample(sample))
        #expect(SampleFlags.waitingForCPU.rawValue == 16)
    }

    /// A busy stall killed while its thread waited for a CPU on a loaded machine: its last samples are repeated
    /// (no CPU progress) and found the thread runnable. schedstat had not credited that wait, so from the samples'
    /// figures alone the stall read 0 % active, "blocked" (7 of 15 such kills with eight CPU hogs on two cores).
    @Test func anUnfinishedStallWhoseThreadWaitsForACPUIsBusy() {
        let real = Sample(timestampNs: 300_000_000, threadCPUNs: 28_600_000, runQueueNs: 594_100_000, flags: [], frames: [1])
        let waiting = (1...8).map { index in
            Sample(timestampNs: 300_000_000 + UInt64(index) * 12_000_000, threadCPUNs: 28_600_000,
                   runQueueNs: 594_100_000, flags: [.repeated, .waitingForCPU], frames: [])
        }
        let stall = Stall(begin: begin, samples: [real] + waiting)
        #expect(stall.state == .busy)
        #expect(stall.activeRatio == 1)
        #expect(stall.cpuRatio == 0)
        // The same samples from an older writer (no flag), or of a thread asleep: blocked, as before.
        let asleep = Stall(begin: begin, samples: [real] + waiting.map { sample in
            var copy = sample
            copy.flags = .repeated
            return copy
        })
        #expect(asleep.state == .blocked)
    }
}
