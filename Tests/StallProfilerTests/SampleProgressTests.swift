import CStallCapture
import Foundation
import Testing

@testable import StallProfiler

/// A sample's CPU clock is read when the watchdog collects the answer, some time after the handler ran. Before
/// these rules the next sample of a busy thread, due at once after an answer collected late (asked for 1 kHz, the
/// signal comes once a tick), saw only the microseconds run since that read and was recorded as a thread waiting
/// for a CPU with its last stack repeated: half the samples of a 1 kHz busy stall, on an idle machine.
@Suite struct SampleProgressTests {
    @Test func aThreadThatRanMostOfAShortSpanDidNotWait() {
        let floor: UInt64 = 200_000
        #expect(EpisodeSampler.waited(progressNs: 0, sinceNs: 5_000_000, floorNs: floor))  // asleep
        #expect(EpisodeSampler.waited(progressNs: 40_000, sinceNs: 1_000_000, floorNs: floor))  // barely ran
        #expect(!EpisodeSampler.waited(progressNs: 190_000, sinceNs: 200_000, floorNs: floor))  // ran all of it
        #expect(!EpisodeSampler.waited(progressNs: 0, sinceNs: 0, floorNs: floor))  // no span: nothing to tell
        #expect(!EpisodeSampler.waited(progressNs: 300_000, sinceNs: 10_000_000, floorNs: floor))  // over the floor
    }

