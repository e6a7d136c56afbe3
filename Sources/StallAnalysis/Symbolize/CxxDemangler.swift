#if canImport(Glibc)
import Glibc
#endif

/// Demangles C++ symbols (`_ZL25_swift_getGenericMetadata...`, the Swift runtime's own functions among them) with
/// libstdc++'s `__cxa_demangle`, as perf does: `swift_getGenericMetadata(swift::MetadataRequest, ...)`. The
/// library is loaded at run time (`libstdc++.so.6`, on every machine with the Swift toolchain or Foundation), so a
/// static build demangles as the dynamic one; without it names stay mangled.
enum CxxDemangler {
    private typealias Demangle = @convention(c) (
        UnsafePointer<CChar>?, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Int>?, UnsafeMutablePointer<Int32>?
    ) -> UnsafeMutablePointer<CChar>?

    private static let function: Demangle? = {
        guard let library = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL),
            let symbol = dlsym(library, "__cxa_demangle")
        else { return nil }
        return unsafeBitCast(symbol, to: Demangle.self)
    }()

    /// Longest name handed to the demangler: real C++ symbols are far shorter; a name from a hostile file is not
    /// given to a recursive demangler whole.
    static let maxLength = 4096

    /// The demangled form of `name` (an Itanium C++ symbol, `_Z...`), or nil when it is none, does not demangle,
    /// or libstdc++ is not there.
    static func demangle(_ name: String) -> String? {
        guard name.hasPrefix("_Z"), name.utf8.count <= maxLength, let function else { return nil }
        var status: Int32 = 0
        guard let result = name.withCString({ function($0, nil, nil, &status) }) else { return nil }
        defer { free(result) }
        return status == 0 ? String(cString: result) : nil
    }
}
