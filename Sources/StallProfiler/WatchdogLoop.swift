import CStallCapture
import Dispatch
import StallFormat
#if canImport(Glibc)
import Glibc
#endif

/// The body of the watchdog thread: steps the ``StallDetector``, sends pings, drives the ``StallSampler`` and
/// flushes the capture file. Everything here runs on that one thread.
final class WatchdogLoop {
    private let configuration: Configuration
    private let writer: CaptureWriter
    private let shared: WatchdogShared
    private var detector: StallDetector
    private var sampler: StallSampler? = nil
    private let blockedProbe: BlockedOnProbe
    private var mainQueueThreads = MainQueueThreads()
    private var imageGeneration: UInt64 = 0
    /// Paths of the images written so far.
    private var knownImagePaths = Set<String>()
    private var writeFailed = false
    private var warnedHandlerLost = false

    typealias Configuration = StallWatchdog.Configuration

    init(configuration: Configuration, writer: CaptureWriter, shared: WatchdogShared) {
        self.configuration = configuration
        self.writer = writer
        self.shared = shared
        blockedProbe = BlockedOnProbe(configuration: configuration)  // checks the glibc mutex layout, once
        detector = StallDetector(
            thresholdNs: UInt64(configuration.threshold.nanoseconds),
            sampleIntervalNs: UInt64(configuration.sampleInterval.nanoseconds))
    }

    /// Starts the thread; the thread keeps the loop alive until it ends.
    func startThread() throws -> pthread_t {
        let context = Unmanaged.passRetained(self).toOpaque()
        var handle = pthread_t()
        let result = pthread_create(&handle, nil, { context in
            let loop = Unmanaged<WatchdogLoop>.fromOpaque(context!).takeRetainedValue()
            // The sampling signal is deliberately not blocked here: threads this one causes to be created (the
            // Dispatch workers that drain the main queue after `dispatchMain()`) inherit its signal mask.
            stallcap_name_thread("stallprof-wd")
            loop.run()
            return nil
        }, context)
        guard result == 0 else {
            Unmanaged<WatchdogLoop>.fromOpaque(context).release()
            throw StallWatchdogError.system("cannot start the watchdog thread: \(String(cString: strerror(result)))")
        }
        return handle
    }

    private func run() {
        let start = stallcap_monotonic_ns()
        writer.append(.process(ProcessRecord(
            pid: getpid(), startMonotonicNs: start, startWallNs: stallcap_realtime_ns(),
            thresholdNs: UInt64(configuration.threshold.nanoseconds),
            sampleIntervalNs: UInt64(configuration.sampleInterval.nanoseconds),
            executable: (try? String(contentsOfSymlink: "/proc/self/exe")) ?? CommandLine.arguments.first ?? "")))
        appendImagesIfChanged(force: true)
        flush()
        var lastSeenPing: UInt64 = 0
        while !shared.stopRequested.load(ordering: .acquiring) {
            let now = stallcap_monotonic_ns()
            var answer: StallDetector.Answer? = nil
            let answered = shared.answeredPing.load(ordering: .acquiring)
            if answered != lastSeenPing {
                lastSeenPing = answered
                mainQueueThreads.answered(
                    by: shared.answeredThread.load(ordering: .relaxed), cpuNs: shared.answeredCPU.load(ordering: .relaxed))
                answer = .init(
                    pingID: answered, atNs: shared.answeredAt.load(ordering: .relaxed),
                    threadID: shared.answeredThread.load(ordering: .relaxed))
            }
            for action in detector.step(nowNs: now, answer: answer) { perform(action) }
            flush()
            let wake = detector.nextWakeNs(nowNs: stallcap_monotonic_ns())
            let now2 = stallcap_monotonic_ns()
            if wake > now2 { _ = shared.wakeup.wait(timeout: .now() + .nanoseconds(Int(wake - now2))) }
        }
        writer.append(.close(timestampNs: stallcap_monotonic_ns()))
        flush()
        try? writer.close()
    }

