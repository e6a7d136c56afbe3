import CStallCapture
import Glibc
import StallFormat

/// The capture file as the watchdog thread writes it: the records, the image map and the libraries loaded since,
/// the app's markers, flushes that outlive a full disk, and the problems told to the developer (once per kind, on
/// standard error: the host app keeps running). Used on the watchdog thread only.
final class CaptureOutput {
    let writer: CaptureWriter
    /// Counts the samples the writer dropped, for ``StallWatchdog/statistics``.
    private let shared: WatchdogShared
    /// The loader's image generation at the last look.
    private var imageGeneration: UInt64 = 0
    /// Paths of the images written so far.
    private var knownImagePaths = Set<String>()
    /// When writing the capture last failed, nil when the last write succeeded.
    private var writeFailedAtNs: UInt64? = nil
    /// Kinds of problems already told (``reportOnce(_:_:)``).
    private var reportedKinds = Set<String>()
    /// The capture descriptor a forked child would close (stallcap_track_capture).
    private var trackedCapture: Int32? = nil

    /// Output to `writer`; `shared` counts what it drops.
    init(writer: CaptureWriter, shared: WatchdogShared) {
        self.writer = writer
        self.shared = shared
    }

    /// True when an episode began or ended since the last look for libraries loaded meanwhile
    /// (``appendUnknownImagesIfDue()``).
    var unknownImagesDue = false

    /// Libraries loaded since the last look (perhaps what the main thread is doing now), found without the
    /// loader's lock, so that they can be resolved even if the process dies during the episode. Looked for once
    /// per step of the loop that began or ended an episode: at a stall's begin, before its presamples are flushed
    /// (a saturated episode that the stall ends is that same look, not a second one); for a saturated episode's
    /// begin or end, after the step's samples.
    func appendUnknownImagesIfDue() {
        guard unknownImagesDue else { return }
        unknownImagesDue = false
        for image in MappedImages.unknown(excluding: knownImagePaths) {
            knownImagePaths.insert(image.path)
            writer.append(.image(image))
        }
    }

    /// Writes the image map at start, and again after a stall when libraries were loaded since.
    func appendImagesIfChanged(force: Bool) {
        guard force || stallcap_image_generation() != imageGeneration else { return }
        let (images, generation) = ImageMap.current()
        // Libraries came or went since the last look: the handler's cached unwind rules may describe old code.
        if imageGeneration != 0 && generation != imageGeneration { stallcap_unwind_forget_images() }
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

    /// Moves the app's markers from the rings into the capture (on the watchdog thread, at every step), then, for
    /// each thread that lost markers meanwhile, a `dropped` marker record with how many and whose (thread 0: the
    /// threads without a ring of their own). Events older than `sinceNs` (published after an earlier watchdog's
    /// last drain) are not this capture's.
    func drainMarkers(sinceNs: UInt64) {
        let rings = ThreadMarkerRings.shared
        var losses: [(tid: Int32, count: UInt64)] = []
        rings.drain(
            { record in if record.timestampNs >= sinceNs { writer.append(.marker(record)) } },
            lost: { tid, count in losses.append((tid, count)) },
            isAlive: { stallcap_thread_cpu_ns($0) >= 0 })
        let shared = rings.overflow.dropped.exchange(0, ordering: .relaxed)
        if shared > 0 { losses.append((0, shared)) }
        guard !losses.isEmpty else { return }
        let now = stallcap_monotonic_ns()
        for (tid, count) in losses {
            writer.append(.marker(MarkerRecord(kind: .dropped, spanID: count, threadID: tid, timestampNs: now, name: "")))
        }
    }

    /// Writes what is pending. After a failure (disk full, file size limit) the app keeps running: the writer
    /// keeps at most its pending limit (then drops and counts samples), and writing is tried again once a second
    /// (`force`: now, as when stopping).
    func flush(force: Bool = false) {
        guard writer.pendingByteCount > 0 else { return }
        let now = stallcap_monotonic_ns()
        if let failedAt = writeFailedAtNs, !force, now &- failedAt < 1_000_000_000 { return }
        do {
            try writer.flush()
            if writeFailedAtNs != nil {
                reportOnce("capture-writable",
                    "the capture file accepts writes again; \(writer.droppedSampleCount) samples were dropped")
            }
            writeFailedAtNs = nil
        } catch {
            if writeFailedAtNs == nil {
                reportOnce("capture-unwritable", "\(error); samples are kept in memory (up to 4 MiB), then dropped and "
                    + "counted, until it can be written again")
            }
            writeFailedAtNs = now
        }
        shared.dropped.store(Int(writer.droppedSampleCount), ordering: .relaxed)
        let file = writer.openFile
        if file?.descriptor != trackedCapture {
            trackedCapture = file?.descriptor
            stallcap_track_capture(file?.descriptor ?? -1, file?.identity.device ?? 0, file?.identity.inode ?? 0)
        }
    }

    /// Tells the developer about a problem of kind `kind` on standard error, the first time only.
    func reportOnce(_ kind: String, _ message: String) {
        guard reportedKinds.insert(kind).inserted else { return }
        let line = "stallprof: \(message)\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
    }
}
