/// Finds the kernel's scheduler tick from when the capture signal arrived, without asking the system: no interface
/// gives HZ to an unprivileged process (`sysconf(_SC_CLK_TCK)` is `USER_HZ`, always 100, the unit of /proc's
/// times; the kernel's configuration file is often absent).
///
/// The signal comes from a timer on the thread's CPU clock, and the kernel checks such timers only at a scheduler
/// tick that finds the thread running (cputimer.c): an arrival is a tick plus the few microseconds of the signal's
/// delivery, or later when that tick also preempted the thread (it gets the signal when it runs again). The
/// kernel keeps every CPU's tick on whole multiples of the tick period of the monotonic clock (unless booted with
/// `skew_tick=1`, which shifts each CPU's by a fixed amount), so the arrivals' times modulo the tick gather in one
/// narrow window; modulo a longer period they spread over its ticks. An arrival counts only when its request
/// followed the thread's previous one within ``backToBackNs`` (the sampler asked as fast as it could): requests
/// on the sampler's own schedule of 10 ms would land every arrival on the same tick of a 10 ms period, and any
/// tick that divides 10 ms would look like 10 ms.
///
/// Pure: the caller gives times (monotonic nanoseconds); tests give made-up ones.
struct TickMeter {
    /// The ticks that can be found, longest first: `TICK_NSEC` of `CONFIG_HZ` 100, 250, 300 and 1000, the choices
    /// on x86_64 and arm64. On a kernel with another HZ the longest of these that divides its tick is found (1 ms
    /// at worst), or none.
    static let candidatesNs: [UInt64] = [10_000_000, 4_000_000, 3_333_333, 1_000_000]
    /// A request made at most this long after the thread's previous one ended is back to back.
    static let backToBackNs: UInt64 = 2_000_000
    /// Arrivals kept: the latest ones.
    static let capacity = 128
    /// Arrivals needed before a tick is named.
    static let minimumArrivals = 16
    /// Share of the arrivals that must fall within one window of an eighth of a tick, modulo the tick, for it to be
    /// named. Measured on a loaded 2-CPU machine at HZ=250 (load 6): 73-98 % of the arrivals within 0.5 ms
    /// modulo 4 ms, about 20 % modulo 10 ms, 2 % modulo 3.333 ms. At HZ=1000, arrivals two ticks apart put
    /// 50 % in one window modulo 4 ms.
    static let agreeingShare = 0.6

    /// The latest arrivals of back-to-back requests, a ring of ``capacity``.
    private var arrivals: [UInt64] = []
    private var next = 0
    /// The last request: its thread and when it ended.
    private var last: (threadID: Int32, endedNs: UInt64)? = nil

    /// A sample request to thread `threadID` was made at `requestedNs` (the watchdog's clock just before it asked)
    /// and ended at `endedNs`; `arrivedNs` is when the signal's handler ran, nil when the sample was not the
    /// signal's (read from memory, repeated, missed). An answer older than the request (a request left
    /// unanswered earlier, collected now) is not counted.
    mutating func requested(threadID: Int32, requestedNs: UInt64, endedNs: UInt64, arrivedNs: UInt64?) {
        defer { last = (threadID, endedNs) }
        guard let arrivedNs, arrivedNs >= requestedNs, let last, last.threadID == threadID,
            requestedNs >= last.endedNs, requestedNs - last.endedNs <= Self.backToBackNs
        else { return }
        if arrivals.count < Self.capacity {
            arrivals.append(arrivedNs)
        } else {
            arrivals[next] = arrivedNs
            next = (next + 1) % Self.capacity
        }
    }

    /// The tick, nanoseconds: the longest candidate modulo which at least ``agreeingShare`` of the kept arrivals
    /// fall within one window of an eighth of it; nil with fewer than ``minimumArrivals`` or when none fits
    /// (arrivals scattered by a loaded machine, or a tick not among the candidates and no multiple of one).
    var tickNs: UInt64? {
        guard arrivals.count >= Self.minimumArrivals else { return nil }
        return Self.candidatesNs.first { tick in
            Double(Self.mostInOneWindow(arrivals.map { $0 % tick }.sorted(), period: tick))
                >= Self.agreeingShare * Double(arrivals.count)
        }
    }

    /// The most of `phases` (sorted, each below `period`) that fit in one window of an eighth of `period`, the
    /// window wrapping around the period's end.
    static func mostInOneWindow(_ phases: [UInt64], period: UInt64) -> Int {
        let width = period / 8
        let unrolled = phases + phases.map { $0 + period }
        var best = 0, end = 0
        for start in phases.indices {
            end = max(end, start)
            while end < unrolled.count && unrolled[end] - phases[start] <= width { end += 1 }
            best = max(best, end - start)
        }
        return best
    }
}
