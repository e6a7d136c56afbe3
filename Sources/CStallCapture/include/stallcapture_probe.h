// stallcapture_probe.h: what the blocked-on probe (BlockedOnProbe, SyscallDetail, WaitClassifier, MemoryStack,
// DispatchSyncLayout) reads about a thread without touching it: its system call state, its name, the descriptors
// and memory of this process (process_vm_readv), who holds the lock it waits for, and its stack built from its
// stack memory. Called from the watchdog thread, never from signal context. Nothing here signals a thread.
#ifndef STALLCAPTURE_PROBE_H
#define STALLCAPTURE_PROBE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/// What `/proc/self/task/<tid>/syscall` said.
typedef enum {
    /// The file could not be read or parsed.
    STALLCAP_SYSCALL_UNKNOWN = 0,
    /// "running": the thread was on a CPU; nothing else is known.
    STALLCAP_SYSCALL_RUNNING = 1,
    /// "-1 SP PC": the thread was stopped in user code (preempted, not in a system call); sp and pc are set.
    STALLCAP_SYSCALL_USER = 2,
    /// "NR ARG1..ARG6 SP PC": the thread was in system call `nr`; all fields are set.
    STALLCAP_SYSCALL_IN_CALL = 3,
} stallcap_syscall_kind;

/// One reading of a thread's system call state.
typedef struct {
    /// See stallcap_syscall_kind.
    int32_t kind;
    /// The system call number (STALLCAP_SYSCALL_IN_CALL only), else -1.
    int32_t nr;
    /// Its six arguments.
    uint64_t args[6];
    /// User stack pointer and instruction pointer (STALLCAP_SYSCALL_USER and STALLCAP_SYSCALL_IN_CALL).
    uint64_t sp;
    uint64_t pc;
} stallcap_syscall_state;

/// Parses the text of a `/proc/<pid>/task/<tid>/syscall` file (numbers in decimal or 0x-hex) into `state`.
/// Returns the kind (also stored in `state->kind`).
stallcap_syscall_kind stallcap_parse_syscall(const char *text, stallcap_syscall_state *state);

/// Reads and parses `/proc/self/task/<tid>/syscall`.
stallcap_syscall_kind stallcap_read_syscall(pid_t tid, stallcap_syscall_state *state);

/// Copies the thread's name (`/proc/self/task/<tid>/comm`, without the newline) into `name` (NUL-terminated).
/// Returns its length, or -1.
int stallcap_thread_comm(pid_t tid, char *name, size_t size);

/// True (1) when `tid` is a live thread of this process (`/proc/self/task/<tid>` exists).
int stallcap_thread_alive(pid_t tid);

/// The target of `/proc/self/fd/<fd>` (`pipe:[1234]`, `socket:[99]`, a path) into `target`, NUL-terminated.
/// Returns its length, or -1.
int stallcap_fd_target(int fd, char *target, size_t size);

/// The inode of the other end of the socket `fd` (inode `inode`) when it is a Unix socket (a socketpair's end, or a
/// connection's), asked of the kernel with one sock_diag request on a netlink socket of the caller's own (opened
/// and closed here; the reply is read without waiting); 0 when it is no Unix socket, has no peer, or the kernel
/// does not say. The first call probes sock_diag on a socketpair of its own; when that fails (no unix_diag in the
/// kernel, a security policy refusing it) no request is made again. Watchdog thread only.
uint32_t stallcap_unix_socket_peer(int fd, uint32_t inode);
/// Copies `size` bytes at `address` of this process into `buffer` with process_vm_readv (safe on unmapped or
/// stale addresses). Returns 0 when all bytes were read, -1 otherwise.
int stallcap_read_memory(uint64_t address, void *buffer, size_t size);

/// The start-up check of the glibc pthread_mutex_t layout relied on: locks a mutex of our own and verifies that
/// the int 8 bytes after the futex word (`__owner`) holds our tid, and 0 after unlocking. Done once; returns 1
/// when the layout holds (owners may be read), 0 when not.
int stallcap_mutex_layout_ok(void);

/// Finds the owner of the futex a thread waits on, given that thread's syscall state. Returns the owner's tid
/// when the call is a futex wait that looks like a glibc mutex lock wait on that word (FUTEX_WAIT for the value
/// 2 with a sane mutex kind, or FUTEX_LOCK_PI), the layout check passed, and the owner is a live thread of this
/// process other than `waiter`; 0 otherwise (a condition variable, a semaphore, an unknown lock).
pid_t stallcap_futex_mutex_owner(const stallcap_syscall_state *state, pid_t waiter);

/// Lists the threads of this process (`/proc/self/task`) into `tids`, at most `capacity`; `total` (optional) gets
/// how many there were. Returns the number written, or -1 when the directory cannot be read.
int stallcap_list_threads(pid_t *tids, int capacity, int *total);

