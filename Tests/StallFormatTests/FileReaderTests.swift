#if canImport(Glibc)
import Glibc
#endif
import StallFormat
import Testing

/// The neutral file reader: whole /proc files, errors that are not capture format errors.
@Suite struct FileReaderTests {
    @Test func procFilesAreReadToTheirEnd() throws {
        let maps = try FileReader.contents(of: "/proc/self/maps")
        #expect(maps.count > 0 && maps.last == UInt8(ascii: "\n"))
        // A page is the most one read of a /proc file returns; this process maps more than fits in one.
        #expect(maps.count > 4096)
        #expect(FileReader.text(of: "/proc/self/status")?.contains("Pid:") == true)
    }

    @Test func failuresAreFileReadErrorsWithTheSystemError() {
        let error = #expect(throws: FileReadError.self) { try FileReader.contents(of: "/nonexistent/stallprof") }
        #expect(error?.code == ENOENT && error?.path == "/nonexistent/stallprof")
        #expect(FileReader.text(of: "/nonexistent/stallprof") == nil)
        // regularOnly: never a device or a FIFO (a path from untrusted input).
        #expect(throws: FileReadError(path: "/dev/null", reason: "not a regular file")) {
            try FileReader(path: "/dev/null", regularOnly: true)
        }
        // The capture reader keeps its own error type for captures.
        #expect(throws: CaptureFormatError.self) { try CaptureReader.readWholeFile("/nonexistent/stallprof") }
    }

    @Test func partsOfAFileAtAnOffset() throws {
        let reader = try FileReader(path: "/proc/self/exe", regularOnly: true)
        #expect(try reader.bytes(at: 0, count: 4) == [0x7F, 0x45, 0x4C, 0x46])
        #expect(try reader.bytes(at: 1, count: 3) == [0x45, 0x4C, 0x46])
        #expect(try reader.bytes(at: Int(Int32.max), count: 4).isEmpty)  // past the end: nothing
    }
}
