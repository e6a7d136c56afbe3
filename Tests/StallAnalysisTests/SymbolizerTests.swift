import Foundation
import StallFormat
import Testing

@testable import StallAnalysis

/// The symbolizer reads this very test binary's ELF symbols, placed at a made-up load address.
@Suite struct SymbolizerTests {
    /// A function of this binary whose address we can take.
    static let marker: @convention(c) () -> Int = { 42 }

    /// This executable as an image record at its real load address (from /proc/self/maps), and the marker's address.
    func ownImage() throws -> (ImageRecord, UInt64) {
        let image = ReportFixtures.ownImage
        #expect(image.start < image.end)
        return (image, UInt64(UInt(bitPattern: unsafeBitCast(Self.marker, to: Int.self))))
    }

    @Test func resolvesAFunctionOfThisBinaryFromItsFile() throws {
        let (image, address) = try ownImage()
        let symbolizer = Symbolizer(images: [image])
        let name = symbolizer.name(for: address + 1, isReturnAddress: false)
        #expect(name.contains("SymbolizerTests"))
        let mangled = Symbolizer(images: [image], options: { var o = SymbolizerOptions(); o.demangle = false; return o }())
        #expect(mangled.name(for: address, isReturnAddress: false).hasPrefix("$s"))
        var withOffsets = SymbolizerOptions()
        withOffsets.showOffsets = true
        #expect(Symbolizer(images: [image], options: withOffsets).name(for: address + 1, isReturnAddress: false).hasSuffix("+0x1"))
    }

    @Test func returnAddressesAreLookedUpOneByteEarlier() throws {
        let (image, address) = try ownImage()
        let symbolizer = Symbolizer(images: [image])
        // The byte after a function's first byte, as a return address, names the function itself.
        #expect(symbolizer.name(for: address + 1, isReturnAddress: true).contains("SymbolizerTests"))
        #expect(symbolizer.rootFirstNames(leafFirst: [address + 1, address + 1]).count == 2)
    }

    @Test func unknownAddressesAndMissingOrRebuiltFilesStayUnresolved() throws {
        let (image, address) = try ownImage()
        #expect(Symbolizer(images: [image]).name(for: 16, isReturnAddress: false) == "[unknown]")
        var gone = image
        gone.path = "/nonexistent/app"
        let missing = Symbolizer(images: [gone])
        #expect(missing.name(for: address, isReturnAddress: false) == "[app]")
        #expect(missing.warnings.count == 1)
        var rebuilt = image
        rebuilt.buildID = [1, 2, 3, 4]
        let mismatched = Symbolizer(images: [rebuilt])
        let fileHasBuildID = ELFSymbols(path: image.path).map { !$0.buildID.isEmpty } ?? false
        if fileHasBuildID {
            #expect(mismatched.name(for: address, isReturnAddress: false).hasPrefix("["))
            #expect(mismatched.warnings.first?.contains("build-id differs") == true)
        }
        var vdso = image
        vdso.path = "linux-vdso.so.1"
        #expect(Symbolizer(images: [vdso]).name(for: address, isReturnAddress: false) == "[vdso]")
    }

    @Test func pltStubsAreNamedAfterTheirTarget() throws {
        let elf = try #require(ELFSymbols(path: "/proc/self/exe"))
        #expect(!elf.pltRange.isEmpty)
        var named = 0
        for address in stride(from: elf.pltRange.lowerBound, to: elf.pltRange.upperBound, by: 16) {
            guard let symbol = elf.symbol(containing: address + 4) else { continue }
            #expect(symbol.isPLT)
            #expect(!symbol.name.isEmpty && symbol.name != "_init")
            named += 1
        }
        #expect(named > 0)
    }

    /// A stub of a Swift function reads demangled, with `@plt` after it (`Swift.print(...) -> ()@plt`).
    @Test func swiftPLTStubsAreDemangled() throws {
        let elf = try #require(ELFSymbols(path: "/proc/self/exe"))
        let (image, _) = try ownImage()
        let symbolizer = Symbolizer(images: [image])
        var swift = 0
        for address in stride(from: elf.pltRange.lowerBound, to: elf.pltRange.upperBound, by: 16) {
            guard let symbol = elf.symbol(containing: address + 4), symbol.name.hasPrefix("$s") else { continue }
            let name = symbolizer.name(for: image.loadBias + address + 4, isReturnAddress: false)
            #expect(name.hasSuffix("@plt") && !name.hasPrefix("$s") && name.contains("."), "\(symbol.name): \(name)")
            swift += 1
        }
        #expect(swift > 0, "no stub of a Swift function in the test binary's PLT")
    }

    @Test func nonELFFilesAreRejected() {
        #expect(ELFSymbols(path: "/etc/hostname") == nil)
        #expect(ELFSymbols(path: "/nonexistent") == nil)
        #expect(ELFSymbols(path: "/proc/self/exe")?.buildID.isEmpty == false)
    }
}

/// C++ symbols of captures (the Swift runtime's own functions) read as perf shows them.
@Suite struct CxxDemanglerTests {
    @Test func itaniumSymbolsDemangleAndOthersDoNot() {
        #expect(CxxDemangler.demangle("_ZNSt6vectorIiSaIiEE9push_backERKi")
            == "std::vector<int, std::allocator<int> >::push_back(int const&)")
        #expect(CxxDemangler.demangle("_ZL3fooi") == "foo(int)")
        #expect(CxxDemangler.demangle("_Zx!") == nil)  // not a valid mangling
        #expect(CxxDemangler.demangle("main") == nil)
        #expect(CxxDemangler.demangle("_ZL3fooi" + String(repeating: "i", count: CxxDemangler.maxLength)) == nil)
        // Swift first, then C++, else the name as it is.
        #expect(SwiftDemangler.symbolName("$s4main3fooyyF") == "main.foo() -> ()")
        #expect(SwiftDemangler.symbolName("_ZL3fooi") == "foo(int)")
        #expect(SwiftDemangler.symbolName("clock_gettime") == "clock_gettime")
    }
}
