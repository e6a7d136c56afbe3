import Foundation
import Testing

@testable import StallFormat

/// The symbolication (13) and symbols (14) records `stallprof symbolicate` appends: bytes as docs/FORMAT.md gives
/// them, read back into the capture (several symbols records merge), a string index past the table refused with its
/// position, and the records an older reader skips.
@Suite struct SymbolsRecordTests {
    static let symbols = SymbolsRecord(entries: [
        0x401000: EmbeddedSymbol(symbol: "$s4main3fooyyF", offset: 0x10, frames: [
            EmbeddedSourceFrame(function: "inner", file: "/src/a.swift", line: 12),
            EmbeddedSourceFrame(function: "$s4main3fooyyF", file: "/src/a.swift", line: 40),
        ]),
        0x400100: EmbeddedSymbol(symbol: "memcpy", isPLT: true),
        0x400200: EmbeddedSymbol(symbol: nil),
    ])
    static let symbolication = SymbolicationRecord(
        wallNs: 1_700_000_000_000_000_000, machine: 62, appModules: ["main"],
        sources: [.init(image: "/bin/app", symbols: "/debug/app.debug", lines: "")])

    @Test func theSymbolsRecordsBytesAreTheDocumentedOnes() {
        var bytes: [UInt8] = []
        CaptureRecord.symbols(SymbolsRecord(entries: [0x10: EmbeddedSymbol(
            symbol: "f", offset: 2, isPLT: true, frames: [EmbeddedSourceFrame(function: nil, file: "f", line: 7)])]))
            .encode(into: &bytes)
        let strings: [UInt8] = [1, 0, 0, 0] + [1, 0, 0, 0, 0x66]  // one string, "f", shared by symbol and file
        let entry: [UInt8] = [0x10, 0, 0, 0, 0, 0, 0, 0] + [1, 0, 0, 0] + [2, 0, 0, 0, 0, 0, 0, 0] + [1]
            + [1, 0, 0, 0] + [0, 0, 0, 0] + [1, 0, 0, 0] + [7, 0, 0, 0]
        #expect(bytes[0] == 14)
        #expect(Array(bytes[5..<(bytes.count - 4)]) == strings + [1, 0, 0, 0] + entry)
    }

    @Test func theyReadBackIntoTheCaptureAndSeveralSymbolsRecordsMerge() throws {
        var records = CaptureRoundTripTests.sampleRecords()
        let more = SymbolsRecord(entries: [0x500000: EmbeddedSymbol(symbol: "bar")])
        records += [.symbolication(Self.symbolication), .symbols(Self.symbols), .symbols(more)]
        let bytes = CaptureRoundTripTests.encoded(records)
        #expect(try CaptureReader.records(bytes, source: "t").records == records)
        let capture = try CaptureReader.parse(bytes, source: "t")
        #expect(capture.symbolication == Self.symbolication)
        #expect(capture.symbols.count == 4)
        #expect(capture.symbols[0x401000] == Self.symbols.entries[0x401000])
        #expect(capture.symbols[0x400200]?.symbol == nil)
        #expect(capture.symbols[0x500000]?.symbol == "bar")
        // CaptureFormat.file(of:) writes the same bytes as the writer's framing.
        #expect(CaptureFormat.file(of: records) == bytes)
    }

    @Test func aStringIndexPastTheTableIsBadDataAtItsPosition() {
        var payload: [UInt8] = []
        payload.appendLE(UInt32(0))  // no strings
        payload.appendLE(UInt32(1))  // one entry
        payload.appendLE(UInt64(0x10))
        payload.appendLE(UInt32(3))  // symbol: string 3 of 0
        payload += [UInt8](repeating: 0, count: 13)
        let bytes = CaptureFormat.header + ThreadsRecordTests.framed(type: 14, payload)
        do {
            _ = try CaptureReader.parse(bytes, source: "s.stalls")
            Issue.record("a symbols record naming a missing string was accepted")
        } catch {
            // header (16), type and length (5), string count (4), entry count (4), address (8).
            #expect("\(error)".contains("s.stalls: byte 37: string 3 of a symbols record that has 0"), "\(error)")
        }
    }

    @Test func countsLargerThanTheRecordAreBadData() {
        for payload: [UInt8] in [[0xff, 0xff, 0xff, 0x7f], [0, 0, 0, 0, 0xff, 0xff, 0, 0]] {
            let bytes = CaptureFormat.header + ThreadsRecordTests.framed(type: 14, payload)
            #expect(throws: CaptureFormatError.self) { try CaptureReader.parse(bytes, source: "s") }
        }
        let bytes = CaptureFormat.header + ThreadsRecordTests.framed(type: 13, [0, 0, 0, 0, 0, 0, 0, 0, 62, 0, 9, 9, 9, 9])
        #expect(throws: CaptureFormatError.self) { try CaptureReader.parse(bytes, source: "s") }
    }
}
