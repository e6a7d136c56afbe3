#if canImport(Glibc)
import Glibc
#endif
import CStallDwarf
import StallFormat

/// One ELF file's DWARF, read through libdw (CStallDwarf); closed when released. Opened once per process and path
/// (``shared(path:)``): captures folded in parallel that name one library read its DWARF once (glibc's debug file
/// is compressed: reading it costs tens of milliseconds). Lookups are serialized, since a libdw handle is not safe
/// to use from two threads at once; each symbolizer caches their results per address.
final class DwarfLines: @unchecked Sendable {
    private let file: OpaquePointer
    /// The file read.
    let path: String
    private let lock = PthreadLock()
    /// Files opened, by path and identity; under ``openedLock``. A pthread mutex, not Synchronization's `Mutex`:
    /// ThreadSanitizer knows the one and not the other (it reported a race on a `Mutex`'s contents).
    nonisolated(unsafe) private static var opened: [String: DwarfLines?] = [:]
    private static let openedLock = PthreadLock()

    private init?(opening path: String) {
        guard let file = stalldw_open(path) else { return nil }
        self.file = file
        self.path = path
    }

    deinit { stalldw_close(file) }

    /// The DWARF of the file at `path`, opened on first use; nil when libdw is not on the machine, or the file
    /// has no DWARF with code addresses.
    static func shared(path: String) -> DwarfLines? {
        // By path and the file's identity: a file rebuilt at the same path is another file.
        var info = stat()
        let key = stat(path, &info) == 0
            ? "\(path)\u{0}\(info.st_dev):\(info.st_ino):\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)" : path
        return openedLock.withLock {
            if let known = opened[key] { return known }
            let made = DwarfLines(opening: path)
            opened[key] = .some(made)
            return made
        }
    }

    /// True when libdw could be loaded: without it no file has lines.
    static var isAvailable: Bool { stalldw_available() != 0 }

    /// The frames at `address` (file-relative), innermost first, as libdw gives them: (mangled or plain function
    /// name, file, line); empty when the file has no line for it.
    func frames(at address: UInt64) -> [(function: String?, file: String?, line: Int)] {
        lock.withLock {
            var buffer = [stalldw_frame](repeating: stalldw_frame(), count: 65)  // the shim's 64 scopes, and one
            let count = Int(stalldw_lookup(file, address, &buffer, Int32(buffer.count)))
            return buffer[0..<count].map { frame in
                // A relative file is relative to its compile unit's directory (llvm-symbolizer joins them too).
                var file = frame.file.map { String(cString: $0) }
                if let relative = file, !relative.hasPrefix("/"), !relative.hasPrefix("<"), let directory = frame.directory.map({ String(cString: $0) }),
                   !directory.isEmpty
                {
                    file = directory.hasSuffix("/") ? directory + relative : directory + "/" + relative
                }
                // Swift's `<compiler-generated>` is no file anyone can open.
                if file?.hasSuffix("<compiler-generated>") == true { file = nil }
                return (frame.function.map { String(cString: $0) }, file, Int(frame.line))
            }
        }
    }
}

/// A pthread mutex: what ThreadSanitizer sees as synchronization.
final class PthreadLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init() { pthread_mutex_init(mutex, nil) }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// `body`'s result, run with the mutex held.
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
