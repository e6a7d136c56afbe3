import CStallCapture
import StallFormat

/// Samples one thread for the length of one episode (a stall or a saturated episode, and the presamples before a
/// stall) and keeps the figures its end record needs.
///
/// A thread that made no CPU progress since the previous sample is waiting, and its stack has not changed: it
/// is not signalled again (signals wake blocked threads and interrupt their sleeps) but its previous stack is
/// recorded again, and it is re-sampled for real at most every `blockedResampleInterval`. After several
/// consecutive refusals (a thread that ran several ticks of CPU without answering: it blocks the signal, or its
/// handler never finishes) requests are spaced out the same way. The signal comes from a timer on the thread's
/// CPU clock (`stallcap_sample`, two ticks at most), so it reaches the thread only while it runs user code; a
/// thread found in a system call, or gone into one while the request waited, is sampled from its stack memory
/// (``MemoryStack``). A presampler, and a saturated episode's sampler, signal only a thread on a CPU or ready for
/// one (a sleeping thread would only make the request wait out its timeout). With ``pipelines`` a request is not
/// waited for: the next call collects its answer (EpisodeSampler+Requests.swift).
final class EpisodeSampler {
    /// The episode the samples belong to (0 while presampling, set when the stall is declared).
    var episodeID: UInt32
    let threadID: Int32
    /// True while the samples go to the presample buffer.
    var presampling: Bool
    /// True for a saturated episode's sampler: like a presampler, it signals the thread only while it is on a CPU
    /// or ready for one (the episode ends only some checks after the thread starts sleeping again).
    let signalsOnlyRunnable: Bool
    /// True when requests are pipelined (``WatchdogTiming/pipelinesSamples``): sent at one call, collected at the
    /// next. Off while another target's episode is sampled too (``pipelining(alone:)``).
    private(set) var pipelines: Bool
    /// True when the timing allows pipelining.
    private let canPipeline: Bool
    /// True while other episodes' samplers share the request slot: a request of another thread's, not answered
    /// yet, is left to it, and this call's sample is missed (counted). Taken over, it was cancelled each step by the
    /// other sampler, and under load neither thread was ever answered (0-4 samples in 600 ms under eight hogs).
    private(set) var sharesSlot = false
    private let timeoutNs: Int64
    private let resampleNs: UInt64
    /// The system call, stack and instruction pointers of the last stack read from memory.
    private var lastMemoryCall: (nr: Int32, sp: UInt64, pc: UInt64)? = nil
    let maxFrames: Int
    /// CPU progress (ns) below which the thread counts as not having run since the previous sample. Our own
    /// signal costs the thread some 10-20 µs, so the floor sits well above that.
    private let progressFloorNs: UInt64

    /// One reading of the thread's clocks, taken from the watchdog thread (no signal).
    struct Reading { var timeNs, cpuNs, waitNs: UInt64 }
    /// The time, CPU clock and run-queue wait the last sample of this episode recorded
    /// (``waitAtStack(readNs:stackNs:cpuAtStackNs:previous:)``); before its first, those read when sampling began.
    private var lastRecorded: Reading? = nil

