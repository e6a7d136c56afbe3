/// When an episode's next sample is due, shared by ``StallDetector`` and ``SaturationDetector``.
///
/// Samples come one interval apart, measured from when each fell due, so a loop that wakes a little late does not
/// drift. Two rules keep them apart when it is late by more: a sample taken late makes the next one due no sooner
/// than half an interval later (``took(atNs:)``), and the next one is due no sooner than half an interval after the
/// last one ended (``ended(atNs:)``). A signalled sample waits for a scheduler tick, so asked for more samples than
/// ticks the next one would otherwise fall due the moment one ends, and find the thread moved on only by the
/// microseconds the watchdog took to collect the answer. A pipelined sample ends when its request is sent: the next
/// one, which collects the answer, comes half an interval later at least, a tick or more.
struct SampleSchedule {
    /// Time between two samples.
    let intervalNs: UInt64
    /// When the next sample is due (monotonic nanoseconds); 0 until the first.
    private(set) var dueNs: UInt64 = 0

    /// A schedule of one sample every `intervalNs`.
    init(intervalNs: UInt64) { self.intervalNs = intervalNs }

    /// True when a sample is due at `nowNs`.
    func isDue(atNs nowNs: UInt64) -> Bool { nowNs >= dueNs }

    /// Makes a sample due at `nowNs` (an episode begins).
    mutating func start(atNs nowNs: UInt64) { dueNs = nowNs }

    /// A sample was taken at `nowNs`: the next is due an interval after this one fell due, and no sooner than half
    /// an interval from now.
    mutating func took(atNs nowNs: UInt64) {
        dueNs = max(dueNs &+ intervalNs, nowNs &+ intervalNs / 2)
    }

    /// A sample was taken at `nowNs` with nothing due before it (a stall declared without presamples): the next is
    /// due a whole interval later.
    mutating func tookFirst(atNs nowNs: UInt64) { dueNs = nowNs &+ intervalNs }

    /// A sample ended at `endNs`: the next is due no sooner than half an interval after it.
    mutating func ended(atNs endNs: UInt64) { dueNs = max(dueNs, endNs &+ intervalNs / 2) }
}
