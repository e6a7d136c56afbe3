import Foundation
import Testing

@testable import StallAnalysis
import StallFormat

/// Binary profiles named by every command through the one detector (perf.data, pprof, gzip), and the small
/// inflater that looks inside gzip files.
@Suite struct BinaryProfileTests {
    static func temporary(_ bytes: [UInt8], _ suffix: String) throws -> String {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("stallprof-bin-\(UUID().uuidString)\(suffix)")
        try Data(bytes).write(to: url)
        return url.path
    }

    /// `bytes` compressed by the system's gzip at level 9 (dynamic Huffman blocks, as real files have).
    static func gzip(_ bytes: [UInt8]) throws -> [UInt8] {
        let path = try temporary(bytes, ".raw")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "gzip -9 -c \"$0\"", path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0)
        return Array(data)
    }

    /// Every command's loader on `path`: the bad-data error of each.
    static func errors(_ path: String) -> [(position: String, reason: String)?] {
        let input = InputSource(path: path)
        var diagnostics = Diagnostics()
        return [
            FoldFixture.badData { try Folder.fold([input], options: FoldOptions()) },  // fold
            FoldFixture.badData { try ProfileLoader.load([input], options: FoldOptions()) },  // flamegraph, diff
            FoldFixture.badData { try Exporter.load([input], options: FoldOptions()) },  // export
            FoldFixture.badData { try ReportInput.read([input], options: FoldOptions(), diagnostics: &diagnostics) },  // report
        ]
    }

    @Test func perfDataIsNamedByEveryCommand() throws {
        let path = try Self.temporary(Array("PERFILE2".utf8) + [0x68, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3], ".data")
        defer { try? FileManager.default.removeItem(atPath: path) }
        for error in Self.errors(path) {
            #expect(error?.position == "byte 0")
            #expect(error?.reason.hasPrefix("this is perf.data: run `perf script` first (perf script -i \(path)") == true)
        }
        // Whatever --format says.
        let forced = FoldFixture.badData { try FoldFixture.foldBytes(Array("PERFILE2\0".utf8)) { $0.format = .perf } }
        #expect(forced?.reason.hasPrefix("this is perf.data") == true)
    }

    @Test func pprofAndOtherGzipFilesAreToldApart() throws {
        var diagnostics = Diagnostics()
        let timeline = TimelineBuilder.build(folded: try Folder.fold(
            [InputSource(path: FoldFixture.path("perf-script.txt"))], options: FoldOptions()).0, name: "perf")
        var options = PprofExporter.Options()
        options.gzip = false
        let protobuf = try PprofExporter(options: options).export(timeline, diagnostics: &diagnostics)
        for compressed in [try Self.gzip(protobuf), Gzip.wrap(protobuf)] {
            let path = try Self.temporary(compressed, ".pb.gz")
            defer { try? FileManager.default.removeItem(atPath: path) }
            for error in Self.errors(path) {  // read decompressed, then named
                #expect(error?.reason.hasPrefix("this is a pprof profile (protobuf;") == true, "\(String(describing: error))")
            }
        }
        // Not compressed: named all the same (it used to be "binary data (a NUL byte at byte N)").
        let raw = try Self.temporary(protobuf, ".pb")
        defer { try? FileManager.default.removeItem(atPath: raw) }
        for error in Self.errors(raw) {
            #expect(error?.reason.hasPrefix("this is a pprof profile (protobuf;") == true, "\(String(describing: error))")
        }
        // Other gzip input is read decompressed, by every command.
        let text = try Self.gzip(Array("main;a 1\n".utf8))
        let path = try Self.temporary(text, ".gz")
        defer { try? FileManager.default.removeItem(atPath: path) }
        for error in Self.errors(path) { #expect(error == nil, "\(String(describing: error))") }
        #expect(try Folder.fold([InputSource(path: path)], options: FoldOptions()).0.rendered() == "main;a 1\n")
    }

    @Test func reportReadsAProfileThroughTheOneDetector() throws {
        var diagnostics = Diagnostics()
        let input = InputSource(path: FoldFixture.path("perf-script.txt"))
        guard case .profile(_, let inputs) = try ReportInput.read([input], options: FoldOptions(), diagnostics: &diagnostics)
        else {
            Issue.record("a perf script is not a capture")
            return
        }
        #expect(inputs.map(\.format) == [.perf])
        var forced = FoldOptions()
        forced.format = .stallprof
        let failure = FoldFixture.badData { try ReportInput.read([input], options: forced, diagnostics: &diagnostics) }
        #expect(failure?.reason.hasPrefix("not a stallprof capture") == true)
    }

    @Test func gzipInputStreamsDecompressed() throws {
        var text: [UInt8] = []
        for index in 0..<30_000 { text += Array("frame_\(index % 97);leaf_\(index * 7919 % 1009) \(index)\n".utf8) }
        let compressed = try Self.gzip(text)
        let read = { (bytes: [UInt8]) in try ByteStream(bytes: bytes, name: "in.gz").decompressingGzip().readAll() }
        #expect(try read(compressed) == text)
        #expect(try read(Gzip.wrap(text)) == text)  // what the pprof exporter writes
        #expect(try read(compressed + compressed) == text + text)  // members one after the other, as gunzip
        #expect(try read(compressed + [UInt8](repeating: 0, count: 100)) == text)  // trailing padding ignored
        #expect(try read(compressed + [10]) == text)  // and a single byte
        #expect(try read(Array("plain".utf8)) == Array("plain".utf8))  // not gzip: as it is
        // Cut short or corrupt: bad data naming the compressed position, never a trap or a hang.
        let cut = FoldFixture.badData { try read(Array(compressed.prefix(compressed.count / 2))) }
        #expect(cut?.reason == "the gzip stream is cut short" && cut?.position.hasSuffix("of the gzip stream") == true)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            var mutated = compressed
            for _ in 0..<4 { mutated[Int.random(in: 10..<mutated.count, using: &generator)] = UInt8.random(in: 0...255) }
            do { _ = try read(mutated) } catch let error as StallError {
                guard case .badData(let path, _, let reason) = error else { throw error }
                #expect(path == "in.gz" && reason.contains("gzip"), "\(reason)")
            }
        }
    }

    @Test func protobufThatIsNotAProfileIsPlainGzip() {
        #expect(BinaryInput.looksLikePprof([0x0A, 0x02, 0x08, 0x01, 0x12, 0x00]))  // sample_type, sample
        #expect(!BinaryInput.looksLikePprof([0x7A, 0x02, 0x08, 0x01, 0x12, 0x00]))  // field 15
        #expect(!BinaryInput.looksLikePprof(Array("main;a 1\n".utf8)))
    }
}