    private func perform(_ action: StallDetector.Action) {
        switch action {
        case .sendPing(let id):
            let shared = self.shared
            configuration.post { shared.answer(ping: id) }
        case .beginStall(let stallID, let startNs, let latestThread):
            shared.stalls.add(1, ordering: .relaxed)
            let threadID = mainQueueThreads.threadToSample(latest: latestThread)
            let detected = stallcap_monotonic_ns()
            writer.append(.stallBegin(StallBeginRecord(
                stallID: stallID, startNs: startNs, detectedNs: detected, threadID: threadID)))
            // Libraries loaded since the last look (perhaps what the main thread is doing now), found without the
            // loader's lock, so that they can be resolved even if the process dies during the stall.
            for image in MappedImages.unknown(excluding: knownImagePaths) {
                knownImagePaths.insert(image.path)
                writer.append(.image(image))
            }
            sampler = StallSampler(stallID: stallID, threadID: threadID, configuration: configuration)
        case .sample:
            guard let sampler else { return }
            let before = sampler.missedCount
            let answeredBefore = shared.answeredPing.load(ordering: .acquiring)
            if let record = sampler.sample() {
                // The main queue may have answered while the sample was taken: a sample from after the stall's
                // end does not belong to it.
                let answeredAfter = shared.answeredPing.load(ordering: .acquiring) != answeredBefore
                if answeredAfter && shared.answeredAt.load(ordering: .relaxed) < record.timestampNs {
                    sampler.retractLastSample()
                } else {
                    writer.append(.sample(record))
                    shared.samples.add(1, ordering: .relaxed)
                    // No CPU progress since the previous sample: the thread waits. Find on what, once per stall.
                    if record.flags.contains(.repeated),
                        let blocked = blockedProbe.probeOnce(stallID: sampler.stallID, threadID: sampler.threadID)
                    {
                        writer.append(.blockedOn(blocked))
                    }
                }
            }
            shared.missed.add(sampler.missedCount - before, ordering: .relaxed)
            if sampler.handlerLost && !warnedHandlerLost {
                warnedHandlerLost = true
                report("the app replaced or reset the handler of signal \(configuration.signal); stalls are detected but no longer sampled")
            }
        case .endStall(_, let endNs):
            if let sampler { writer.append(.stallEnd(sampler.finish(endNs: endNs))) }
            sampler = nil
            appendImagesIfChanged(force: false)
        case .noRunLoop:
            break  // Nothing services the watched queue yet: there is no thread to sample and no stall to report.
        }
    }

    /// Writes the image map at start, and again after a stall when libraries were loaded since.
    private func appendImagesIfChanged(force: Bool) {
        guard force || stallcap_image_generation() != imageGeneration else { return }
        let (images, generation) = ImageMap.current()
        imageGeneration = generation
        for image in images {
            knownImagePaths.insert(image.path)
            // /proc/self/maps names files by their real path (/usr/lib/..., not /lib/...).
            if let real = realpath(image.path, nil) {
                knownImagePaths.insert(String(cString: real))
                free(real)
            }
            writer.append(.image(image))
        }
    }

    private func flush() {
        guard writer.pendingByteCount > 0 else { return }
        guard !writeFailed else { return }
        do { try writer.flush() } catch {
            // The host app comes first: report once, keep running, stop writing.
            writeFailed = true
            report("\(error); no further stalls are recorded")
        }
    }

    /// Tells the developer about a problem, once per kind, on standard error: the host app keeps running.
    private func report(_ message: String) {
        let line = "stallprof: \(message)\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
    }
}

extension String {
    /// The target of a symbolic link.
    init(contentsOfSymlink path: String) throws {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink(path, &buffer, buffer.count - 1)
        guard length > 0 else { throw StallWatchdogError.system("readlink \(path) failed") }
        self = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
