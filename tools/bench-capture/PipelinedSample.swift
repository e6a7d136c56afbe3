// The watchdog's pipelined sample (sample intervals of two ticks or more, EpisodeSampler+Requests.swift): each
// wake collects the answer to the request the previous wake sent, and sends the next, with stallcap_sample and
// timeout 0. Nothing waits for an answer: the sample costs the watchdog the CPU of those two calls, within the
// wake it makes anyway to take the sample.
import CStallCapture
import Foundation

/// The pipelined sampler's state between its wakes, and its own figures.
struct PipelinedSampler {
    /// When the outstanding request was sent (CLOCK_MONOTONIC ns); nil when none is.
    var sentNs: UInt64? = nil
    /// Wakes that found the request still unanswered (they collect it at a later wake).
    var unanswered = 0
    /// Per answered request: the handler's finish after the request (µs), its round trip.
    var handlerDone: [Double] = []

    /// The interval between the bench's pipelined wakes: the default sample interval (10 ms), at least two ticks,
    /// as the watchdog pipelines only then (``WatchdogTiming/pipelinesSamples``).
    static var intervalNs: UInt64 { max(10_000_000, 2 * stallcap_tick_ns()) }

    /// One wake's sample of `spinner`: the same look at the thread as `realSample` (its CPU clock, and /proc when it
    /// did not move), then the answer to the previous wake's request collected and the next request sent. Figures
    /// of answered requests only, as for the waiting call: the watchdog's CPU for this wake's calls, the round trip
    /// from the request to the handler's finish (`info.timestamp_ns + unwind_ns`), and the window from the request
    /// to that finish, whose longest gap is the stop.
    mutating func wake(_ spinner: GapSpinner, _ frames: inout [UInt], _ figures: inout StopFigures) {
        let c0 = ownThreadCPUNs()
        var state = stallcap_syscall_state()
        let cpu = stallcap_thread_cpu_ns(spinner.tid)
        let asleep = stallcap_thread_cpu_ns(spinner.tid) == cpu
            && stallcap_read_syscall(spinner.tid, &state) == STALLCAP_SYSCALL_IN_CALL
        var info = stallcap_sample_info()
        var collected = STALLCAP_REQUESTED
        if let sentNs, !asleep {
            collected = frames.withUnsafeMutableBufferPointer { stallcap_sample(spinner.tid, 0, $0.baseAddress, 256, &info) }
            if collected == STALLCAP_PENDING || collected == STALLCAP_BUSY {
                unanswered += 1
                return
            }
            self.sentNs = nil
            if collected == STALLCAP_OK {
                let done = info.timestamp_ns + info.unwind_ns
                figures.windows.append((sentNs, done))
                figures.roundTrips.append(Double(done &- sentNs) / 1000)
                figures.unwinds.append(Double(info.unwind_ns) / 1000)
                figures.depth = Int(info.frame_count)
            }
        }
        if asleep {
            stallcap_sample_cancel()  // the watchdog reads a sleeping thread's stack from memory
            sentNs = nil
            figures.missed += 1
            return
        }
        var sendInfo = stallcap_sample_info()
        let now = stallcap_monotonic_ns()
        let sent = frames.withUnsafeMutableBufferPointer { stallcap_sample(spinner.tid, 0, $0.baseAddress, 256, &sendInfo) }
        if sent == STALLCAP_REQUESTED { sentNs = now }
        let c1 = ownThreadCPUNs()
        if collected == STALLCAP_OK {
            figures.samplerCPU.append(Double(c1 &- c0) / 1000)
        } else if collected != STALLCAP_REQUESTED {
            figures.missed += 1
        }
    }

    /// Ends the pipeline: the last request is cancelled (the waiting calls that follow start afresh).
    mutating func end() {
        stallcap_sample_cancel()
        sentNs = nil
    }
}
