#if canImport(Glibc)
import Glibc
#endif
import CSwiftDemangle
import StallFormat

/// Demangles Swift symbols with the runtime's own `swift_demangle`, linked in (libswiftCore.so, or the static
/// runtime of a `--static-swift-stdlib` build: the same names either way).
public enum SwiftDemangler {
    /// True when `name` looks like a mangled Swift symbol (`$s`, `_$s`, `$S`, `_T0`, and their `@plt`-free forms).
    public static func isMangled(_ name: String) -> Bool {
        name.hasPrefix("$s") || name.hasPrefix("_$s") || name.hasPrefix("$S") || name.hasPrefix("_$S")
            || name.hasPrefix("_T0") || name.hasPrefix("$e") || name.hasPrefix("_$e")
    }

    /// The demangled form of `name`, or nil when it is not a Swift symbol or cannot be demangled.
    public static func demangle(_ name: String) -> String? {
        guard isMangled(name) else { return nil }
        return name.withCString { pointer -> String? in
            guard let result = stallprof_swift_demangle(pointer, strlen(pointer), nil, nil, 0) else { return nil }
            defer { free(result) }
            return String(cString: result)
        }
    }

    /// `demangle(name)`, or `name` itself when it does not demangle.
    public static func readable(_ name: String) -> String { demangle(name) ?? name }

    /// A symbol of a binary as a person reads it: Swift demangled, else C++ (``CxxDemangler``), else as it is.
    static func symbolName(_ name: String) -> String { demangle(name) ?? CxxDemangler.demangle(name) ?? name }

    private typealias SimplifyFunction = @convention(c) (UnsafePointer<CChar>?, UnsafeMutablePointer<CChar>?, Int) -> Int

    /// `swift_demangle_getSimplifiedDemangledName` from the toolchain's libswiftDemangle.so (not part of the
    /// runtime), found next to the runtime's libswiftCore.so; nil when it is not installed.
    private static let simplifyFunction: SimplifyFunction? = {
        var candidates = ["libswiftDemangle.so"]
        // The runtime this process uses, from the kernel's map of it:
        // <toolchain>/usr/lib/swift/linux/libswiftCore.so -> <toolchain>/usr/lib/libswiftDemangle.so
        if let path = MemoryMapping.current().first(where: { $0.path.hasSuffix("/libswiftCore.so") })?.path {
            let directory = path.split(separator: "/", omittingEmptySubsequences: false).dropLast(3).joined(separator: "/")
            candidates.insert(directory + "/libswiftDemangle.so", at: 0)
        }
        for candidate in candidates {
            if let library = dlopen(candidate, RTLD_NOW | RTLD_LOCAL),
                let symbol = dlsym(library, "swift_demangle_getSimplifiedDemangledName")
            {
                return unsafeBitCast(symbol, to: SimplifyFunction.self)
            }
        }
        return nil
    }()

    /// True when simplified names are available (the Swift toolchain's libswiftDemangle.so was found).
    public static var canSimplify: Bool { simplifyFunction != nil }

    /// The simplified demangled form of `name`, as `swift demangle --simplified` prints it
    /// (`static BusyWork.descend(_:until:)`): no module names, argument labels without types. Nil when `name` is
    /// not a Swift symbol, does not demangle, or libswiftDemangle.so is not available.
    public static func simplified(_ name: String) -> String? {
        guard isMangled(name), let simplifyFunction else { return nil }
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = simplifyFunction(name, &buffer, buffer.count)
        guard length > 0, length < buffer.count else { return nil }
        return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
