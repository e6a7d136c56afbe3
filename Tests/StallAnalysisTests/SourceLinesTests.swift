import CStallDwarf
import Foundation
import StallFormat
import StallTestSupport
import Testing

@testable import StallAnalysis

/// Source lines and inlined frames (issue 19), checked against the toolchain's llvm-symbolizer at every address of
/// a function: an optimized C fixture with two levels of inlining, and a Swift function of this test binary.
@Suite struct SourceLinesTests {
    /// The toolchain's llvm-symbolizer: beside `swift` on PATH.
    static let llvmSymbolizer: String? = {
        guard let swift = ExportTools.which("swift") else { return nil }
        let real = URL(fileURLWithPath: swift).resolvingSymlinksInPath().deletingLastPathComponent()
        let path = real.appendingPathComponent("llvm-symbolizer").path
        return FileManager.default.isExecutableFile(atPath: path) ? path : nil
    }()

    /// Each address's frames, innermost first, as `function file:line` (the file's last component), by
    /// llvm-symbolizer --inlining.
    func reference(_ object: String, _ addresses: [UInt64]) throws -> [[String]] {
        let tool = try #require(Self.llvmSymbolizer, "llvm-symbolizer ships with the Swift toolchain")
        let input = addresses.map { "0x" + String($0, radix: 16) }.joined(separator: "\n") + "\n"
        let run = try ProcessRunner.run(tool, ["--inlining", "--obj=\(object)", "-s", "--no-demangle"], input: Array(input.utf8))
        #expect(run.status == 0, "\(run.err)")
        let blocks = run.out.components(separatedBy: "\n\n").filter { !$0.isEmpty }
        return blocks.map { block in
            let lines = block.split(separator: "\n").map(String.init)
            return stride(from: 0, to: lines.count - 1, by: 2).map { index in
                let place = lines[index + 1].split(separator: ":")  // file:line:column
                // Swift's `<compiler-generated>` is no file: stallprof gives none.
                let file = place[0] == "<compiler-generated>" ? "??" : place[0]
                return "\(lines[index]) \(file):\(place.count > 1 ? place[1] : "0")"
            }
        }
    }

    /// stallprof's frames at `address` in the same form, innermost first.
    func ours(_ symbolizer: Symbolizer, _ address: UInt64, bias: UInt64) -> [String] {
        symbolizer.sourceFrames(for: address + bias, isReturnAddress: false).reversed().map { frame in
            let file = frame.file.map { $0.split(separator: "/").last.map(String.init) ?? $0 } ?? "??"
            return "\(frame.function) \(file):\(frame.line)"
        }
    }