    /// Where requests write their frames.
    var buffer: [UInt]
    /// The first and the last reading of the episode: its window (``noted(_:)``).
    var first: Reading?, last: Reading?
    /// The thread's CPU clock at the last sample and when it was read: progress is measured from there
    /// (``waited(progressNs:sinceNs:floorNs:)``).
    private(set) var lastProgress: (timeNs: UInt64, cpuNs: UInt64)? = nil
    /// When the thread was last asked for its stack (or had it read from memory): refusals space requests out
    /// from there.
    var lastRealSampleNs: UInt64 = 0
    private var haveStack = false, consecutiveMisses = 0
    /// The pipelined request outstanding: when it was sent and the thread's CPU clock then (nil when unknown); nil
    /// when none is.
    var outstanding: (sentNs: UInt64, cpuNs: UInt64?)? = nil
    /// When the request whose answer the last call collected was sent, for a pipelined answer (an earlier call's
    /// request); nil otherwise.
    var collectedRequestNs: UInt64? = nil
    /// The thread's CPU clock when the request still outstanding was first left unanswered; nil when none is.
    var unansweredSinceCPU: UInt64? = nil
    private(set) var sampleCount: UInt32 = 0
    /// Sends one sample request and waits for its answer, or with timeout 0 only sends it: `stallcap_sample`.
    /// Tests substitute answers of their own (a handler preempted before it finished, for one).
    var request: (pid_t, Int64, UnsafeMutablePointer<UInt>?, UInt32, UnsafeMutablePointer<stallcap_sample_info>?)
        -> stallcap_status = { stallcap_sample($0, $1, $2, $3, $4) }
    /// Time the whole process was stopped while this sampler watched (found by the watchdog loop).
    var pausedNs: UInt64 = 0
    private(set) var missedCount = 0
    /// The thread's run-queue wait when the last sample was taken (or when sampling began), and whether a sample
    /// was missed since: the wait of such a stretch is what cost its samples (``missedRunQueueNs``).
    private var waitAtLastSample: UInt64? = nil, missedSinceSample = false
    /// Run-queue wait over the stretches in which samples were missed, nanoseconds.
    private(set) var missedRunQueueNs: UInt64 = 0
    /// True once a request failed because the app replaced or reset the signal handler.
    private(set) var handlerLost = false
    /// The thread's blocked-signal mask (`SigBlk`) and when it was read: read once, when a request first counted
    /// against the thread, so a thread that answers costs nothing. Nil until then, or when /proc could not say.
    var signalMask: (timestampNs: UInt64, mask: UInt64)? = nil
    /// Whether the mask was read (once per sampler), and whether its record was taken (once).
    var signalMaskLooked = false, signalMaskTaken = false

    /// A sampler of `threadID` for episode `episodeID`, keeping at most `maxFrames` frames per sample.
    init(
        episodeID: UInt32, threadID: Int32, timing: WatchdogTiming, maxFrames: Int, presampling: Bool = false,
        signalsOnlyRunnable: Bool = false
    ) {
        self.episodeID = episodeID
        self.threadID = threadID
        self.presampling = presampling
        self.signalsOnlyRunnable = signalsOnlyRunnable
        (pipelines, canPipeline) = (timing.pipelinesSamples, timing.pipelinesSamples)
        timeoutNs = timing.sampleTimeoutNs
        resampleNs = timing.blockedResampleNs
        self.maxFrames = maxFrames
        progressFloorNs = max(200_000, timing.sampleIntervalNs / 20)
        buffer = [UInt](repeating: 0, count: maxFrames)
        stallcap_sample_cancel_thread(threadID)  // no answer to an earlier sampler's request is collected as this one's
        let start = read()
        waitAtLastSample = start?.waitNs
        // The first sample's wait is bounded from here, as each later one's from the sample before.
        lastRecorded = start
    }

    /// Pipelines requests when `alone` (no other episode's sampler shares the one request slot) and the timing
    /// allows it. With two threads sampled at once, pipelined requests would take each other's slot before any is
    /// answered (0-1 samples each in 600 ms): each call then waits for its answer, and a request another thread
    /// still waits for is left to it (``sharesSlot``). A request left outstanding stays the thread's own in the slot:
    /// the next waiting call collects or waits for it.
    func pipelining(alone: Bool) {
        sharesSlot = !alone
        let on = alone && canPipeline
        guard on != pipelines else { return }
        pipelines = on
        if !on { outstanding = nil }
    }

    deinit {
        // Dropped without finish(): presamples discarded, or replaced by a saturated episode. Only its own request:
        // another episode's sampler may wait for the one in the slot.
        stallcap_sample_cancel_thread(threadID)
    }

