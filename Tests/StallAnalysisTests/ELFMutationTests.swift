import Foundation
import Testing

@testable import StallAnalysis

/// A real ELF file with its header and section headers overwritten by random values (a fixed seed): parsing and
/// lookups never trap and never read outside the file.
@Suite struct ELFMutationTests {
    @Test func mutatedSectionHeadersNeverTrap() throws {
        let original = try [UInt8](Data(contentsOf: URL(fileURLWithPath: "/usr/bin/true")))
        try #require(original.count > 4096 && original[0] == 0x7f)
        let sectionTable = Int(original[0x28..<0x30].reversed().reduce(0) { $0 << 8 | UInt64($1) })
        let tableEnd = min(original.count, sectionTable + 64 * 40)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("elf-mutation-\(getpid())").path
        defer { unlink(path) }
        var random = XorShift(state: 9)  // deterministic, so a failure reproduces
        var parsed = 0
        for round in 0..<400 {
            var bytes = original
            for _ in 0..<(1 + round % 8) {
                // Mostly section-header fields, sometimes the ELF header's table fields.
                let inHeader = random.next() % 5 == 0
                let at = inHeader ? [0x28, 0x3A, 0x3C, 0x3E][Int(random.next() % 4)]
                    : sectionTable + Int(random.next() % UInt64(max(1, tableEnd - sectionTable - 8)))
                let width = inHeader && at != 0x28 ? 2 : 8
                let choices: [UInt64] = [.max, 1 << 63, UInt64(original.count), random.next(), random.next() % 4096]
                let value = choices[Int(random.next() % 5)]
                for index in 0..<width where at + index < bytes.count {
                    bytes[at + index] = UInt8(truncatingIfNeeded: value >> UInt64(8 * index))
                }
            }
            if round % 10 == 9 { bytes = Array(bytes.prefix(Int(random.next() % UInt64(bytes.count)))) }  // truncated
            #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
            guard let elf = ELFSymbols(path: path) else { continue }
            parsed += 1
            for _ in 0..<20 { _ = elf.symbol(containing: random.next() % 0x10_0000) }
            _ = elf.symbol(containing: .max)
        }
        #expect(parsed > 0)  // the mutations do not only produce files rejected outright
    }
}

/// xorshift64*: the test's own seeded generator (the bisect simulations' SplitMix64 lives in StallBisect).
struct XorShift {
    var state: UInt64

    mutating func next() -> UInt64 {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return state &* 0x2545_F491_4F6C_DD1D
    }
}
