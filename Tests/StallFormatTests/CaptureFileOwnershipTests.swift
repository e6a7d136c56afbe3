import Foundation
import Testing

@testable import StallFormat

/// The capture file belongs to one writer: a second one is refused; a descriptor the app closed and reused is
/// never written; a deleted, moved or replaced file is noticed and the path opened again.
@Suite struct CaptureFileOwnershipTests {
    typealias Records = CaptureWriterResilienceTests

    static func temporaryPath(_ name: String) -> String {
        NSTemporaryDirectory() + "stallprof-own-\(UUID().uuidString.prefix(8))-\(name)"
    }

    static func contents(_ path: String) -> [UInt8] { (try? FileReader.contents(of: path)) ?? [] }

    /// A writer with the process and image records and episode 1 begun and sampled, all flushed; reopen reasons
    /// collected in `reasons`.
    static func startedWriter(_ path: String, reasons: ReasonLog) throws -> CaptureWriter {
        let writer = try CaptureWriter(path: path)
        writer.onReopen = { reasons.values.append($0) }
        for record in [Records.process, Records.image, Records.begin(1), Records.sample(1, 3_000)] {
            writer.append(record)
        }
        try writer.flush()
        return writer
    }

    /// Ends episode 1 with a second sample and closes the writer.
    static func finish(_ writer: CaptureWriter) throws {
        writer.append(Records.sample(1, 4_000))
        writer.append(Records.end(1))
        writer.append(.close(timestampNs: 10_000))
        try writer.close()
    }

    final class ReasonLog: @unchecked Sendable { var values: [CaptureWriter.ReopenReason] = [] }

    @Test func aSecondWriterOnAPathInUseIsRefusedNamingThePathAndThePid() throws {
        let path = Self.temporaryPath("busy.stalls")
        defer { unlink(path) }
        let first = try Self.startedWriter(path, reasons: ReasonLog())
        let before = Self.contents(path)
        let error = #expect(throws: CaptureWriteError.self) { try CaptureWriter(path: path) }
        #expect(error?.description.contains(path) == true)
        #expect(error?.description.contains("in use by another process (pid \(getpid()))") == true)
        #expect(Self.contents(path) == before)  // not truncated by the refused writer
        try Self.finish(first)
        let capture = try CaptureReader.read(path: path)
        #expect(capture.stalls.first?.samples.count == 2 && capture.closedCleanly)
        // Once the first is closed, the path is free again.
        let second = try CaptureWriter(path: path)
        try second.close()
    }

    @Test func theLockHolderIsReadFromProcLocks() {
        let identity = FileIdentity(device: 0xfe00, inode: 5_350_259)
        let text = """
            1: OFDLCK ADVISORY  WRITE -1 fe:00:5350259 0 EOF
            2: FLOCK  ADVISORY  WRITE 7202 fe:00:16220723 0 EOF
            2: -> FLOCK  ADVISORY  WRITE 9999 fe:00:5350259 0 EOF
            3: FLOCK  ADVISORY  WRITE 10539 fe:00:5350259 0 EOF
            """
        #expect(CaptureFileLock.holder(inLocks: text, identity: identity) == 10539)
        #expect(CaptureFileLock.holder(inLocks: text, identity: FileIdentity(device: 0x801, inode: 5_350_259)) == nil)
    }

    @Test func aDescriptorTheAppClosedAndReusedIsNeverWrittenAndThePathIsReopened() throws {
        let path = Self.temporaryPath("taken.stalls"), appPath = Self.temporaryPath("app-file")
        defer {
            unlink(path)
            unlink(appPath)
        }
        let reasons = ReasonLog()
        let writer = try Self.startedWriter(path, reasons: reasons)
        let number = try #require(writer.openFile?.descriptor)
        // The app's double close, and its own file opened on the number: done in one step with dup2, since other
        // tests' threads in this process open files too and could take the number between a close and an open.
        let opened = open(appPath, O_RDWR | O_CREAT | O_TRUNC, 0o644)
        try #require(opened >= 0)
        let app = dup2(opened, number)
        close(opened)
        defer { close(app) }
        try #require(app == number)  // the app's own file took the number
        #expect(write(app, "app data\n", 9) == 9)
        try Self.finish(writer)
        #expect(Self.contents(appPath) == Array("app data\n".utf8))
        #expect(fcntl(app, F_GETFD) >= 0)  // not closed by the writer either
        #expect(reasons.values == [.descriptorTaken(number)])
        // The same file, reopened at its path: one capture, nothing lost.
        let capture = try CaptureReader.read(path: path)
        #expect(capture.warnings.isEmpty && capture.closedCleanly)
        #expect(capture.stalls.map(\.begin.stallID) == [1])
        #expect(capture.stalls.first?.samples.map(\.timestampNs) == [3_000, 4_000])
    }