    /// A sample read from the thread's stack memory when it sleeps in a system call; nil when it does not.
    /// `call` gets the state read (running, runnable or not). Called by ``sample()``.
    private func sampleFromMemory(now: UInt64, call: inout SyscallState) -> SampleRecord? {
        guard let read = MemoryStack.readIfInSystemCall(threadID, into: &buffer, state: &call) else { return nil }
        // A request left outstanding is dropped: unanswered, its timer would fire whenever the thread next runs
        // (after the app may have reset the signal); answered before the thread went to sleep, its stack is older
        // than this one and would be collected later as the thread's current stack, out of order.
        stallcap_sample_cancel_thread(threadID)
        // The stack is the thread's as of the read's end (its state was checked again then), which may come after
        // the main queue answered: stamped then (with its clocks read then), such a sample is seen to follow the
        // answer and is dropped.
        let reading = self.read(), readNs = reading?.timeNs ?? stallcap_monotonic_ns()
        lastMemoryCall = (call.number, call.stackPointer, call.programCounter)
        (lastRealSampleNs, consecutiveMisses) = (now, 0)
        (unansweredSinceCPU, outstanding) = (nil, nil)  // asleep: its request was cancelled above
        haveStack = true
        sampleCount += 1
        lastProgress = reading.map { ($0.timeNs, $0.cpuNs) }
        if let wait = reading?.waitNs { took(waitNs: wait) }
        if let reading { lastRecorded = reading }  // stamped at its own time (readNs)
        return SampleRecord(
            stallID: episodeID, timestampNs: readNs, threadCPUNs: reading?.cpuNs ?? 0, runQueueNs: reading?.waitNs ?? 0,
            flags: SampleFlags.fromStackMemory.union(read.truncated ? .truncated : [])
                .union(read.scanned ? .scannedFrames : []).union(read.stop),
            frames: buffer[0..<read.count].map { UInt64($0) })
    }

