import StallFormat
import Testing

@testable import StallProfiler

/// The tick found from the signal's arrivals (``TickMeter``) and the rate rule (``SampleRateMeter``), fed made-up
/// times.
@Suite struct TickMeterTests {
    /// A small deterministic generator, so that the made-up delays differ from arrival to arrival.
    struct Jitter {
        var state: UInt64
        mutating func next(below bound: UInt64) -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return (state >> 33) % bound
        }
    }

    /// `count` requests of a busy thread on a kernel ticking every `tickNs`: each made 0.1-1.5 ms after the previous
    /// one ended (the watchdog's poll and schedule), answered at the first tick after it, 5-60 µs late, and
    /// collected up to 1 ms later.
    func backToBack(tickNs: UInt64, count: Int, seed: UInt64 = 1) -> TickMeter {
        var meter = TickMeter(), jitter = Jitter(state: seed)
        var ended: UInt64 = 1_000_000_000_000
        for _ in 0..<count {
            let requested = ended + 100_000 + jitter.next(below: 1_400_000)
            let arrival = (requested / tickNs + 1) * tickNs + 5_000 + jitter.next(below: 55_000)
            ended = arrival + jitter.next(below: 1_000_000)
            meter.requested(threadID: 7, requestedNs: requested, endedNs: ended, arrivedNs: arrival)
        }
        return meter
    }

    @Test(arguments: TickMeter.candidatesNs)
    func backToBackArrivalsNameTheTick(_ tickNs: UInt64) {
        #expect(backToBack(tickNs: tickNs, count: 40).tickNs == tickNs)
        #expect(backToBack(tickNs: tickNs, count: 400, seed: 9).tickNs == tickNs, "a full ring")
    }

    @Test func tooFewArrivalsNameNothing() {
        #expect(backToBack(tickNs: 4_000_000, count: TickMeter.minimumArrivals).tickNs == nil)
        #expect(backToBack(tickNs: 4_000_000, count: TickMeter.minimumArrivals + 1).tickNs == 4_000_000)
    }

    /// A skewed tick (`skew_tick=1`: each CPU's shifted by a fixed amount) still gathers in one window.
    @Test func aShiftedTickIsFound() {
        var meter = TickMeter()
        var ended: UInt64 = 1_000_000_000_000
        for _ in 0..<64 {
            let requested = ended + 700_000
            let arrival = (requested / 4_000_000 + 1) * 4_000_000 + 1_000_000 + 30_000
            ended = arrival + 200_000
            meter.requested(threadID: 7, requestedNs: requested, endedNs: ended, arrivedNs: arrival)
        }
        #expect(meter.tickNs == 4_000_000)
    }

    /// Requests on the sampler's own 10 ms schedule at HZ=1000: every arrival is on the same tick of a 10 ms period,
    /// which would read as a 10 ms tick. They are not back to back, so they are not counted.
    @Test func arrivalsOnTheSamplersScheduleAreNotCounted() {
        var meter = TickMeter()
        for index in 0..<100 {
            let requested = 1_000_000_000_000 + UInt64(index) * 10_000_000 + 300_000
            let arrival = (requested / 1_000_000 + 1) * 1_000_000 + 20_000
            meter.requested(threadID: 7, requestedNs: requested, endedNs: arrival + 100_000, arrivedNs: arrival)
        }
        #expect(meter.tickNs == nil)
    }

    /// A loaded machine where every arrival comes late, whenever the thread runs again: arrivals that fit no tick
    /// name none.
    @Test func scatteredArrivalsNameNothing() {
        var meter = TickMeter(), jitter = Jitter(state: 3)
        var ended: UInt64 = 1_000_000_000_000
        for _ in 0..<128 {
            let requested = ended + 500_000
            ended = requested + 300_000 + jitter.next(below: 9_000_000)
            meter.requested(threadID: 7, requestedNs: requested, endedNs: ended, arrivedNs: ended - 200_000)
        }
        #expect(meter.tickNs == nil)
    }

    /// An answer collected after its request timed out is older than the request that collected it; a request
    /// after another thread's is not back to back; samples not taken by the signal are no arrivals.
    @Test func lateAnswersOtherThreadsAndOtherSamplesAreNoArrivals() {
        var meter = TickMeter()
        var ended: UInt64 = 1_000_000_000_000
        for index in 0..<60 {
            let requested = ended + 500_000
            let arrival = (requested / 4_000_000 + 1) * 4_000_000 + 20_000
            switch index % 3 {
            case 0: meter.requested(threadID: 7, requestedNs: requested, endedNs: arrival, arrivedNs: requested - 100_000)
            case 1: meter.requested(threadID: 8 + Int32(index), requestedNs: requested, endedNs: arrival, arrivedNs: arrival)
            default: meter.requested(threadID: 7, requestedNs: requested, endedNs: arrival, arrivedNs: nil)
            }
            ended = arrival
        }
        #expect(meter.tickNs == nil)
    }

    @Test func theWindowWrapsAroundThePeriod() {
        #expect(TickMeter.mostInOneWindow([10, 20, 3_990, 3_995], period: 4_000) == 4)
        #expect(TickMeter.mostInOneWindow([0, 1_000, 2_000, 3_000], period: 4_000) == 1)
        #expect(TickMeter.mostInOneWindow([], period: 4_000) == 0)
    }

    /// The rule at the end of an episode.
    @Test func theTickLimitsABusyThreadAskedFasterThanIt() {
        // Asked 1 kHz, got 250/s, all by the signal, tick 4 ms: the tick.
        let busy = SampleRateMeter.rate(
            sampleCount: 125, signalled: 125, measuredNs: 500_000_000, askedIntervalNs: 1_000_000, tickNs: 4_000_000)
        #expect(busy == EpisodeSampleRate(samplesPerKilosecond: 250_000, tickNs: 4_000_000, limit: .tick))
        // Mostly read from memory or repeated: a blocked thread is sampled at the asked rate; a shortfall is not the
        // tick's.
        let blocked = SampleRateMeter.rate(
            sampleCount: 300, signalled: 20, measuredNs: 500_000_000, askedIntervalNs: 1_000_000, tickNs: 4_000_000)
        #expect(blocked.limit == .none && blocked.samplesPerKilosecond == 600_000)
        // More than one per tick (repeated samples of a thread waiting for a CPU between the signal's): not the
        // tick's.
        let above = SampleRateMeter.rate(
            sampleCount: 183, signalled: 120, measuredNs: 500_000_000, askedIntervalNs: 2_000_000, tickNs: 4_000_000)
        #expect(above.limit == .none && above.samplesPerKilosecond == 366_000)
        #expect(SampleRateMeter.rate(sampleCount: 127, signalled: 127, measuredNs: 500_000_000, askedIntervalNs: 1_000_000,
                                     tickNs: 4_000_000).limit == .tick, "the span's two ends")
        // The tick unknown, or shorter than the asked interval, or the asked rate kept: nothing is claimed.
        let cases: [(asked: UInt64, tick: UInt64?, count: UInt64)] = [
            (1_000_000, nil, 125), (10_000_000, 4_000_000, 40), (1_000_000, 4_000_000, 500),
        ]
        for (asked, tick, count) in cases {
            let rate = SampleRateMeter.rate(
                sampleCount: count, signalled: count, measuredNs: 500_000_000, askedIntervalNs: asked,
                tickNs: tick)
            #expect(rate.limit == .none, "asked \(asked), tick \(tick ?? 0), \(count) samples")
            #expect(rate.tickNs == UInt32(tick ?? 0))
        }
        #expect(SampleRateMeter.rate(sampleCount: 0, signalled: 0, measuredNs: 0, askedIntervalNs: 1_000_000,
                                     tickNs: 4_000_000).limit == .none)
    }
}
