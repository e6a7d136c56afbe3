import Glibc
import StallFormat
import Testing

@testable import StallProfiler

/// The images the watchdog finds without the loader's lock, from the file mappings C picks out of
/// `/proc/self/maps`.
@Suite struct MappedImagesTests {
    /// The executable mappings of files in `/proc/self/maps`, read whole in Swift, for comparison.
    static func codeParsedWhole() -> [MemoryMapping] {
        MemoryMapping.current().filter { $0.path.hasPrefix("/") && $0.executable }
    }

    /// C keeps every executable mapping of a file, and only those, whatever the buffer's first size (it grows).
    /// Other tests may map files meanwhile: a reading that differs is taken again.
    @Test(arguments: [16, 64 * 1024])
    func theFileMappingsAreTheExecutableOnesOfFiles(initialCapacity: Int) {
        var same = false
        for _ in 0..<5 where !same {
            let whole = Self.codeParsedWhole()
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

    /// The loaded image is found from its executable mapping and the segment it maps, whatever else maps the file:
    /// a reading mapping of the whole file at offset 0 (below, right beside, or above the loader's), or a library
    /// whose segments all map file page 0 (lld packs a small library's segments into its first page; gold maps its
    /// code from offset 0). A file without an executable mapping is no image.
    @Test func theExecutableMappingAndItsSegmentGiveTheImage() throws {
        func mapping(_ start: UInt64, _ end: UInt64, _ offset: UInt64, code: Bool = false, path: String = "/lib/libx.so") -> MemoryMapping {
            MemoryMapping(addresses: start..<end, fileOffset: offset, path: path, executable: code)
        }
        func load(_ offset: UInt64, _ address: UInt64, _ end: UInt64, code: Bool = false) -> ELFHeaderInfo.Load {
            ELFHeaderInfo.Load(offsetPage: offset, addressPage: address, endPage: end, executable: code)
        }
        func found(_ mappings: [MemoryMapping], _ elf: ELFHeaderInfo) -> [UInt64] {
            MappedImages.firstCodeMappings(in: mappings, excluding: []).compactMap {
                MappedImages.image(path: $0.path, code: $0, elf: elf).map { [$0.loadBias, $0.start, $0.end] }
            }.flatMap { $0 }
        }
        // Separate code (GNU ld): r--p 0, r-xp 0x28000, r--p 0x1b0000; bias 0x7f00_0000.
        let separate = ELFHeaderInfo(loads: [load(0, 0, 0x28000), load(0x28000, 0x28000, 0x1b0000, code: true),
                                             load(0x1b0000, 0x1b1000, 0x200000)])
        let loaded = [mapping(0x7f00_0000, 0x7f02_8000, 0), mapping(0x7f02_8000, 0x7f1b_0000, 0x28000, code: true),
                      mapping(0x7f1b_1000, 0x7f20_0000, 0x1b0000)]
        let expected: [UInt64] = [0x7f00_0000, 0x7f00_0000, 0x7f20_0000]
        let reading = { (start: UInt64) in [mapping(start, start + 0x20_0000, 0)] }
        #expect(found(reading(0x7b00_0000) + loaded, separate) == expected)
        #expect(found(reading(0x7ee0_0000) + loaded, separate) == expected, "right below the loader's")
        #expect(found(loaded + reading(0x7f20_0000), separate) == expected, "right above")
        // lld, a small library: every segment from file page 0, at successive pages; bias 0x7fdc_000.
        let lld = ELFHeaderInfo(loads: [load(0, 0, 0x1000), load(0, 0x1000, 0x2000, code: true),
                                        load(0, 0x2000, 0x3000), load(0, 0x3000, 0x4000)])
        let packed = [mapping(0x7fdc_000, 0x7fdd_000, 0), mapping(0x7fdd_000, 0x7fde_000, 0, code: true),
                      mapping(0x7fde_000, 0x7fdf_000, 0), mapping(0x7fdf_000, 0x7fe0_000, 0)]
        #expect(found(packed, lld) == [0x7fdc_000, 0x7fdc_000, 0x7fe0_000])
        // gold: code from offset 0 first; bias 0x5000_0000.
        let gold = ELFHeaderInfo(loads: [load(0, 0, 0x2000, code: true), load(0, 0x2000, 0x3000),
                                         load(0x1000, 0x3000, 0x5000)])
        let goldMaps = [mapping(0x5000_0000, 0x5000_2000, 0, code: true), mapping(0x5000_2000, 0x5000_3000, 0),
                        mapping(0x5000_3000, 0x5000_4000, 0x1000)]
        #expect(found(goldMaps, gold) == [0x5000_0000, 0x5000_0000, 0x5000_5000])
        // No executable mapping: no image; a known path: left out; no executable segment at that offset: none.
        #expect(found(reading(0x7b00_0000), separate).isEmpty)
        #expect(MappedImages.firstCodeMappings(in: loaded, excluding: ["/lib/libx.so"]).isEmpty)
        #expect(found(loaded, lld).isEmpty)
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

    /// A file mapped many times only to be read (a symbolizer's, a database's) reaches Swift not at all: C passes
    /// only the executable mappings of files. The files without code were 1,900 of 2,061 lines in the test process,
    /// 50 ms of the watchdog's CPU per look at a stall's start.
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
        // Only code passes, and this test binary's code is there (its other segments are not).
        let real = try #require(realpath("/proc/self/exe", nil))
        defer { free(real) }
        let executable = String(cString: real)
        let passed = MappedImages.fileMappings()
        #expect(passed.allSatisfy { $0.executable })
        #expect(passed.contains { $0.path == executable })
        #expect(MemoryMapping.current().contains { $0.path == executable && !$0.executable })
    }
}
