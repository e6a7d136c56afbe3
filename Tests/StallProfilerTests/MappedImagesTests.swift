import Glibc
import StallFormat
import Testing

@testable import StallProfiler

/// The images the watchdog finds without the loader's lock, from the file mappings C picks out of
/// `/proc/self/maps`.
@Suite struct MappedImagesTests {
    /// The named files of `/proc/self/maps` read whole in Swift, for comparison.
    static func filesParsedWhole() -> [MemoryMapping] {
        MemoryMapping.current().filter { $0.path.hasPrefix("/") }
    }

    /// C keeps every mapping that names a file, and only those, whatever the buffer's first size (it grows).
    /// Other tests may map files meanwhile: a reading that differs is taken again.
    @Test(arguments: [16, 64 * 1024])
    func theFileMappingsAreThoseOfTheWholeFile(initialCapacity: Int) {
        var same = false
        for _ in 0..<5 where !same {
            let whole = Self.filesParsedWhole()
            same = MappedImages.fileMappings(initialCapacity: initialCapacity) == whole
        }
        #expect(same)
        #expect(!MappedImages.fileMappings().isEmpty)
    }

    /// Every library the loader lists is found from the mappings, with the loader's load bias.
    @Test func theImagesFoundFromTheMappingsAgreeWithTheLoader() {
        let mapped = Dictionary(
            MappedImages.unknown(excluding: []).map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
        let loaded = ImageMap.current().images.filter { $0.path.hasPrefix("/") }
        #expect(!loaded.isEmpty)
        for image in loaded {
            guard let real = realpath(image.path, nil) else { continue }
            defer { free(real) }
            let found = mapped[String(cString: real)]
            #expect(found?.loadBias == image.loadBias, "\(image.path)")
        }
    }
}