    /// Takes one sample; nil when it was missed (or skipped), or when a pipelined request was just sent (neither a
    /// sample nor a miss: a later call collects its answer).
    func sample() -> SampleRecord? {
        collectedRequestNs = nil
        let reading = clocks()
        let now = reading?.timeNs ?? stallcap_monotonic_ns()
        let idle = reading.map { now in
            lastProgress.map {
                Self.waited(progressNs: now.cpuNs &- $0.cpuNs, sinceNs: now.timeNs &- $0.timeNs, floorNs: progressFloorNs)
            } ?? false
        } ?? false
        // A thread that moved to another system call (or another place) without measurable CPU is read again.
        let moved = idle && haveStack && lastMemoryCall.map { last in
            let state = SyscallState(thread: threadID)
            return state.kind == .inCall
                && (state.number, state.stackPointer, state.programCounter) != (last.nr, last.sp, last.pc)
        } ?? false
        let spacedOut = consecutiveMisses >= 3 || (haveStack && idle && !moved)
        let resting = spacedOut && now &- lastRealSampleNs < resampleNs
        // A pipelined request sent by an earlier call: its answer, when it came, is this call's sample (a refusing
        // thread's is looked at only when its requests are due again).
        let polled = consecutiveMisses >= 3 && resting ? nil : pollOutstanding(nowNs: now, cpuNs: reading?.cpuNs)
        if case .answered(let record) = polled { return record }
        // Unanswered, and the thread has not run since: asleep in a system call, its stack is read from memory and
        // its request cancelled (a timer left armed would fire whenever it next runs, perhaps after the app reset
        // the signal).
        var call = SyscallState(stallcap_syscall_state())
        if idle, polled?.status == STALLCAP_PENDING, let record = sampleFromMemory(now: now, call: &call) {
            return record
        }
        if resting {
            guard consecutiveMisses < 3, haveStack, let reading = read() else { return miss() }
            sampleCount += 1
            lastProgress = (reading.timeNs, reading.cpuNs)
            took(waitNs: reading.waitNs)
            lastRecorded = Reading(timeNs: now, cpuNs: reading.cpuNs, waitNs: reading.waitNs)
            // On a run queue, not asleep: it waits for a CPU (its stack cannot have changed either way), a wait
            // schedstat has not credited yet. Readers of an unfinished episode count it as such.
            let waiting = MainQueueThreads.isRunnable(threadID)
            return SampleRecord(
                stallID: episodeID, timestampNs: now, threadCPUNs: reading.cpuNs, runQueueNs: reading.waitNs,
                flags: waiting ? [.repeated, .waitingForCPU] : .repeated, frames: [])
        }
        // A thread in a system call is never signalled (a signal would cut a sleep short, or make the call fail
        // with EINTR): its stack is read from its memory instead. /proc/<tid>/syscall says "running" for the
        // kernel's TASK_RUNNING (on a CPU or ready for one, state R) and names a call only for a sleeping thread: a
        // thread whose CPU clock moved since the reading above is on a CPU, and that read is left out.
        if let reading, stallcap_thread_cpu_ns(threadID) > Int64(clamping: reading.cpuNs) {
            call.kind = .running
        } else if let record = sampleFromMemory(now: now, call: &call) { return record }
        if (presampling || signalsOnlyRunnable) && call.kind != .running {
            // It sleeps outside a system call: no request before the stall is declared or during a saturated
            // episode, also after CPU progress (the thread ran, then went to sleep since the last sample). Not a
            // missed sample.
            return nil
        }
        if sharesSlot && polled == nil && stallcap_sample_slot_taken(threadID) == 1 {
            // Another thread's request has the slot, so none of this thread's is outstanding: the CPU it runs
            // meanwhile is not a refusal (counted, a busy loop that waited its turns looked as if it blocked the
            // signal, and was sampled once a second: 1 sample in 600 ms in a loaded suite).
            unansweredSinceCPU = nil
            return miss()
        }
        lastRealSampleNs = now
        // An outstanding request already looked at above is not asked again: its status is this call's.
        let (status, info) = polled?.status.map { ($0, stallcap_sample_info()) }
            ?? ask(timeoutNs: pipelines ? 0 : timeoutNs)
        if status == STALLCAP_REQUESTED {
            outstanding = (now, reading?.cpuNs)
            return nil
        }
        if status == STALLCAP_TIMEOUT || status == STALLCAP_PENDING {
            // Unanswered for two ticks (or since an earlier call's request): it entered a system call since the
            // check above (a waiting request was cancelled), or waits for a CPU (the request stays armed: a later
            // call collects the answer), or blocks the signal. In a call, its stack is read from memory; if it left
            // the call again before its memory could be read, the sample is missed (and counted).
            if status == STALLCAP_TIMEOUT, let record = sampleFromMemory(now: now, call: &call) { return record }
            if unansweredLongEnough(since: outstanding?.cpuNs ?? reading?.cpuNs) {
                consecutiveMisses += 1
                lookAtSignalMask()
                // Shared, the slot is not kept for an answer that may never come: a thread that ran long enough
                // without answering blocks the signal (one held it for its whole episode, and the main thread's
                // concurrent busy stall got 0-2 samples of 87). A thread that waits for a CPU keeps it: cancelled
                // after every two ticks, two busy loops in a loaded suite got 0-1 samples each.
                if sharesSlot { stallcap_sample_cancel_thread(threadID) }
            }
            return miss()
        }
        if status == STALLCAP_BUSY {
            // A handler has the request and has not finished: its thread was preempted inside it (a loaded machine;
            // a later call collects the answer). It counts against the thread only after the thread ran long enough
            // to finish it: counted at once, three in a row once spaced out a 600 ms busy stall under eight hogs.
            if pipelines, outstanding == nil { outstanding = (now, reading?.cpuNs) }
            if unansweredLongEnough(since: outstanding?.cpuNs ?? reading?.cpuNs) { consecutiveMisses += 1 }
            return miss()
        }
        outstanding = nil
        guard status == STALLCAP_OK else {
            if status == STALLCAP_NOT_INSTALLED { handlerLost = true }
            consecutiveMisses += 1
            return miss()
        }
        let record = signalledRecord(info)
        if pipelines { requestAhead(nowNs: now) }
        return record
    }

