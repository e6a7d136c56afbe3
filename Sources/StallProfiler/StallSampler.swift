import CStallCapture
import StallFormat

/// Samples one stalled thread for the length of one stall and keeps the figures its end record needs.
///
/// A thread that made no CPU progress since the previous sample is waiting, and its stack has not changed: it
/// is not signalled again (signals wake blocked threads and interrupt their sleeps) but its previous stack is
/// recorded again, and it is re-sampled for real at most every `blockedResampleInterval`. After several
/// consecutive timeouts (a thread that blocks the signal) requests are spaced out the same way.
final class StallSampler {
    let stallID: UInt32
    let threadID: Int32
    private let timeoutNs: Int64
    private let resampleNs: UInt64
    private let maxFrames: Int
    /// CPU progress (ns) below which the thread counts as not having run since the previous sample. Our own
    /// signal costs the thread some 10-20 µs, so the floor sits well above that.
    private let progressFloorNs: UInt64

    private var buffer: [UInt] = []
    private var firstCPU: UInt64?, firstTime: UInt64 = 0
    private var lastCPU: UInt64 = 0, lastTime: UInt64 = 0
    private var lastSampleCPU: UInt64? = nil
    private var lastRealSampleNs: UInt64 = 0
    private var haveStack = false
    private var consecutiveMisses = 0
    private(set) var sampleCount: UInt32 = 0
    private(set) var missedCount = 0

    init(stallID: UInt32, threadID: Int32, configuration: StallWatchdog.Configuration, nowNs: UInt64) {
        self.stallID = stallID
        self.threadID = threadID
        timeoutNs = configuration.effectiveSampleTimeoutNs
        resampleNs = UInt64(configuration.blockedResampleInterval.nanoseconds)
        maxFrames = configuration.maxFrames
        let interval = UInt64(configuration.sampleInterval.nanoseconds)
        progressFloorNs = max(200_000, interval / 20)
        buffer = [UInt](repeating: 0, count: maxFrames)
        readCPU(nowNs: nowNs)
    }

    /// Reads the thread's CPU clock from the watchdog thread (no signal).
    @discardableResult
    private func readCPU(nowNs: UInt64) -> UInt64? {
        let cpu = stallcap_thread_cpu_ns(threadID)
        guard cpu >= 0 else { return nil }
        if firstCPU == nil {
            firstCPU = UInt64(cpu)
            firstTime = nowNs
        }
        lastCPU = UInt64(cpu)
        lastTime = nowNs
        return UInt64(cpu)
    }

    /// Takes one sample; nil when it was missed.
    func sample(nowNs: UInt64) -> SampleRecord? {
        let cpu = readCPU(nowNs: nowNs)
        let idle = cpu != nil && lastSampleCPU != nil && cpu! &- lastSampleCPU! < progressFloorNs
        let spacedOut = consecutiveMisses >= 3 || (haveStack && idle)
        if spacedOut && nowNs &- lastRealSampleNs < resampleNs {
            if consecutiveMisses >= 3 || !haveStack {
                missedCount += 1
                return nil
            }
            sampleCount += 1
            lastSampleCPU = cpu
            return SampleRecord(stallID: stallID, timestampNs: nowNs, threadCPUNs: cpu ?? 0, flags: .repeated, frames: [])
        }
        lastRealSampleNs = nowNs
        var info = stallcap_sample_info()
        let status = buffer.withUnsafeMutableBufferPointer {
            stallcap_sample(threadID, timeoutNs, $0.baseAddress, UInt32(maxFrames), &info)
        }
        guard status == STALLCAP_OK else {
            missedCount += 1
            consecutiveMisses += 1
            return nil
        }
        consecutiveMisses = 0
        haveStack = true
        sampleCount += 1
        lastSampleCPU = info.thread_cpu_ns
        var flags: SampleFlags = []
        if info.flags & UInt32(STALLCAP_FLAG_STEP_UNWIND) != 0 { flags.insert(.stepUnwind) }
        if info.flags & UInt32(STALLCAP_FLAG_TRUNCATED) != 0 { flags.insert(.truncated) }
        let frames = buffer[0..<Int(info.frame_count)].map { UInt64($0) }
        return SampleRecord(
            stallID: stallID, timestampNs: info.timestamp_ns, threadCPUNs: info.thread_cpu_ns, flags: flags,
            frames: frames)
    }

    /// The end record, classifying the stall from the CPU the thread used while it was watched.
    func finish(endNs: UInt64) -> StallEndRecord {
        readCPU(nowNs: stallcap_monotonic_ns())
        let cpu = lastCPU &- (firstCPU ?? lastCPU)
        let measured = lastTime &- firstTime
        let ratio = measured > 0 ? Double(cpu) / Double(measured) : 0
        return StallEndRecord(
            stallID: stallID, endNs: endNs, cpuNs: cpu, measuredNs: measured,
            state: StallState.classify(cpuRatio: ratio), sampleCount: sampleCount, missedCount: UInt32(missedCount))
    }
}
