import CStallCapture
import StallFormat

/// When an unanswered request counts against the sampled thread (a refusal: it blocks the signal, or its handler
/// never finishes), and the thread's blocked-signal mask read when one first does.
extension EpisodeSampler {
    /// CPU time a thread runs with a request outstanding before the request counts as refused: several ticks
    /// (4 ms apart at HZ=250, 10 ms at HZ=100).
    static let answerableCPUNs: UInt64 = 25_000_000

    /// True when the thread has run `Self.answerableCPUNs` of CPU time since its request was first left
    /// unanswered (`cpuBefore`: its CPU clock before this call's wait). Only then does an unanswered request count
    /// against it (it blocks the signal): the signal comes at a tick that finds the thread running, so a thread
    /// that barely got a CPU (a loaded machine) could not have taken it, and spacing its requests out to
    /// `blockedResampleInterval` would lose a busy stall's samples.
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
