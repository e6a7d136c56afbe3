import FoundationEssentials
import StallFormat
#if canImport(Glibc)
import Glibc
#endif

/// The journal of a bisection (`--journal`): JSON Lines. The first line is a header naming the flags and the
/// command; each further line is one ``BisectTrial``, written with a single `write(2)` as soon as the run ends,
/// so a killed bisection loses at most the run in progress. `--resume` replays the trials, and the search runs
/// only what is still missing.
public final class BisectJournal {
    /// The first line of a journal.
    public struct Header: Codable, Equatable, Sendable {
        /// Always `stallprof.bisect-journal/v1`.
        public var schema = "stallprof.bisect-journal/v1"
        /// The flags searched, in order.
        public var flags: [String]
        /// The command run.
        public var command: [String]
    }

    /// Where the journal is.
    public let path: String
    private let fd: Int32

    /// Reads the trials of the journal at `path`, checking it was written for the same flags and command.
    /// Returns no trials when the file does not exist. A last line cut short by a kill is ignored.
    public static func load(path: String, flags: [String], command: [String]) throws -> [BisectTrial] {
        guard access(path, F_OK) == 0 else { return [] }
        let text: String
        do {
            text = String(decoding: try FileReader.contents(of: path), as: UTF8.self)
        } catch let error as FileReadError {
            throw StallError.input(path: path, reason: error.reason)  // errno as it was, not after close
        }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: true)
        if !text.hasSuffix("\n"), !lines.isEmpty { lines.removeLast() }
        guard let first = lines.first else { return [] }
        let decoder = JSONDecoder()
        let header = try? decoder.decode(Header.self, from: Data(first.utf8))
        guard let header, header.schema == Header(flags: [], command: []).schema else {
            throw StallError.badData(path: path, position: "line 1", reason: "not a stallprof bisect journal")
        }
        guard header.flags == flags, header.command == command else {
            throw StallError.usage(
                "\(path) was written for --flags \(header.flags.joined(separator: ",")) -- "
                    + "\(header.command.joined(separator: " ")); give the same flags and command to resume")
        }
        return try lines.dropFirst().enumerated().map { index, line in
            do { return try decoder.decode(BisectTrial.self, from: Data(line.utf8)) } catch {
                throw StallError.badData(path: path, position: "line \(index + 2)", reason: "not a trial: \(error)")
            }
        }
    }

    /// Opens the journal for writing: appends when `resuming` and the file has a header (dropping a last line
    /// cut short by a kill), else starts it anew.
    public init(path: String, flags: [String], command: [String], resuming: Bool) throws {
        self.path = path
        let existing = resuming ? Array((FileReader.text(of: path) ?? "").utf8) : []
        let complete = existing.lastIndex(of: UInt8(ascii: "\n")).map { $0 + 1 } ?? 0
        let fresh = complete == 0
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (fresh ? O_TRUNC : 0), 0o644)
        guard fd >= 0 else { throw StallError.output(path: path, reason: String(cString: strerror(errno))) }
        if complete < existing.count && ftruncate(fd, off_t(complete)) != 0 {
            throw StallError.output(path: path, reason: String(cString: strerror(errno)))
        }
        if fresh { try writeLine(Header(flags: flags, command: command)) }
    }

    deinit { close(fd) }

    /// Appends one trial.
    public func append(_ trial: BisectTrial) throws { try writeLine(trial) }

    private func writeLine(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let line = Array(try encoder.encode(value)) + [UInt8(ascii: "\n")]
        let written = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == line.count else {
            throw StallError.output(path: path, reason: String(cString: strerror(errno)))
        }
    }
}