    /// The file addresses of the largest function in `object` whose symbol `matches` (nm -S).
    func functionRange(_ object: String, _ matches: (Substring) -> Bool) throws -> Range<UInt64> {
        let symbols = try ProcessRunner.run(try #require(ExportTools.which("nm")), ["-S", "--defined-only", object])
        let ranges = symbols.out.split(separator: "\n").compactMap { line -> Range<UInt64>? in
            let fields = line.split(separator: " ")
            guard fields.count == 4, "Tt".contains(fields[2]), matches(fields[3]),
                  let start = UInt64(fields[0], radix: 16), let size = UInt64(fields[1], radix: 16) else { return nil }
            return start..<start + size
        }
        return try #require(ranges.max { $0.count < $1.count }, "no such function in \(object)")
    }

    static var mangled: SymbolizerOptions {
        var options = SymbolizerOptions()
        options.demangle = false
        return options
    }

    /// Fixtures/dwarf/inlined.c compiled with -O2 -g into a shared library in a new directory (removed by the
    /// caller), as an image loaded at a made-up address (``bias``); `swift`: Fixtures/dwarf/Inlined.swift with
    /// swiftc -O -g.
    func inlinedLibrary(swift: Bool = false) throws -> (directory: String, image: ImageRecord) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dwarf-\(getpid())-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let library = directory + "/libinlined.so"
        let compile = swift
            ? try ProcessRunner.run(try #require(ExportTools.which("swiftc")), [
                "-O", "-g", "-emit-library", "-module-name", "Fixture", "-o", library, FoldFixture.path("dwarf/Inlined.swift"),
            ])
            : try ProcessRunner.run(try #require(ExportTools.which("cc")), [
                "-O2", "-g", "-shared", "-fPIC", "-o", library, FoldFixture.path("dwarf/inlined.c"),
            ])
        #expect(compile.status == 0, "\(compile.err)")
        return (directory, ImageRecord(path: library, loadBias: Self.bias, start: Self.bias, end: Self.bias + 0x10_0000, buildID: []))
    }

    static let bias: UInt64 = 0x7f00_0000_0000

    /// C, and Swift, whose functions DWARF nests in the module's DW_TAG_module (dwarf_getscopes never looks there).
    @Test(arguments: [false, true])
    func inlinedFramesAndLinesMatchLLVMSymbolizerInOptimizedCode(swift: Bool) throws {
        let (directory, image) = try inlinedLibrary(swift: swift)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let library = image.path, bias = Self.bias
        let addresses = Array(try functionRange(library) { swift ? $0.hasPrefix("$s7Fixture5entry") : $0 == "entry" })
        let symbolizer = Symbolizer(images: [image], options: Self.mangled)
        let expected = try reference(library, addresses)
        try #require(expected.count == addresses.count)
        var inlinedSeen = 0
        for (index, address) in addresses.enumerated() {
            let got = ours(symbolizer, address, bias: bias)
            #expect(got == expected[index], "at 0x\(String(address, radix: 16))")
            if got.count == 3 { inlinedSeen += 1 }
        }
        // The fixture's point: some addresses are two inlined levels deep (scale in mix in entry).
        #expect(inlinedSeen > 0)
        let frames = symbolizer.sourceFrames(for: bias + addresses[addresses.count / 2], isReturnAddress: false)
        #expect(frames.first?.inlined == false && frames.dropFirst().allSatisfy { $0.inlined })
        // Files are whole paths, as llvm-symbolizer prints them without -s (a relative one joined to its unit's
        // directory).
        let deep = try #require(addresses.map { symbolizer.sourceFrames(for: bias + $0, isReturnAddress: false) }.first { $0.count == 3 })
        let ours = deep.filter { $0.line > 0 }  // (the standard library's inlined code is line 0, `<compiler-generated>`)
        #expect(ours.count >= 2)
        #expect(ours.allSatisfy {
            $0.file?.hasSuffix(swift ? "/Fixtures/dwarf/Inlined.swift" : "/Fixtures/dwarf/inlined.c") == true && $0.file?.hasPrefix("/") == true
        }, "\(deep)")
    }

    @Test func linesOfASwiftFunctionInThisTestBinaryMatchLLVMSymbolizer() throws {
        let image = ReportFixtures.ownImage
        // `ours` above and the closures in it: Swift code with lines of its own, and compiler-generated ones (line 0).
        let range = try functionRange(image.path) { $0.contains("011SourceLinesC0V4ours") }
        let addresses = Array(range)
        let symbolizer = Symbolizer(images: [image], options: Self.mangled)
        let expected = try reference(image.path, addresses)
        try #require(expected.count == addresses.count)
        for (index, address) in addresses.enumerated() {
            #expect(ours(symbolizer, address, bias: image.loadBias) == expected[index], "at +\(index)")
        }
        let lines = Set(addresses.compactMap { symbolizer.sourceFrames(for: $0 + image.loadBias, isReturnAddress: false).last?.shortLocation })
        #expect(lines.contains { $0.hasPrefix("SourceLinesTests.swift:") })
    }

    @Test func foldLinesAndInlinesNameFramesAsStackcollapsePerfDoes() throws {
        let image = ReportFixtures.ownImage
        let range = try functionRange(image.path) { $0.contains("011SourceLinesC0V4ours") }
        var options = SymbolizerOptions()
        options.lines = true
        let plain = Symbolizer(images: [image])
        let address = try #require(range.map { $0 + image.loadBias }.first { plain.sourceFrames(for: $0, isReturnAddress: false).last?.line ?? 0 > 0 })
        let location = try #require(plain.sourceFrames(for: address, isReturnAddress: false).last?.shortLocation)
        let names = Symbolizer(images: [image], options: options).rootFirstNames(leafFirst: [address])
        #expect(names == [plain.name(for: address, isReturnAddress: false) + ":" + location])
        // Without DWARF (an image that is no file here): the names of today, and the image is named for the warning.
        let gone = ImageRecord(path: "/nonexistent/libgone.so", loadBias: 0x1000, start: 0x1000, end: 0x2000, buildID: [])
        let symbolizer = Symbolizer(images: [gone], options: options)
        #expect(symbolizer.rootFirstNames(leafFirst: [0x1800]) == ["[libgone.so]"])
        #expect(symbolizer.imagesWithoutLines == ["/nonexistent/libgone.so"])
        #expect(symbolizer.linesWarning == "no line information (DWARF) in 1 image: libgone.so; their frames have no "
            + "lines (--debug-dir finds debug files by build-id)")
        #expect(Symbolizer(images: [gone]).linesWarning == nil, "lines not asked for")
    }

    /// A capture whose samples are two inlined levels deep: fold --inline gives each inlined function its frame,
    /// pprof a location with a line per function (innermost first), speedscope the source file.
    @Test func exportsAndFoldCarryTheInlinedFramesAndLines() throws {
        let (directory, image) = try inlinedLibrary()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let plain = Symbolizer(images: [image])
        let range = try functionRange(image.path) { $0 == "entry" }
        let leaf = try #require(range.map { $0 + Self.bias }.first { plain.sourceFrames(for: $0, isReturnAddress: false).count == 3 })
        let expected = plain.sourceFrames(for: leaf, isReturnAddress: false)
        #expect(expected.map(\.function) == ["entry", "mix", "scale"])
        let records = ReportFixtures.records(
            [.image(image)] + ReportFixtures.episode(1, at: 2_000, durationMs: 500, state: .busy, samples: [[leaf], [leaf]]))
        let capture = try ReportFixtures.capture(records, name: "inlined")
        // fold --inline --lines.
        var options = StallCaptureImporter.Options()
        (options.symbolizer.inlines, options.symbolizer.lines) = (true, true)
        var stacks = FoldedStacks()
        var diagnostics = Diagnostics()
        StallCaptureImporter(options: options).fold(capture, into: &stacks, diagnostics: &diagnostics)
        let names = expected.map { frame in
            frame.function + (frame.inlined ? "_[i]" : "") + ":" + (frame.shortLocation ?? "")
        }
        #expect(stacks.rendered() == names.joined(separator: ";") + " 2\n")
        // pprof: one location at the address, its lines innermost first.
        let profile = try #require(ProtoMessage(try PprofExportTests.profile(ExportTests.timeline(capture))))
        let strings = profile.strings(6)
        let functions = Dictionary(uniqueKeysWithValues: profile.messages(5).map {
            ($0.int(1), (name: strings[Int($0.int(2))], file: strings[Int($0.int(4))]))
        })
        let location = try #require(profile.messages(4).first { $0.int(3) == leaf })
        let lines = location.messages(4).map { (function: functions[$0.int(1)]?.name, file: functions[$0.int(1)]?.file, line: Int($0.int(2))) }
        #expect(lines.map(\.function) == expected.reversed().map(\.function))
        #expect(lines.map(\.line) == expected.reversed().map(\.line))
        #expect(lines.allSatisfy { $0.file?.hasSuffix("/Fixtures/dwarf/inlined.c") == true })
        // speedscope: the frame's file is its source file, no longer the image.
        let speedscope = try ExportTests.json(try SpeedscopeExporter(options: .init()).export(ExportTests.timeline(capture), diagnostics: &diagnostics))
        let frames = try #require((speedscope["shared"] as? [String: Any])?["frames"] as? [[String: Any]])
        #expect(frames.count == 1 && (frames[0]["file"] as? String)?.hasSuffix("/Fixtures/dwarf/inlined.c") == true)
        #expect(frames[0]["line"] == nil, "no line without --lines: a function's samples stay one frame")
        // Chrome trace (Perfetto): its stack frames have a name and a parent only, so with --inline --lines each is
        // named as fold names it, a chain from the root.
        var lined = StallCaptureImporter.Options()
        (lined.symbolizer.inlines, lined.symbolizer.lines) = (true, true)
        let timeline = TimelineBuilder.build(capture, options: lined, diagnostics: &diagnostics)
        let trace = try ExportTests.json(try ChromeTraceExporter(options: .init()).export(timeline, diagnostics: &diagnostics))
        let traceFrames = try #require(trace["stackFrames"] as? [String: [String: Any]])
        var chain: [String] = []
        let parent = { (frame: [String: Any]) in frame["parent"].map { "\($0)" } }
        var id = traceFrames.first { entry in !traceFrames.values.contains { parent($0) == entry.key } }?.key
        while let current = id, let frame = traceFrames[current] {
            chain.insert(frame["name"] as? String ?? "", at: 0)
            id = parent(frame)
        }
        #expect(chain == names, "\(traceFrames)")
    }

    /// The thread holding a lock "was in" the innermost function the compiler inlined where it was, not the
    /// function whose machine frame holds the code: `scale`, inlined into `mix`, inlined into `entry`.
    @Test func aLockOwnerWasInTheInnermostFunctionInlinedWhereItWas() throws {
        let (directory, image) = try inlinedLibrary()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let plain = Symbolizer(images: [image])
        let range = try functionRange(image.path) { $0 == "entry" }
        let leaf = try #require(range.map { $0 + Self.bias }.first { plain.sourceFrames(for: $0, isReturnAddress: false).count == 3 })
        let records = ReportFixtures.records(
            [.image(image)] + ReportFixtures.episode(1, at: 2_000, durationMs: 500, state: .blocked, cpuPerMille: 0,
                                                     samples: Array(repeating: [ReportFixtures.systemLeaf, ReportFixtures.pass], count: 3))
            + [.blockedOn(BlockedOnRecord(
                stallID: 1, timestampNs: ReportFixtures.startNs + 2_300_000_000, waitKind: .mutex,
                syscall: ReportFixtures.futexNumber, ownerTID: 77, ownerName: "worker", ownerState: UInt8(ascii: "R"),
                ownerFlags: .signalled, ownerFrames: [leaf]))])
        let report = StallReport(captures: [try ReportFixtures.capture(records, name: "inlined-owner")])
        let blocked = try #require(report.episodes.first?.blockedOn)
        #expect(blocked.ownerStack == ["entry"])
        #expect(blocked.ownerFrame == "scale")
        let words = report.text().split(whereSeparator: \.isWhitespace).joined(separator: " ")  // wrapped at 80
        #expect(words.contains("held by thread 77 (worker), which was in scale"), "\(report.text())")
    }

    /// The fixture library with bytes of its DWARF sections overwritten (a fixed seed, so a failure reproduces):
    /// opening it and looking up every address of `entry` never traps nor hangs (libdw checks what it reads; a
    /// crash here would end the test run). 1,500 random mutations of this kind outside the suite found none either.
    @Test func mutatedDebugSectionsNeverTrap() throws {
        let (directory, image) = try inlinedLibrary()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let original = try [UInt8](Data(contentsOf: URL(fileURLWithPath: image.path)))
        let sections = try ProcessRunner.run(try #require(ExportTools.which("readelf")), ["-S", "-W", image.path])
        let spans = sections.out.split(separator: "\n").compactMap { line -> Range<Int>? in
            let fields = line.split(separator: " ").filter { !$0.hasPrefix("[") && $0 != "]" }
            guard let name = fields.first, name.hasPrefix(".debug_"), fields.count > 4,
                  let offset = Int(fields[3], radix: 16), let size = Int(fields[4], radix: 16) else { return nil }
            return offset..<offset + size
        }
        let debug = try #require(spans.min { $0.lowerBound < $1.lowerBound }.map { first in first.lowerBound..<spans.map(\.upperBound).max()! })
        let range = try functionRange(image.path) { $0 == "entry" }
        var random = XorShift(state: 19)
        var opened = 0
        for round in 0..<150 {
            var bytes = original
            for _ in 0..<(1 + round % 16) {
                let at = debug.lowerBound + Int(random.next() % UInt64(debug.count))
                bytes[at] = [0, 0xFF, UInt8(truncatingIfNeeded: random.next()), bytes[at] ^ 0x80][Int(random.next() % 4)]
            }
            let path = directory + "/mutated-\(round).so"
            #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
            defer { unlink(path) }
            guard let file = stalldw_open(path) else { continue }
            opened += 1
            var frames = [stalldw_frame](repeating: stalldw_frame(), count: 16)
            for address in range { _ = stalldw_lookup(file, address, &frames, Int32(frames.count)) }
            stalldw_close(file)
        }
        #expect(opened > 0)
    }
}
