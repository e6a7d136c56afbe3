/// The bytes of an image that has no file to read later, copied from memory: the vDSO (the kernel maps it into
/// every process; `perf` copies it too). The analyzer reads its symbols from these bytes, so its frames get names
/// (`__vdso_clock_gettime`) instead of `[vdso]`, on any machine.
public struct ImageContentsRecord: Sendable, Equatable {
    /// Where the bytes were mapped in the process: inside the range of the ``ImageRecord`` they belong to.
    public var address: UInt64
    /// The image's name as the loader gave it (`linux-vdso.so.1`).
    public var path: String
    /// The image as mapped (an ELF file: the vDSO is mapped whole).
    public var bytes: [UInt8]

    /// Largest image copied: a vDSO is 8 KiB on x86_64 and aarch64.
    public static let maxBytes = 256 * 1024

    /// Creates a record.
    public init(address: UInt64, path: String, bytes: [UInt8]) {
        self.address = address
        self.path = path
        self.bytes = bytes
    }
}
