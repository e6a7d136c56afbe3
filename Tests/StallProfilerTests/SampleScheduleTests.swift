import Testing

@testable import StallProfiler

/// The schedule both detectors sample on, fed made-up times.
@Suite struct SampleScheduleTests {
    @Test func samplesComeOneIntervalApartFromWhenEachFellDue() {
        var schedule = SampleSchedule(intervalNs: 10)
        schedule.start(atNs: 100)
        #expect(schedule.isDue(atNs: 100))
        schedule.took(atNs: 102)  // a little late: the next is still due at 110, not 112
        #expect(!schedule.isDue(atNs: 109) && schedule.isDue(atNs: 110))
        schedule.took(atNs: 135)  // late by more than an interval: not again at once, but half an interval on
        #expect(schedule.dueNs == 140)
    }

    @Test func theNextSampleIsDueHalfAnIntervalAfterTheLastEnded() {
        var schedule = SampleSchedule(intervalNs: 10)
        schedule.start(atNs: 100)
        schedule.took(atNs: 100)
        schedule.ended(atNs: 108)  // a signalled sample that waited for a tick
        #expect(schedule.dueNs == 113)
        schedule.took(atNs: 113)
        schedule.ended(atNs: 114)  // a quick one: the interval rule stands
        #expect(schedule.dueNs == 123)
    }

    @Test func aFirstSampleWithNothingDueBeforeItWaitsAWholeInterval() {
        var schedule = SampleSchedule(intervalNs: 10)
        schedule.tookFirst(atNs: 500)
        #expect(schedule.dueNs == 510)
    }
}