    /// The sample of an answer the handler gave, `info` and the frames in ``buffer``: the stack as of the handler,
    /// the thread's CPU clock as of then (`requestCPU`: the clock before a pipelined request was sent, when known),
    /// its run-queue wait read now, less what cannot have fallen before the stack (pipelined, the read comes up to
    /// an interval after it: ``waitAtStack(readNs:stackNs:cpuAtStackNs:previous:)``).
    func signalledRecord(_ info: stallcap_sample_info, requestCPU: UInt64? = nil) -> SampleRecord {
        (consecutiveMisses, unansweredSinceCPU) = (0, nil)
        haveStack = true
        sampleCount += 1
        // The CPU clock was read when the answer was collected, some time after the handler: the progress since is
        // measured from that reading, and the sample gets the clock as it was at the handler.
        let cpuRead = info.thread_cpu_ns > 0 ? info.thread_cpu_ns : lastProgress?.cpuNs ?? 0  // 0: the thread is gone
        let cpuAtStack = Self.cpuAtHandler(
            readNs: cpuRead, readAtNs: info.collected_ns, handlerNs: info.timestamp_ns, previousNs: lastProgress?.cpuNs,
            requestNs: requestCPU)
        lastProgress = (info.collected_ns, cpuRead)
        var flags: SampleFlags = []
        if info.flags & UInt32(STALLCAP_FLAG_FRAME_POINTERS) != 0 { flags.insert(.framePointers) }
        if info.flags & UInt32(STALLCAP_FLAG_TRUNCATED) != 0 { flags.insert(.truncated) }
        if info.flags & UInt32(STALLCAP_FLAG_QUEUE_CODE_KNOWN) != 0 { flags.insert(.queueCodeKnown) }
        if info.flags & UInt32(STALLCAP_FLAG_STOPPED_NO_INFO) != 0 { flags.insert(.walkStoppedNoUnwindInfo) }
        if info.flags & UInt32(STALLCAP_FLAG_STOPPED_UNUSABLE) != 0 { flags.insert(.walkStoppedUnusable) }
        // The handler ran when the thread got a CPU, which is when schedstat credits the wait before it: read the
        // wait again now, so that it matches the handler's time and CPU clock (the reading before the signal
        // missed that wait, and the next sample would have counted it against its own short interval).
        let waitNow = noted(Reading(timeNs: info.collected_ns, cpuNs: cpuRead, waitNs: wait())).waitNs
        took(waitNs: waitNow)
        let waitAtStack = Self.waitAtStack(
            readNs: waitNow, stackNs: info.timestamp_ns, cpuAtStackNs: cpuAtStack, previous: lastRecorded)
        lastRecorded = Reading(timeNs: info.timestamp_ns, cpuNs: cpuAtStack, waitNs: waitAtStack)
        return SampleRecord(
            stallID: episodeID, timestampNs: info.timestamp_ns, threadCPUNs: cpuAtStack,
            runQueueNs: waitAtStack, flags: flags, frames: buffer[0..<Int(info.frame_count)].map { UInt64($0) },
            turn: info.turn)
    }

    /// Counts a missed sample. Returns nil: no record.
    private func miss() -> SampleRecord? {
        missedCount += 1
        missedSinceSample = true
        return nil
    }

    /// Notes that a sample was taken with the thread's run-queue wait at `waitNs`: the wait since the last one
    /// counts as missed-sample wait when samples were missed in between.
    private func took(waitNs: UInt64) {
        if missedSinceSample, let last = waitAtLastSample { missedRunQueueNs &+= waitNs &- min(last, waitNs) }
        waitAtLastSample = waitNs
        missedSinceSample = false
    }

    /// Takes back the count of the last sample: it was taken after the stall had already ended, or a full
    /// presample buffer dropped its oldest.
    func retractLastSample() { sampleCount -= min(sampleCount, 1) }

    /// The end record. The episode is busy when the thread ran or waited for a CPU for at least half of the time it
    /// was watched (see ``StallState/classify(activeRatio:)``).
    func finish(endNs: UInt64) -> StallEndRecord {
        stallcap_sample_cancel_thread(threadID)
        outstanding = nil
        if let wait = read()?.waitNs, missedSinceSample { took(waitNs: wait) }
        let start = first ?? Reading(timeNs: endNs, cpuNs: 0, waitNs: 0)
        let end = last ?? start
        // The process was stopped for `pausedNs` of the window: the thread could neither run nor wait for a CPU.
        let measured = (end.timeNs &- start.timeNs) &- min(pausedNs, end.timeNs &- start.timeNs)
        let (cpu, wait) = Self.activity(
            cpuNs: end.cpuNs &- min(start.cpuNs, end.cpuNs), waitNs: end.waitNs &- min(start.waitNs, end.waitNs),
            measuredNs: measured)
        let active = measured > 0 ? Double(cpu + wait) / Double(measured) : 0
        return StallEndRecord(
            stallID: episodeID, endNs: endNs, cpuNs: cpu, runQueueNs: wait, measuredNs: measured,
            state: StallState.classify(activeRatio: active), sampleCount: sampleCount,
            missedCount: UInt32(clamping: missedCount), pausedNs: pausedNs,
            missedRunQueueNs: min(missedRunQueueNs, wait))
    }
}
