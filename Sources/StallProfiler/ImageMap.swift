import CStallCapture
import StallFormat

/// Reads the process's loaded images (path, address range, build-id) for the capture file, so that addresses
/// can be resolved later without the process.
enum ImageMap {
    /// Every image loaded now, and the loader's generation counter at that moment.
    static func current() -> (images: [ImageRecord], generation: UInt64) {
        final class Box { var images: [ImageRecord] = [] }
        let box = Box()
        let generation = stallcap_for_each_image({ image, context in
            guard let image, let context else { return }
            let box = Unmanaged<Box>.fromOpaque(context).takeUnretainedValue()
            let record = image.pointee
            let buildID = record.build_id.map { Array(UnsafeBufferPointer(start: $0, count: Int(record.build_id_length))) } ?? []
            box.images.append(ImageRecord(
                path: String(cString: record.path), loadBias: record.load_bias, start: record.start, end: record.end,
                buildID: buildID))
        }, Unmanaged.passUnretained(box).toOpaque())
        return (box.images, generation)
    }
}