    @Test func theClockAtTheHandlerIsTheReadLessTheTimeSinceWithinBounds() {
        // Read 800 µs after the handler: the thread ran at most that much since.
        #expect(EpisodeSampler.cpuAtHandler(readNs: 10_000_000, readAtNs: 5_800_000, handlerNs: 5_000_000, previousNs: 1_000_000) == 9_200_000)
        // Never below the previous sample's clock (the thread did not run all that time).
        #expect(EpisodeSampler.cpuAtHandler(readNs: 10_000_000, readAtNs: 9_000_000, handlerNs: 0, previousNs: 9_500_000) == 9_500_000)
        // Nor above the read (a previous clock from a reading that came later than this answer's handler).
        #expect(EpisodeSampler.cpuAtHandler(readNs: 10_000_000, readAtNs: 5_000_000, handlerNs: 5_000_000, previousNs: 12_000_000) == 10_000_000)
        // A read stamped before the handler (no collection time): the read itself.
        #expect(EpisodeSampler.cpuAtHandler(readNs: 7, readAtNs: 0, handlerNs: 5_000_000, previousNs: nil) == 7)
        // Pipelined: read 10 ms after the handler by a thread that ran 2 ms of them (a loaded machine). Worked
        // back, 8 ms too low; the clock before the request, 1 ms before the handler's tick, is the tighter bound.
        #expect(EpisodeSampler.cpuAtHandler(
            readNs: 50_000_000, readAtNs: 20_000_000, handlerNs: 10_000_000, previousNs: 30_000_000,
            requestNs: 47_000_000) == 47_000_000)
        // A thread that ran all of it: the worked-back clock is above the request's and is kept.
        #expect(EpisodeSampler.cpuAtHandler(
            readNs: 50_000_000, readAtNs: 20_000_000, handlerNs: 10_000_000, previousNs: 30_000_000,
            requestNs: 38_000_000) == 40_000_000)
    }

    /// A pipelined sample's wait is read up to an interval after its stack: it records no more than fits between
    /// it and the previous sample, and the rest counts at the next one.
    @Test func aWaitReadAfterTheStackCountsOnlyWhatFitsBeforeIt() {
        typealias Clocks = EpisodeSampler.Reading
        let previous = Clocks(timeNs: 100_000_000, cpuNs: 50_000_000, waitNs: 20_000_000)
        // 10 ms apart, 4 ms of CPU: at most 6 ms more wait, though 30 ms more were read (they ended after the stack).
        let cut = EpisodeSampler.waitAtStack(
            readNs: 50_000_000, stackNs: 110_000_000, cpuAtStackNs: 54_000_000, previous: previous)
        #expect(cut == 26_000_000)
        // The next sample, 10 ms later with 1 ms of CPU, holds the rest as far as it fits: 9 ms of the 24 left.
        let next = EpisodeSampler.waitAtStack(
            readNs: 50_000_000, stackNs: 120_000_000, cpuAtStackNs: 55_000_000,
            previous: Clocks(timeNs: 110_000_000, cpuNs: 54_000_000, waitNs: cut))
        #expect(next == 35_000_000)
        // A reading that fits is kept; so is any first sample, and one stamped before the previous.
        #expect(EpisodeSampler.waitAtStack(readNs: 23_000_000, stackNs: 110_000_000, cpuAtStackNs: 54_000_000, previous: previous) == 23_000_000)
        #expect(EpisodeSampler.waitAtStack(readNs: 90_000_000, stackNs: 110_000_000, cpuAtStackNs: 54_000_000, previous: nil) == 90_000_000)
        #expect(EpisodeSampler.waitAtStack(readNs: 90_000_000, stackNs: 90_000_000, cpuAtStackNs: 54_000_000, previous: previous) == 90_000_000)
        // A thread that ran the whole span (or a clock worked back past it) waited none of it.
        #expect(EpisodeSampler.waitAtStack(readNs: 90_000_000, stackNs: 110_000_000, cpuAtStackNs: 70_000_000, previous: previous) == 20_000_000)
    }

    /// The sampled thread is this one: the answer is made up (taken 800 µs before it was collected), and the thread
    /// then runs 100 µs of CPU before the next sample. That next sample must be a request, not a repeat: the thread
    /// ran all the time since the clock was read. Where the machine preempted this thread for more than that time
    /// (then it did wait), the attempt is made again.
    @Test func aBusyThreadSampledRightAfterALateAnswerIsAskedAgainNotRepeated() throws {
        let tid = stallcap_gettid()
        let configuration = StallWatchdog.Configuration(sampleInterval: .milliseconds(1), outputPath: "/dev/null")
        var judged = 0
        for _ in 0..<50 where judged < 5 {
            var requests = 0
            let sampler = EpisodeSampler(
                episodeID: 1, threadID: tid, timing: WatchdogTiming(configuration), maxFrames: 16)
            sampler.request = { _, _, frames, _, info in
                requests += 1
                guard let frames, let info else { return STALLCAP_ERROR }
                frames[0] = 0x1000
                let now = stallcap_monotonic_ns()
                info.pointee = stallcap_sample_info()
                info.pointee.frame_count = 1
                info.pointee.timestamp_ns = now - 800_000
                info.pointee.collected_ns = now
                info.pointee.thread_cpu_ns = UInt64(stallcap_thread_cpu_ns(tid))
                return STALLCAP_OK
            }
            let first = try #require(sampler.sample())
            #expect(first.flags.isSignalled)
            let wall0 = stallcap_monotonic_ns(), cpu0 = stallcap_thread_cpu_ns(tid)
            while stallcap_thread_cpu_ns(tid) - cpu0 < 100_000 {}
            let second = sampler.sample()
            let ran = UInt64(stallcap_thread_cpu_ns(tid) - cpu0), span = stallcap_monotonic_ns() - wall0
            guard span < 2 * ran else { continue }  // preempted: this thread did wait, nothing to judge
            judged += 1
            #expect(second?.flags.isSignalled == true, "ran \(ran) ns of \(span) ns: \(String(describing: second?.flags))")
            #expect(requests == 2)
            // The first sample's clock is the one at its handler: the read less the 800 µs since, not the read.
            #expect(first.threadCPUNs + 800_000 <= UInt64(cpu0))
        }
        #expect(judged > 0, "this thread was preempted in every attempt")
    }
}