    @Test func aDeletedCaptureIsCreatedAgainStartingWithWhatItNeeds() throws {
        let path = Self.temporaryPath("deleted.stalls")
        defer { unlink(path) }
        let reasons = ReasonLog()
        let writer = try Self.startedWriter(path, reasons: reasons)
        #expect(unlink(path) == 0)
        try Self.finish(writer)
        #expect(reasons.values == [.deleted])
        // Header, process and image records, and the begin of the episode open at the deletion; then the rest.
        let capture = try CaptureReader.read(path: path)
        #expect(capture.warnings.isEmpty && capture.closedCleanly)
        #expect(capture.process?.pid == 42 && capture.images.count == 1)
        #expect(capture.stalls.first?.samples.map(\.timestampNs) == [4_000])
        #expect(capture.stalls.first?.isFinished == true)
    }

    @Test func aCaptureMovedAwayIsOpenedAgainAtThePathAndTheMovedFileStaysWhole() throws {
        let path = Self.temporaryPath("rotated.stalls"), rotated = path + ".1"
        defer {
            unlink(path)
            unlink(rotated)
        }
        let reasons = ReasonLog()
        let writer = try Self.startedWriter(path, reasons: reasons)
        #expect(rename(path, rotated) == 0)  // log rotation without copytruncate
        try Self.finish(writer)
        #expect(reasons.values == [.replaced])
        let old = try CaptureReader.read(path: rotated), new = try CaptureReader.read(path: path)
        #expect(old.stalls.first?.samples.map(\.timestampNs) == [3_000] && !old.closedCleanly)
        #expect(new.stalls.first?.samples.map(\.timestampNs) == [4_000] && new.closedCleanly)
        #expect(new.process?.pid == 42)
    }

    @Test func aReplacementWithOtherContentIsLeftAlone() throws {
        let path = Self.temporaryPath("replaced.stalls")
        defer { unlink(path) }
        let writer = try Self.startedWriter(path, reasons: ReasonLog())
        unlink(path)
        let notes = Array("someone's notes\n".utf8)
        #expect(FileManager.default.createFile(atPath: path, contents: Data(notes)))
        writer.append(Records.sample(1, 4_000))
        #expect(throws: CaptureWriteError.self) { try writer.flush() }
        #expect(throws: CaptureWriteError.self) { try writer.close() }
        #expect(Self.contents(path) == notes)
    }

    @Test func aFileDeletedBeforeItsFirstRecordsWereWrittenHasThemOnce() throws {
        let path = Self.temporaryPath("early.stalls")
        defer { unlink(path) }
        let writer = try CaptureWriter(path: path)
        writer.append(Records.process)
        writer.append(Records.image)
        unlink(path)
        writer.append(.close(timestampNs: 10_000))
        try writer.close()
        let capture = try CaptureReader.read(path: path)  // a second process record would be an error
        #expect(capture.process?.pid == 42 && capture.images.count == 1 && capture.closedCleanly)
    }

    static func capture(pid: Int32) throws -> [UInt8] {
        let path = Self.temporaryPath("part.stalls")
        defer { unlink(path) }
        let writer = try CaptureWriter(path: path)
        writer.append(.process(ProcessRecord(
            pid: pid, startMonotonicNs: 1, startWallNs: 1, thresholdNs: 1, sampleIntervalNs: 1, executable: "app")))
        writer.append(Records.begin(1))
        try writer.close()
        return Self.contents(path)
    }

    @Test func twoCapturesInOneFileAreAnErrorNamingWhereTheSecondStarts() throws {
        let first = try Self.capture(pid: 100), second = try Self.capture(pid: 200)
        let joined = #expect(throws: CaptureFormatError.self) { try CaptureReader.parse(first + second, source: "x") }
        #expect(joined?.offset == first.count)
        #expect(joined?.reason.contains("a second capture header") == true)
        // Without the second header (two processes appending records to one file): the second process record.
        let mixed = #expect(throws: CaptureFormatError.self) {
            try CaptureReader.parse(first + second.dropFirst(CaptureFormat.headerSize), source: "x")
        }
        #expect(mixed?.offset == first.count)
        #expect(mixed?.reason.contains("a second process record (pid 200, after pid 100)") == true)
    }
}
