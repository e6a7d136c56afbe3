import CStallCapture
import Foundation
import StallFormat
import Testing

@testable import StallProfiler

/// Pipelined samples: `stallcap_sample` with timeout 0 sends a request and returns, and a later call collects the
/// answer (capture.c); ``EpisodeSampler`` sends at one call and collects at the next (EpisodeSampler+Requests).
/// Part of ``WatchdogTests`` (one sampler at a time in this process).
extension WatchdogTests {
    /// Calls `stallcap_sample(tid, 0, ...)` until it stops saying pending, a millisecond apart (at most 10 s): the
    /// status then and the sample's info.
    static func collectPipelined(_ tid: Int32, _ frames: inout [UInt]) -> (stallcap_status, stallcap_sample_info) {
        var info = stallcap_sample_info()
        var status = STALLCAP_PENDING
        for _ in 0..<10_000 where status == STALLCAP_PENDING || status == STALLCAP_BUSY {
            usleep(1000)
            status = frames.withUnsafeMutableBufferPointer { stallcap_sample(tid, 0, $0.baseAddress, 256, &info) }
        }
        return (status, info)
    }

    @Test func aPipelinedRequestReturnsAtOnceAndALaterCallCollectsItsAnswer() throws {
        #expect(stallcap_install(SIGPROF) == 0)
        let thread = SignalBlocker(lateMs: nil, depth: 3)
        defer { thread.finish() }
        thread.release.store(true, ordering: .releasing)
        let tid = thread.tid.load(ordering: .acquiring)
        stallcap_sample_cancel()
        var frames = [UInt](repeating: 0, count: 256)
        var info = stallcap_sample_info()
        let before = Self.handoffCounts()
        let sentNs = stallcap_monotonic_ns()
        let sent = frames.withUnsafeMutableBufferPointer { stallcap_sample(tid, 0, $0.baseAddress, 256, &info) }
        let after = Self.handoffCounts()
        #expect(sent == STALLCAP_REQUESTED)
        // Nothing was waited for: no pause, no deadline.
        #expect(after.slept == before.slept && after.pauses == before.pauses && after.deadlines == before.deadlines)
        let (status, answer) = Self.collectPipelined(tid, &frames)
        #expect(status == STALLCAP_OK)
        #expect(answer.timestamp_ns >= sentNs)  // the handler ran after the request, not at the collecting call
        #expect(answer.collected_ns >= answer.timestamp_ns)
        // Under TSan the handler runs late, with a stale context: its frames say nothing (see HandoffBoundTests).
        if dlsym(nil, "__tsan_init") == nil { #expect(thread.owns(frames[0..<Int(answer.frame_count)])) }
        stallcap_sample_cancel()
    }

    @Test func aPipelinedRequestUnansweredStaysPendingAndCancelDropsIt() throws {
        #expect(stallcap_install(SIGPROF) == 0)
        let thread = SignalBlocker(lateMs: nil)  // blocks the signal until released
        defer { thread.finish() }
        let tid = thread.tid.load(ordering: .acquiring)
        stallcap_sample_cancel()
        var frames = [UInt](repeating: 0, count: 256)
        var info = stallcap_sample_info()
        func ask() -> stallcap_status {
            frames.withUnsafeMutableBufferPointer { stallcap_sample(tid, 0, $0.baseAddress, 256, &info) }
        }
        let before = Self.handoffCounts()
        #expect(ask() == STALLCAP_REQUESTED)
        let cpu = stallcap_thread_cpu_ns(tid)
        while stallcap_thread_cpu_ns(tid) - cpu < 10_000_000 { usleep(1000) }  // ran through ticks: the timer fired
        for _ in 0..<3 { #expect(ask() == STALLCAP_PENDING) }  // no new request while the first is unanswered
        let after = Self.handoffCounts()
        #expect(after.slept == before.slept && after.deadlines == before.deadlines)
        // Cancelled, the request is dropped: the signal left pending in the thread finds nothing to claim when the
        // thread unblocks it, and the next call sends a new request instead of collecting an answer.
        stallcap_sample_cancel()
        thread.release.store(true, ordering: .releasing)
        while !thread.unblocked.load(ordering: .acquiring) { usleep(100) }
        let requestedNs = stallcap_monotonic_ns()
        #expect(ask() == STALLCAP_REQUESTED)
        let (status, answer) = Self.collectPipelined(tid, &frames)
        #expect(status == STALLCAP_OK)
        #expect(answer.timestamp_ns >= requestedNs)
        stallcap_sample_cancel()
    }

    /// Answers of a pipelining sampler's requests, chosen by the test: `script` in order (then pending for ever),
    /// an answer being three made-up frames stamped `answerNs`. Records each call's timeout.
    final class PipelineScript: @unchecked Sendable {
        var script: [stallcap_status]
        let answerNs: UInt64
        private(set) var timeouts: [Int64] = []
        init(_ script: [stallcap_status], answerNs: UInt64 = stallcap_monotonic_ns()) {
            self.script = script
            self.answerNs = answerNs
        }

        func answer(_ timeout: Int64, _ frames: UnsafeMutablePointer<UInt>?,
                    _ info: UnsafeMutablePointer<stallcap_sample_info>?) -> stallcap_status
        {
            timeouts.append(timeout)
            let status = script.isEmpty ? STALLCAP_PENDING : script.removeFirst()
            if status == STALLCAP_OK, let frames, let info {
                for i in 0..<3 { frames[i] = UInt(0x1000 * (i + 1)) }
                info.pointee = stallcap_sample_info()
                info.pointee.frame_count = 3
                info.pointee.timestamp_ns = answerNs
                info.pointee.collected_ns = stallcap_monotonic_ns()
                info.pointee.thread_cpu_ns = 1
            }
            return status
        }
    }

    /// A pipelining sampler (50 ms apart: at least two ticks at any HZ) of the spinning `thread`, whose requests
    /// `script` answers.
    static func pipelinedSampler(_ script: PipelineScript, thread: SignalBlocker, presampling: Bool = false)
        throws -> EpisodeSampler
    {
        thread.release.store(true, ordering: .releasing)
        let configuration = StallWatchdog.Configuration(sampleInterval: .milliseconds(50), outputPath: "/dev/null")
        let sampler = EpisodeSampler(
            episodeID: presampling ? 0 : 1, threadID: thread.tid.load(ordering: .acquiring),
            timing: WatchdogTiming(configuration), maxFrames: configuration.maxFrames, presampling: presampling)
        try #require(sampler.pipelines)
        sampler.request = { _, timeout, frames, _, info in script.answer(timeout, frames, info) }
        return sampler
    }

    @Test func samplesPipelineOnlyWhenTheIntervalIsTwoTicksOrMore() {
        let fast = StallWatchdog.Configuration(sampleInterval: .milliseconds(1), outputPath: "/dev/null")
        let slow = StallWatchdog.Configuration(sampleInterval: .milliseconds(50), outputPath: "/dev/null")
        #expect(!WatchdogTiming(fast).pipelinesSamples)  // 1 kHz: the sampler waits for each answer
        #expect(WatchdogTiming(slow).pipelinesSamples)
    }

    @Test func aPipelinedRequestIsNoMissAndItsAnswerIsTheNextCallsSample() throws {
        let thread = SignalBlocker(lateMs: nil)
        defer { thread.finish() }
        let script = PipelineScript([STALLCAP_REQUESTED, STALLCAP_OK, STALLCAP_REQUESTED])
        // Sent while presampling, collected once the stall is declared: the stall's sample.
        let sampler = try Self.pipelinedSampler(script, thread: thread, presampling: true)
        #expect(sampler.sample() == nil)
        #expect(sampler.missedCount == 0 && sampler.sampleCount == 0)
        sampler.episodeID = 7
        sampler.presampling = false
        let record = try #require(sampler.sample())
        #expect(record.frames == [0x1000, 0x2000, 0x3000])
        #expect(record.timestampNs == script.answerNs)  // the handler's time, not the collecting call's
        #expect(record.stallID == 7)
        #expect(sampler.collectedRequestNs != nil)
        // One call sent, the next collected and sent the next request at once; none waited.
        #expect(script.timeouts == [0, 0, 0])
        #expect(sampler.missedCount == 0 && sampler.sampleCount == 1)
    }

    @Test func aPipelinedRequestStillUnansweredAtTheNextCallIsAMissedSampleAndNotSentAgain() throws {
        let thread = SignalBlocker(lateMs: nil)
        defer { thread.finish() }
        let script = PipelineScript([STALLCAP_REQUESTED, STALLCAP_PENDING, STALLCAP_OK, STALLCAP_REQUESTED])
        let sampler = try Self.pipelinedSampler(script, thread: thread)
        #expect(sampler.sample() == nil)
        #expect(sampler.missedCount == 0)
        #expect(sampler.sample() == nil)  // still unanswered: this call's sample is missed
        #expect(sampler.missedCount == 1)
        #expect(script.timeouts.count == 2)  // it only looked: no second request
        let record = try #require(sampler.sample())
        #expect(record.timestampNs == script.answerNs)
        #expect(sampler.missedCount == 1 && sampler.sampleCount == 1)
    }

    @Test func theEpisodesEndCollectsAnAnsweredRequestAndCancelsAnUnansweredOne() throws {
        let thread = SignalBlocker(lateMs: nil)
        defer { thread.finish() }
        let answered = PipelineScript([STALLCAP_REQUESTED, STALLCAP_OK])
        let sampler = try Self.pipelinedSampler(answered, thread: thread)
        #expect(sampler.collectOutstanding() == nil)  // nothing outstanding yet: nothing asked
        #expect(answered.timeouts.isEmpty)
        #expect(sampler.sample() == nil)
        let last = try #require(sampler.collectOutstanding())
        #expect(last.timestampNs == answered.answerNs)
        #expect(answered.timeouts == [0, 0])  // collected, no next request
        let end = sampler.finish(endNs: stallcap_monotonic_ns())
        #expect(end.sampleCount == 1 && end.missedCount == 0)

        let unanswered = PipelineScript([STALLCAP_REQUESTED, STALLCAP_PENDING])
        let other = try Self.pipelinedSampler(unanswered, thread: thread)
        #expect(other.sample() == nil)
        #expect(other.collectOutstanding() == nil)
        #expect(other.collectOutstanding() == nil)  // cancelled: not looked at again
        #expect(unanswered.timeouts.count == 2)
        let otherEnd = other.finish(endNs: stallcap_monotonic_ns())
        #expect(otherEnd.sampleCount == 0 && otherEnd.missedCount == 0)
    }

    @Test func aPipeliningSamplerCollectsARealAnswerAtALaterCall() throws {
        #expect(stallcap_install(SIGPROF) == 0)
        let thread = SignalBlocker(lateMs: nil, depth: 2)
        defer { thread.finish() }
        thread.release.store(true, ordering: .releasing)
        let configuration = StallWatchdog.Configuration(sampleInterval: .milliseconds(50), outputPath: "/dev/null")
        let sampler = EpisodeSampler(
            episodeID: 1, threadID: thread.tid.load(ordering: .acquiring), timing: WatchdogTiming(configuration),
            maxFrames: configuration.maxFrames)
        let before = Self.handoffCounts()
        let cpuBefore = UInt64(max(0, stallcap_thread_cpu_ns(thread.tid.load(ordering: .acquiring))))
        #expect(sampler.sample() == nil)  // sent
        #expect(sampler.missedCount == 0)
        var record: SampleRecord? = nil
        for _ in 0..<200 where record == nil {
            usleep(20_000)
            record = sampler.sample()
        }
        let taken = try #require(record)
        #expect(taken.flags.isSignalled)
        // The handler came after the request: its clock is never before the one read before the request.
        #expect(taken.threadCPUNs >= cpuBefore)
        if dlsym(nil, "__tsan_init") == nil { #expect(thread.owns(taken.frames.map { UInt($0) }[...])) }  // see above
        #expect(Self.handoffCounts().slept == before.slept)  // no call waited for an answer
        _ = sampler.collectOutstanding()
        _ = sampler.finish(endNs: stallcap_monotonic_ns())
    }
}
