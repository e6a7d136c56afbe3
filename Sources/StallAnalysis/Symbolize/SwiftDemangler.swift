#if canImport(Glibc)
import Glibc
#endif

/// Demangles Swift symbols with the runtime's own `swift_demangle` (exported by libswiftCore.so).
public enum SwiftDemangler {
    private typealias DemangleFunction = @convention(c) (
        UnsafePointer<CChar>?, Int, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Int>?, UInt32
    ) -> UnsafeMutablePointer<CChar>?

    private static let function: DemangleFunction? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "swift_demangle") else { return nil }
        return unsafeBitCast(symbol, to: DemangleFunction.self)
    }()

    /// True when `name` looks like a mangled Swift symbol (`$s`, `_$s`, `$S`, `_T0`, and their `@plt`-free forms).
    public static func isMangled(_ name: String) -> Bool {
        name.hasPrefix("$s") || name.hasPrefix("_$s") || name.hasPrefix("$S") || name.hasPrefix("_$S")
            || name.hasPrefix("_T0") || name.hasPrefix("$e") || name.hasPrefix("_$e")
    }

    /// The demangled form of `name`, or nil when it is not a Swift symbol or cannot be demangled.
    public static func demangle(_ name: String) -> String? {
        guard isMangled(name), let function else { return nil }
        return name.withCString { pointer -> String? in
            guard let result = function(pointer, strlen(pointer), nil, nil, 0) else { return nil }
            defer { free(result) }
            return String(cString: result)
        }
    }

    /// `demangle(name)`, or `name` itself when it does not demangle.
    public static func readable(_ name: String) -> String { demangle(name) ?? name }
}
