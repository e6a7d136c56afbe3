// The calling thread's retired user-mode instructions, from perf_event_open, where the kernel and the CPU allow
// it (a guest without a virtual PMU says ENOENT; perf_event_paranoid 3 says EACCES). Optional: the slowdown
// benchmark's main figure is statistical, from CPU time; this one, when there is a counter, is the handler's own
// instructions per unit of work, free of timing noise but blind to the kernel's part of a sample (the timer, the
// signal's delivery and return), so it is a lower bound.
import Foundation

final class InstructionCounter {
    private let fd: Int32

    /// Opens a counter of the calling thread's user instructions (exclude_kernel, exclude_hv), counting from now;
    /// nil with `failure` set when there is none.
    init?(failure: inout String) {
        // struct perf_event_attr (linux/perf_event.h, PERF_ATTR_SIZE_VER5 onwards: 112 bytes; zeros beyond are
        // fine): type u32 @0, size u32 @4, config u64 @8, flag bits u64 @40.
        var attr = [UInt8](repeating: 0, count: 128)
        func put<T>(_ value: T, at offset: Int) {
            withUnsafeBytes(of: value) { for (i, byte) in $0.enumerated() { attr[offset + i] = byte } }
        }
        put(UInt32(0), at: 0)  // PERF_TYPE_HARDWARE
        put(UInt32(attr.count), at: 4)
        put(UInt64(1), at: 8)  // PERF_COUNT_HW_INSTRUCTIONS
        put(UInt64(1 << 5 | 1 << 6), at: 40)  // exclude_kernel, exclude_hv; enabled, not inherited
        #if arch(x86_64)
            let number = 298
        #elseif arch(arm64)
            let number = 241
        #else
            failure = "perf_event_open: unknown system call number on this architecture"
            return nil
        #endif
        // syscall(2) is variadic, which Swift does not import; on x86_64 and arm64 Linux a variadic callee takes
        // these integer arguments where a fixed-argument one would (glibc's syscall is assembly that never reads
        // the vector-register count).
        typealias Syscall = @convention(c) (Int, UnsafeRawPointer, Int32, Int32, Int32, UInt) -> Int
        guard let symbol = dlsym(nil, "syscall") else {
            failure = "perf_event_open: no syscall symbol"
            return nil
        }
        let result = attr.withUnsafeBytes {
            unsafeBitCast(symbol, to: Syscall.self)(number, $0.baseAddress!, 0, -1, -1, 0)  // this thread, any CPU
        }
        guard result >= 0 else {
            failure = "perf_event_open(instructions, user only): \(String(cString: strerror(errno)))"
            return nil
        }
        fd = Int32(result)
    }

    deinit { close(fd) }

    /// Instructions counted so far (0 when the read fails).
    func read() -> UInt64 {
        var value: UInt64 = 0
        return Glibc.read(fd, &value, 8) == 8 ? value : 0
    }
}
