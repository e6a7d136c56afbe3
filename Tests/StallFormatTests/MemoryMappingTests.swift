import Foundation
import Testing

@testable import StallFormat

/// The one Swift reader of `/proc/<pid>/maps` lines.
@Suite struct MemoryMappingTests {
    @Test func mapsLinesAreReadWithPathsThatHoldSpaces() {
        let text = """
            555555554000-555555556000 r--p 00000000 08:01 1234                       /opt/my app/bin/app
            555555556000-55555555a000 r-xp 00002000 08:01 1234                       /opt/my app/bin/app
            7ffff7fc1000-7ffff7fc3000 r-xp 00000000 00:00 0                          [vdso]
            7ffff7fc4000-7ffff7fc5000 rw-p 00000000 00:00 0 
            not a line
            """
        #expect(MemoryMapping.parse(text) == [
            MemoryMapping(addresses: 0x5555_5555_4000..<0x5555_5555_6000, fileOffset: 0, path: "/opt/my app/bin/app"),
            MemoryMapping(addresses: 0x5555_5555_6000..<0x5555_5555_a000, fileOffset: 0x2000, path: "/opt/my app/bin/app",
                          executable: true),
            MemoryMapping(addresses: 0x7fff_f7fc_1000..<0x7fff_f7fc_3000, fileOffset: 0, path: "[vdso]", executable: true),
        ])
    }

    @Test func thisProcessMapsItsExecutable() throws {
        let executable = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
        let mappings = MemoryMapping.current().filter { $0.path == executable }
        #expect(mappings.contains { $0.fileOffset == 0 })
        #expect(mappings.allSatisfy { !$0.addresses.isEmpty })
    }
}
