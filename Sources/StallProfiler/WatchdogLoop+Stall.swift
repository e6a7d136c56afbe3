import CStallCapture
import Glibc
import StallFormat

/// A stall's samples and what its thread waits for; the image records. On the watchdog thread.
extension WatchdogLoop {
    /// Takes a sample of the stall in progress; when its thread waits (a repeated sample), finds on what, once per
    /// stall, and takes the snapshots of every thread.
    func sampleStall() {
        guard let sampler else { return }
        if let record = takeSample(sampler, watchAnswers: true) {
            writer.append(.sample(record))
            shared.samples.add(1, ordering: .relaxed)
            blockedProbe.takeBaselineIfDue()
            // No CPU progress since the previous sample: the thread waits. Find on what, once per stall.
            if record.flags.contains(.repeated) {
                if let blocked = blockedProbe.probeOnce(stallID: sampler.stallID, threadID: sampler.threadID) {
                    writer.append(.blockedOn(blocked))
                }
                // Every thread in view: when the wait is found, then each second it lasts.
                for threads in blockedProbe.snapshotIfDue(stallID: sampler.stallID) { writer.append(.threads(threads)) }
            }
        }
    }

    /// Libraries loaded since the last look (perhaps what the main thread is doing now), found without the
    /// loader's lock, so that they can be resolved even if the process dies during the episode.
    func appendUnknownImages() {
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
}