/// The thread a `pthread_join` waits for, given the waiter's syscall state: a futex wait on the `tid` field of a
/// glibc thread descriptor (its offset learned from the caller's own descriptor; on x86_64 the descriptor must point
/// to itself) whose value is the value waited for and a live thread of this process other than `waiter` and the
/// caller (glibc sleeps on the joined thread's tid field until the thread exits). Returns its tid, or 0.
pid_t stallcap_futex_join_target(const stallcap_syscall_state *state, pid_t waiter);

/// The writer holding the glibc rwlock a futex wait sleeps on (a reader's or writer's wait on `__wrphase_futex` or
/// `__writers_futex`, for the values glibc waits for), when the layout check passed, `__readers` says a writer
/// holds it and `__cur_writer` is a live thread other than `waiter` and the caller. Returns its tid, or 0. The word is not proven to be an rwlock's: the caller names
/// the wait an rwlock only when nothing more certain (a mutex, a dispatch_sync) matched.
pid_t stallcap_futex_rwlock_writer(const stallcap_syscall_state *state, pid_t waiter);

/// Flag of `stallcap_stack_from_memory`: the stack was deeper than `max_frames`; outermost frames are missing.
#define STALLCAP_MEMSTACK_TRUNCATED 0x1u
/// Flag: at least one frame came from scanning words (not from a frame-pointer record), so it is approximate.
#define STALLCAP_MEMSTACK_SCANNED 0x2u
/// Flag: a frame-pointer chain was found and followed.
#define STALLCAP_MEMSTACK_CHAIN 0x4u
/// Flag (x86_64): the walk left the leaf with the code's unwind information (DWARF CFI), as a debugger does.
#define STALLCAP_MEMSTACK_UNWOUND 0x8u
/// Flag: the unwind-information walk stopped before the outermost frame at a function without unwind information
/// and without a word above its stack pointer that returns from a known call into it; frames above come from the scan.
#define STALLCAP_MEMSTACK_STOP_NO_INFO 0x10u
/// Flag: ... stopped at a frame whose rules need the frame pointer before any deeper frame saved it, and neither
/// the function's prologue nor a frame record above it gave it.
#define STALLCAP_MEMSTACK_STOP_FRAME_POINTER 0x20u
/// Flag: ... stopped at malformed or unsupported rules, an unreadable stack word, a caller's frame not above its
/// callee's, or a return address not after a call.
#define STALLCAP_MEMSTACK_STOP_BAD 0x40u

/// Most bytes above the stack pointer scanned for return addresses before the first frame record.
#define STALLCAP_MAX_SCAN_BYTES 65536u

/// Builds a sleeping thread's stack from its stack memory without touching the thread: `pc` is the leaf. On
/// x86_64 the stack is first walked with the code's unwind information (memwalk.c; frames inferred there set
/// STALLCAP_MEMSTACK_SCANNED, a stop sets a STALLCAP_MEMSTACK_STOP_* reason); from where that walk stops (or from
/// the leaf) words in [sp, sp + max_scan_bytes) are scanned upward for return addresses (in an executable mapping and
/// preceded by a call instruction) until a frame record (saved frame pointer, return address) is found whose
/// chain is then followed strictly upward, never past `stack_end` (0: the end of the mapping holding `sp`, found
/// in the same read of /proc/self/maps as the executable mappings). Memory is read with process_vm_readv only.
/// Writes up to `max_frames` addresses (leaf first) and returns their count; `flags` gets STALLCAP_MEMSTACK_*.
uint32_t stallcap_stack_from_memory(uint64_t pc, uint64_t sp, uint64_t stack_end, uint32_t max_scan_bytes,
                                    uintptr_t *frames, uint32_t max_frames, uint32_t *flags);

/// Holds one reading of /proc/self/maps for the stack-memory walks that follow, until stallcap_maps_release: a
/// snapshot of many threads reads the file once, not once per thread (the file grows with the thread count).
/// Mappings made or removed meanwhile are not seen (a walk then stops early or fails a read; it never faults).
/// Watchdog thread only.
void stallcap_maps_hold(void);
/// Ends stallcap_maps_hold: walks read the file again each time.
void stallcap_maps_release(void);

/// True (1) when `address` lies in an executable mapping of this process and the instruction before it is a
/// call (x86_64: E8 rel32 or FF /2; aarch64: BL, BLR, BLRAA...), i.e. it can be a return address. Reads
/// /proc/self/maps each time: for tests and single checks (the stack walk reads the map once).
int stallcap_is_return_address(uint64_t address);

/// True (1) when the call before `return_address` can have led to `inner` (an address in a deeper frame): its
/// target is unknown, or `inner` lies within 1 MiB (the largest function assumed) after a known target or after
/// where the unconditional jumps at that target lead (up to four of them: tail-jumping thunks). The stack scan's
/// check of each frame it infers, public for tests.
int stallcap_call_reaches(uint64_t return_address, uint64_t inner);

#ifdef __cplusplus
}
#endif

#endif
