import Glibc
import StallFormat
import Testing

@testable import StallProfiler

/// The images the watchdog finds without the loader's lock, from the file mappings C picks out of
/// `/proc/self/maps`.
@Suite struct MappedImagesTests {
    /// The mappings of `/proc/self/maps`, read whole in Swift, of the files that have an executable mapping, for
    /// comparison (by path: C tells files apart by device and inode, which differ only for a file replaced while
    /// mapped).
    static func filesParsedWhole() -> [MemoryMapping] {
        let files = MemoryMapping.current().filter { $0.path.hasPrefix("/") }
        let withCode = Set(files.filter(\.executable).map(\.path))
        return files.filter { withCode.contains($0.path) }
    }

    /// C keeps every mapping of a file with code, and only those, whatever the buffer's first size (it grows).
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
        // Other tests load and unload plugins meanwhile: a look that disagrees is taken again.
        var disagreeing: [String] = []
        for _ in 0..<5 {
            let mapped = Dictionary(
                MappedImages.unknown(excluding: []).map { ($0.path, $0) }, uniquingKeysWith: { first, _ in first })
            let loaded = ImageMap.current().images.filter { $0.path.hasPrefix("/") }
            #expect(!loaded.isEmpty)
            disagreeing = loaded.compactMap { image in
                guard let real = realpath(image.path, nil) else { return nil }
                defer { free(real) }
                let found = mapped[String(cString: real)]
                return found?.loadBias == image.loadBias ? nil : "\(image.path): \(found.map { String($0.loadBias, radix: 16) } ?? "not found"), loader \(String(image.loadBias, radix: 16))"
            }
            if disagreeing.isEmpty { break }
        }
        #expect(disagreeing.isEmpty, "\(disagreeing)")
    }

    /// A library some code maps whole to read it (a symbolizer does) is two instances of one file: the loader's,
    /// with code, is the image, wherever the reading one lies. Both orders, and a file only read is no image.
    @Test func aFileMappedToBeReadIsNotTheLoadedImage() {
        func mapping(_ start: UInt64, _ end: UInt64, _ offset: UInt64, code: Bool = false, path: String = "/lib/libc.so.6") -> MemoryMapping {
            MemoryMapping(addresses: start..<end, fileOffset: offset, path: path, executable: code)
        }
        let loaded = [mapping(0x7f00_0000, 0x7f02_8000, 0), mapping(0x7f02_8000, 0x7f1b_0000, 0x28000, code: true),
                      mapping(0x7f1b_0000, 0x7f20_0000, 0x1b0000)]
        let image = MappedImages.LoadedImage(path: "/lib/libc.so.6", base: 0x7f00_0000, start: 0x7f00_0000, end: 0x7f20_0000)
        let below = [mapping(0x7b00_0000, 0x7b20_0000, 0)], above = [mapping(0x7ff0_0000, 0x7ff2_0000, 0)]
        #expect(MappedImages.loadedImages(in: below + loaded, excluding: []) == [image])
        #expect(MappedImages.loadedImages(in: loaded + above, excluding: []) == [image])
        #expect(MappedImages.loadedImages(in: below + [mapping(0x7c00_0000, 0x7c00_1000, 0x1000, path: "/data")], excluding: []).isEmpty)
        #expect(MappedImages.loadedImages(in: loaded, excluding: ["/lib/libc.so.6"]).isEmpty)
    }

    /// The same in this process: with libc mapped whole for reading, the image found is still the loader's.
    @Test func libcMappedForReadingKeepsTheLoadersBias() throws {
        let libc = try #require(ImageMap.current().images.first { $0.path.contains("/libc.so") })
        let real = try #require(realpath(libc.path, nil))
        defer { free(real) }
        let fd = open(real, O_RDONLY | O_CLOEXEC)
        try #require(fd >= 0)
        defer { close(fd) }
        var info = stat()
        try #require(fstat(fd, &info) == 0)
        let reading = try #require(mmap(nil, Int(info.st_size), PROT_READ, MAP_PRIVATE, fd, 0))
        try #require(reading != MAP_FAILED)
        defer { munmap(reading, Int(info.st_size)) }
        let found = MappedImages.unknown(excluding: []).first { $0.path == String(cString: real) }
        #expect(found?.loadBias == libc.loadBias)
        #expect(found.map { $0.start <= UInt64(UInt(bitPattern: reading)) && UInt64(UInt(bitPattern: reading)) < $0.end } == false)
    }

    /// A file mapped many times only to be read (a symbolizer's, a database's) reaches Swift not at all: C leaves out
    /// the files without code, which in the test process were 1,900 of 2,061 lines, 50 ms of the watchdog's CPU per
    /// look at a stall's start.
    @Test func filesMappedOnlyToBeReadAreLeftOutInC() throws {
        let path = TestSupport.temporaryPath("mapped-to-read.data")
        defer { unlink(path) }
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        try #require(fd >= 0)
        defer { close(fd) }
        try #require(ftruncate(fd, 4096) == 0)
        var maps: [UnsafeMutableRawPointer] = []
        defer { for map in maps { munmap(map, 4096) } }
        for _ in 0..<50 {
            let map = try #require(mmap(nil, 4096, PROT_READ, MAP_PRIVATE, fd, 0))
            try #require(map != MAP_FAILED)
            maps.append(map)
        }
        #expect(MemoryMapping.current().filter { $0.path == path }.count == 50)
        #expect(!MappedImages.fileMappings(initialCapacity: 16).contains { $0.path == path })
        // A file with code is there, every mapping of it: this test binary's.
        let real = try #require(realpath("/proc/self/exe", nil))
        defer { free(real) }
        let executable = String(cString: real)
        let own = MappedImages.fileMappings().filter { $0.path == executable }
        #expect(own.contains { $0.executable } && own.contains { !$0.executable }, "\(own)")
    }
}
