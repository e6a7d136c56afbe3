import CStallCapture

/// A thread's stack read from its stack memory, starting at the stack and instruction pointers that
/// `/proc/self/task/<tid>/syscall` reports for a thread in a system call (or stopped in user code). The thread is
/// never touched, so a sleep it is in is never cut short; memory is read with process_vm_readv only (see
/// `stallcap_stack_from_memory`: frame-pointer frames are exact, frames found by scanning are checked against
/// the call before them).
enum MemoryStack {
    /// Reads the stack of the thread `state` describes into `buffer`, leaf first. Returns the frame count (0
    /// when there were no pointers) and whether the stack was deeper than the buffer.
    static func read(_ state: SyscallState, into buffer: inout [UInt]) -> (count: Int, truncated: Bool) {
        guard state.kind == .inCall || state.kind == .user, state.stackPointer != 0, state.programCounter != 0 else {
            return (0, false)
        }
        var flags: UInt32 = 0
        let count = buffer.withUnsafeMutableBufferPointer {
            stallcap_stack_from_memory(
                state.programCounter, state.stackPointer, 0, STALLCAP_MAX_SCAN_BYTES, $0.baseAddress,
                UInt32($0.count), &flags)
        }
        return (Int(count), flags & UInt32(STALLCAP_MEMSTACK_TRUNCATED) != 0)
    }

    /// Reads the stack of `tid` when it is in a system call and stays in the same one, at the same stack and
    /// instruction pointers, for the whole read (so the memory read is one consistent stack). Nil when it is not
    /// in a system call (it runs: the signal may sample it) or left it during the read.
    /// `state` gets the system call state the stack was read in.
    static func readIfInSystemCall(
        _ tid: Int32, into buffer: inout [UInt], state: inout SyscallState
    ) -> (count: Int, truncated: Bool)? {
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
