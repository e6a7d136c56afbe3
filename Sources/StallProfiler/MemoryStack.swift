import CStallCapture
import StallFormat

/// A thread's stack read from its stack memory, starting at the stack and instruction pointers that
/// `/proc/self/task/<tid>/syscall` reports for a thread in a system call (or stopped in user code). The thread is
/// never touched, so a sleep it is in is never cut short; memory is read with process_vm_readv only (see
/// `stallcap_stack_from_memory`: frames are walked with the code's unwind information as a debugger does; where
/// that walk cannot go on, frames found by scanning are checked against the call before them).
enum MemoryStack {
    /// What one read gave besides the frames.
    struct Result {
        /// The frame count (0 when there were no pointers).
        var count: Int
        /// The stack was deeper than the buffer.
        var truncated: Bool
        /// Some frames were found by scanning stack words or following frame records, not by unwind information.
        var scanned: Bool
        /// Why the unwind-information walk stopped before the outermost frame: the sample flags
        /// (``SampleFlags/walkStoppedNoUnwindInfo``...); empty when it reached it.
        var stop: SampleFlags = []
    }

    /// Reads the stack of the thread `state` describes into `buffer`, leaf first.
    static func read(_ state: SyscallState, into buffer: inout [UInt]) -> Result {
        guard state.kind == .inCall || state.kind == .user, state.stackPointer != 0, state.programCounter != 0 else {
            return Result(count: 0, truncated: false, scanned: false)
        }
        var flags: UInt32 = 0
        let count = buffer.withUnsafeMutableBufferPointer {
            stallcap_stack_from_memory(
                state.programCounter, state.stackPointer, 0, STALLCAP_MAX_SCAN_BYTES, $0.baseAddress,
                UInt32($0.count), &flags)
        }
        let scanned = UInt32(STALLCAP_MEMSTACK_SCANNED) | UInt32(STALLCAP_MEMSTACK_CHAIN)
        var stop: SampleFlags = []
        if flags & UInt32(STALLCAP_MEMSTACK_STOP_NO_INFO) != 0 { stop.insert(.walkStoppedNoUnwindInfo) }
        if flags & UInt32(STALLCAP_MEMSTACK_STOP_FRAME_POINTER) != 0 { stop.insert(.walkStoppedFramePointer) }
        if flags & UInt32(STALLCAP_MEMSTACK_STOP_BAD) != 0 { stop.insert(.walkStoppedUnusable) }
        return Result(
            count: Int(count), truncated: flags & UInt32(STALLCAP_MEMSTACK_TRUNCATED) != 0, scanned: flags & scanned != 0,
            stop: stop)
    }

    /// Reads the stack of `tid` when it is in a system call and stays in the same one, at the same stack and
    /// instruction pointers, for the whole read (so the memory read is one consistent stack). Nil when it is not
    /// in a system call (it runs: the signal may sample it) or left it during the read.
    /// `state` gets the system call state the stack was read in.
    static func readIfInSystemCall(_ tid: Int32, into buffer: inout [UInt], state: inout SyscallState) -> Result? {
        let before = SyscallState(thread: tid)
        state = before
        guard before.kind == .inCall else { return nil }
        let result = read(before, into: &buffer)
        let after = SyscallState(thread: tid)
        guard result.count > 0, after.kind == .inCall, after.number == before.number,
            after.stackPointer == before.stackPointer, after.programCounter == before.programCounter
        else { return nil }
        return result
    }
}
