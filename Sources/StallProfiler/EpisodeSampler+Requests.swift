import CStallCapture
import StallFormat

/// Pipelined requests (``EpisodeSampler/pipelines``): a call sends its request without waiting
/// (`stallcap_sample` with timeout 0) and the next call, one sample interval later, collects the answer, so a
/// sample costs the watchdog no wake of its own. The answer is the stack as of the handler, stamped then
/// (`info.timestamp_ns`): the tick after the request that found the thread running.
///
/// A request just sent is neither a sample nor a miss. At the next call an answered request is that call's sample
/// and the next request goes out at once; an unanswered one is judged as a request that timed out (a thread asleep
/// in a system call has its request cancelled and its stack read from memory; one waiting for a CPU keeps it, and
/// its run time counts towards a refusal). At the episode's end the answer is collected if it came, else the
/// request is cancelled (``collectOutstanding()``), never a miss.
extension EpisodeSampler {
    /// What looking at the outstanding request found.
    enum Poll {
        /// The answer came: this call's sample.
        case answered(SampleRecord)
        /// No answer (`stallcap_sample`'s status: pending, busy, a new request when the slot lost ours, or a
        /// failure): the call goes on as one that sent a request and got this status.
        case unanswered(stallcap_status)

        /// The status of an unanswered look; nil for an answer.
        var status: stallcap_status? {
            if case .unanswered(let status) = self { return status }
            return nil
        }
    }

    /// One call of ``request`` for the thread, its frames into ``buffer``: the status and the sample's info.
    func ask(timeoutNs: Int64) -> (stallcap_status, stallcap_sample_info) {
        var info = stallcap_sample_info()
        let status = buffer.withUnsafeMutableBufferPointer {
            request(threadID, timeoutNs, $0.baseAddress, UInt32(maxFrames), &info)
        }
        return (status, info)
    }

    /// Looks at the request an earlier call sent, at `nowNs` (the thread's CPU clock read then: `cpuNs`): its
    /// answer, with the next request sent; nil when no request is outstanding.
    func pollOutstanding(nowNs: UInt64, cpuNs: UInt64?) -> Poll? {
        guard pipelines, let sent = outstanding else { return nil }
        let (status, info) = ask(timeoutNs: 0)
        guard status == STALLCAP_OK else {
            // Still ours when pending or busy; a new one when the slot had lost ours (another thread was sampled).
            if status == STALLCAP_REQUESTED { outstanding = (nowNs, cpuNs) }
            if status != STALLCAP_PENDING && status != STALLCAP_BUSY && status != STALLCAP_REQUESTED { outstanding = nil }
            return .unanswered(status)
        }
        outstanding = nil
        let record = signalledRecord(info, requestCPU: sent.cpuNs)
        collectedRequestNs = sent.sentNs
        requestAhead(nowNs: nowNs)
        return .answered(record)
    }

    /// Sends the next request at `nowNs`, right after an answer was collected (the thread just ran): its answer is
    /// the next call's sample. A status other than a request sent leaves nothing outstanding; the next call then
    /// asks as usual (an answer at once, which only a substituted `request` gives, is dropped: this call has its
    /// sample).
    func requestAhead(nowNs: UInt64) {
        let (status, _) = ask(timeoutNs: 0)
        lastRealSampleNs = nowNs
        let sent = status == STALLCAP_REQUESTED || status == STALLCAP_PENDING || status == STALLCAP_BUSY
        outstanding = sent ? (nowNs, lastProgress?.cpuNs) : nil
    }

    /// The answer to the request still outstanding when the episode ends, as its last sample; nil when none was
    /// outstanding or it was not answered (then it is cancelled). Never a miss.
    func collectOutstanding() -> SampleRecord? {
        collectedRequestNs = nil
        guard pipelines, let sent = outstanding else { return nil }
        outstanding = nil
        let (status, info) = ask(timeoutNs: 0)
        guard status == STALLCAP_OK else {
            // Pending, or a request just sent because the slot lost ours: nothing is to come for this episode.
            stallcap_sample_cancel_thread(threadID)
            return nil
        }
        collectedRequestNs = sent.sentNs
        return signalledRecord(info, requestCPU: sent.cpuNs)
    }
}

/// When an unanswered request counts against the sampled thread (a refusal: it blocks the signal, or its handler
/// never finishes), and the thread's blocked-signal mask read when one first does.
extension EpisodeSampler {
    /// CPU time a thread runs with a request outstanding before the request counts as refused: several ticks
    /// (4 ms apart at HZ=250, 10 ms at HZ=100).
    static let answerableCPUNs: UInt64 = 25_000_000

    /// True when the thread has run `Self.answerableCPUNs` of CPU time since its request was first left
    /// unanswered (`cpuBefore`: its CPU clock before this call's wait, or when its pipelined request was sent).
    /// Only then does an unanswered request count against it (it blocks the signal): the signal comes at a tick
    /// that finds the thread running, so a thread that barely got a CPU (a loaded machine) could not have taken it,
    /// and spacing its requests out to `blockedResampleInterval` would lose a busy stall's samples.
    func unansweredLongEnough(since cpuBefore: UInt64?) -> Bool {
        let cpu = stallcap_thread_cpu_ns(threadID)
        guard cpu >= 0 else { return true }
        let since = unansweredSinceCPU ?? cpuBefore ?? UInt64(cpu)
        unansweredSinceCPU = since
        return UInt64(cpu) &- since >= Self.answerableCPUNs
    }

    /// Reads the thread's blocked signals once (a request just counted against it: does it block the signal?).
    func lookAtSignalMask() {
        guard !signalMaskLooked else { return }
        signalMaskLooked = true
        var mask: UInt64 = 0
        if stallcap_thread_blocked_signals(threadID, &mask) == 0 { signalMask = (stallcap_monotonic_ns(), mask) }
    }

    /// The record of the thread's blocked-signal mask, once per sampler, when it was read and the samples belong
    /// to an episode (not while presampling): `signal` is the capture signal.
    func takeSignalMask(signal: Int32) -> SignalMaskRecord? {
        guard !presampling, !signalMaskTaken, let signalMask else { return nil }
        signalMaskTaken = true
        return SignalMaskRecord(
            stallID: episodeID, timestampNs: signalMask.timestampNs, threadID: threadID, signal: signal,
            blockedMask: signalMask.mask)
    }
}
