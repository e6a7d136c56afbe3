// stallcapture_watchdog.h: what the watchdog thread (StallWatchdog, WatchdogLoop) needs from C: its sleep between
// checks and its deep sleep on the run loop's epoll set, readings of the main thread's run-loop wait, the map of
// loaded images, and the capture file a forked child must close. None of these run in signal context.
#ifndef STALLCAPTURE_WATCHDOG_H
#define STALLCAPTURE_WATCHDOG_H

#include "stallcapture_probe.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

// MARK: The sleep between checks (wdsleep.c)

/// The watchdog thread's sleep between checks: a futex word of this process (one watchdog at a time). Read the
/// word with stallcap_wd_sequence() before deciding to sleep, then sleep with that value: a stallcap_wd_wake()
/// in between makes the sleep return at once, so no wake is lost.
uint32_t stallcap_wd_sequence(void);
/// Sleeps at most `timeout_ns` (relative, CLOCK_MONOTONIC) unless the word no longer equals `seen` or is
/// changed meanwhile. Returns early on a wake or a signal; the caller re-checks its state either way.
void stallcap_wd_sleep(uint32_t seen, int64_t timeout_ns);
/// Changes the word and wakes the watchdog thread from either sleep (this one or stallcap_wd_deep_sleep); any
/// thread.
void stallcap_wd_wake(void);

// MARK: The deep sleep on the run loop's epoll set (wddeep.c)

/// Watches (a duplicate of) the run loop's epoll descriptor `fd` in an epoll set of the watchdog's own. Returns 0,
/// or -1 (nothing watched).
int stallcap_wd_watch(int fd);
/// Arms the watch for one wake (EPOLLONESHOT). Returns 0, or -1.
int stallcap_wd_arm(void);
/// Creates the deep sleep's set if there is none and proves it the watchdog's, for a deep sleep that watches no run
/// loop (only a CPU clock: stallcap_wd_arm_cpu). Returns 0, or -1.
int stallcap_wd_arm_set(void);
/// Makes CPU time wake the next deep sleep too (the set's readiness is lost when the main thread drains it first;
/// under dispatchMain() there is no set to watch): blocks `signo` on the calling (watchdog) thread and arms a
/// one-shot timer that expires after `after_ns` more of thread `tid`'s CPU time (tid 0: of the whole process's)
/// and sends `signo` to the calling thread, read through a signalfd in the deep sleep's set. The kernel checks it
/// at scheduler ticks that find such a thread running. Call after stallcap_wd_arm or stallcap_wd_arm_set; undo
/// with stallcap_wd_disarm_cpu. Returns 0, or -1 (nothing armed, the mask unchanged).
int stallcap_wd_arm_cpu(pid_t tid, int signo, long after_ns);
/// Disarms that timer, drains its signal and restores the calling thread's signal mask; nothing when not armed.
void stallcap_wd_disarm_cpu(void);
/// Sleeps until the watched set is ready, stallcap_wd_wake, or `timeout_ns`; returns at once when the watchdog's
/// futex word (stallcap_wd_sequence) no longer equals `seen`. Returns 1 when the watched set woke it, 2 when the
/// watched thread's CPU time did (stallcap_wd_arm_cpu), 3 when a watched event loop's set did
/// (stallcap_wd_watch_target), 0 otherwise.
int stallcap_wd_deep_sleep(uint32_t seen, int64_t timeout_ns);
/// Sleeps deeply again with everything armed as the previous deep sleep left it: call only while the CPU timer is
/// still armed (stallcap_wd_arm_cpu, not yet disarmed) and after a deep sleep that returned 0. A run loop's watch
/// must not have fired either: the caller saw the main thread's CPU clock where it was when the timer was armed. A
/// timer that fired meanwhile has readied the signalfd, so the rest returns 2 at once. Proves the set and its
/// signalfd still ours with three system calls instead of re-arming them (about 15). Returns as
/// stallcap_wd_deep_sleep, or -1 when they are not the watchdog's any more (lost: nothing slept).
int stallcap_wd_rest(uint32_t seen, int64_t timeout_ns);
/// 1 when the armed watch cannot lose the run loop set's readiness to a main thread that drains it first: an AIO
/// poll of the set is in flight beside the epoll watch (wdaio.c; collected first: a finished poll watches nothing);
/// 0 when the epoll watch is alone. Watchdog thread.
int stallcap_wd_watch_holds(void);
/// Watches the epoll set `fd` that event loop thread `tid` waits in, its CPU clock at `since`, for the next deep
/// sleep: an AIO poll (in `slot`, 1 to 64: one per watched target) of a duplicate of it, closed once the poll
/// holds the set, whose completion wakes the sleep (it returns 3). A poll still in flight in that slot for the same
/// `tid`, `fd` and `since` is kept (a thread that ran since may wait in another set under the same number). Call
/// after stallcap_wd_arm or stallcap_wd_arm_set. Returns 0 when the poll is in flight, -2 when another poll was
/// (cancelled: the next arming watches), -1 otherwise (no AIO, `fd` not an epoll set).
int stallcap_wd_watch_target(int slot, pid_t tid, int fd, uint64_t since);
/// 1 while that poll is in flight (the set was not ready since it was submitted), else 0.
int stallcap_wd_target_watch_holds(int slot, pid_t tid, int fd, uint64_t since);
/// Cancels the poll in `slot` (the target is gone, or its thread waits elsewhere now).
void stallcap_wd_unwatch_target(int slot);
/// Watches libdispatch's event set `fd` (stallcap_dispatch_event_set) for the next deep sleep on the main queue:
/// an AIO poll of a duplicate of it whose completion wakes the sleep (it returns 1), never an item of the sleep's
/// epoll set (nested, it would change libdispatch's own epoll_ctl: wddispatch.c). Call after stallcap_wd_arm_set.
/// Returns 0 when the poll is in flight; when the set is not watched: -2 when a run loop's poll was still in
/// flight (cancelled: the next arming watches), -3 when this process has no AIO (it never will), -1 otherwise
/// (`fd` no longer that set, the deep sleep's eventfd taken). (wddispatch.c)
int stallcap_wd_watch_dispatch(int fd);
/// 1 while that poll is in flight (it has not completed: the set was not ready since the arming), else 0.
int stallcap_wd_dispatch_watch_holds(void);
/// Closes the deep sleep's descriptors (the watchdog ended, or in a forked child, whose copies are the parent's),
/// each only if it is still the watchdog's, the duplicate of libdispatch's set included. (wddispatch.c, wddeep.c)
void stallcap_wd_forget(void);
/// The deep sleep's epoll set or stop pipe was closed by someone else (and perhaps reused): they were forgotten,
/// untouched, and the watchdog does not sleep deeply for the rest of this run.
#define STALLCAP_LOST_DEEP_SET 1
/// The watchdog's duplicate of the run loop's epoll descriptor was closed by someone else: forgotten, untouched
/// (a new duplicate is made at the next deep sleep).
#define STALLCAP_LOST_WATCHED 2
/// The STALLCAP_LOST_* bits found since the last call, cleared. Watchdog thread.
int stallcap_wd_take_lost(void);

// MARK: libdispatch's main queue, read in place (mainqueue.c)

/// Three words of libdispatch's main queue, as read at one moment (each atomically, not together).
typedef struct {
    /// dq_state: the drain lock's owner (low 30 bits: a thread id), enqueued (bit 31), dirty (bit 39), in barrier
    /// (bit 54), among others.
    uint64_t state;
    /// dq_items_tail: the last block queued, 0 when none is.
    uint64_t tail;
    /// dq_atomic_flags: thread-bound (0x40000) until dispatchMain() hands the queue to the pool.
    uint32_t flags;
} stallcap_main_queue_reading;

/// 1 when libdispatch's main queue has the layout stallcap_main_queue_read reads (checked against its serial
/// number and the label pointer dispatch_queue_get_label returns), 0 otherwise (no libdispatch, another layout, a
/// 32-bit process).
int stallcap_main_queue_layout(void);
/// Reads the main queue's state, last queued block and flags, the tail between two reads of the state that agree.
/// Returns 0, or -1 without libdispatch or when the state kept changing. Meaningful only when
/// stallcap_main_queue_layout() is 1.
int stallcap_main_queue_read(stallcap_main_queue_reading *reading);

/// The libdispatch queue the calling block runs on (`dispatch_get_current_queue`), NULL outside one or without
/// libdispatch. A serial queue's ping block records it, so the watchdog can read that queue's drain lock.
const void *stallcap_current_queue(void);

/// Reads the queue `queue` (from stallcap_current_queue, kept alive by its owner) like stallcap_main_queue_read:
/// 0, or -1 when it is NULL, its label field is not the one dispatch_queue_get_label returns (the layout is not the
/// one read), or its state kept changing.
int stallcap_queue_read(const void *queue, stallcap_main_queue_reading *reading);

/// The executable segment [lo, hi) of the loaded object that holds `address`: 0, ENOENT when none does (or
/// `address` is NULL), ENOTSUP when it is the executable itself (a library linked statically into it cannot be
/// told from the app). Takes the loader's lock: never on the watchdog thread.
int stallcap_object_code(const void *address, uintptr_t *lo, uintptr_t *hi);

/// libdispatch's code and the C library's, [lo, hi) each: what tells a worker running work from an idle one.
typedef struct {
    uintptr_t dispatch_lo, dispatch_hi, libc_lo, libc_hi;
} stallcap_worker_code_t;

/// Finds the code of libdispatch and of the C library: 0, or an error of stallcap_object_code. Takes the loader's
/// lock: call it on an app thread, never on the watchdog's.
int stallcap_worker_code(stallcap_worker_code_t *code);

// MARK: The main thread's run-loop wait (waitfds.c)

/// libdispatch's descriptor that wakes a run loop when work is posted to the main queue, or -1 (no libdispatch).
/// Call it only once a run loop services the main queue (it creates the descriptor otherwise).
int stallcap_main_queue_fd(void);
/// True (1) when the poll-family wait `state` (poll, ppoll, select, pselect6, epoll_wait, epoll_pwait,
/// epoll_pwait2) includes descriptor `fd`: among its pollfds (read with process_vm_readv), in its read set, or in
/// an epoll set it waits on (from /proc/self/fdinfo, one nested set deep); 0 otherwise.
int stallcap_wait_includes_fd(const stallcap_syscall_state *state, int fd);
/// The run loop's own epoll descriptor when the wait `state` is a wait on that one descriptor without a timeout
/// (ppoll on one pollfd, or epoll_wait/epoll_pwait with timeout -1), else -1.
int stallcap_wait_single_epoll(const stallcap_syscall_state *state);
/// What a wake would change in the wait `state` (a thread's system call, read just before): for epoll_wait and
/// epoll_pwait, or a poll or ppoll of one descriptor that is an epoll set, whether that set is ready (0 or 1, polled with a zero timeout through a duplicate proven an epoll
/// set); for a futex wait, the word's value. Stores it in `*token` and returns 0, or -1 when the wait is of another
/// kind (a poll of several descriptors) or cannot be read. (waitwake.c)
int stallcap_wait_token(const stallcap_syscall_state *state, uint64_t *token);
/// 1 when the tokens read just before and just after a ping's post (stallcap_wait_token) say the post readied the
/// wait `state`: a futex word changed, or an epoll set that was not ready became ready; else 0.
int stallcap_wait_stirred(const stallcap_syscall_state *state, uint64_t before, uint64_t after);
/// libdispatch's event set: the epoll descriptor its manager thread waits in without a timeout (timers and
/// sources start there), recognized by libdispatch's wake-up eventfd registered in it (EPOLLIN | EPOLLFREE, data
/// 1, read from /proc/self/fdinfo); -1 when no thread (of the first 256) waits in such a set: no libdispatch, no
/// set made yet (libdispatch makes it with its first source, timer or manager wake-up), a manager busy at that
/// moment, or a libdispatch that registers differently. (waitfds.c)
int stallcap_dispatch_event_set(void);
/// 1 when epoll set `epfd` holds libdispatch's wake-up eventfd as libdispatch registers it (the test of
/// stallcap_dispatch_event_set), else 0.
int stallcap_is_dispatch_event_set(int epfd);

// MARK: Loaded images (images.c)

/// One loaded image, as reported by `stallcap_for_each_image`.
typedef struct {
    /// Path of the file (the executable's real path for the main program).
    const char *path;
    /// Load bias: runtime address minus the ELF virtual address.
    uint64_t load_bias;
    /// Lowest and highest (exclusive) runtime addresses of the image's PT_LOAD segments.
    uint64_t start;
    uint64_t end;
    /// GNU build-id bytes (NULL when the image has none).
    const uint8_t *build_id;
    uint32_t build_id_length;
} stallcap_image;

/// Calls `callback` once for each image currently loaded. Returns the loader's count of images ever added,
/// so callers can tell cheaply whether anything was loaded since the last call.
uint64_t stallcap_for_each_image(void (*callback)(const stallcap_image *image, void *context), void *context);

/// The loader's count of images ever added (cheap; no callback).
uint64_t stallcap_image_generation(void);

/// The executable lines of `/proc/self/maps` that name a file (a loaded image's code), in the kernel's order, copied
/// into `out` as long as they fit in `capacity` bytes; anonymous mappings, stacks, a file's other segments and files
/// only mapped to be read are left out (the image's range comes from its ELF headers). Returns the bytes all such
/// lines take (more than `capacity`: call again with a larger buffer), 0 when the file cannot be read. One pass over
/// the file in C keeps the cost of a process with thousands of mappings (thread stacks, files mapped to be read) off
/// the watchdog's way to a stall's samples. (codemap.c)
size_t stallcap_file_mappings(char *out, size_t capacity);

/// Where the kernel mapped this process's vDSO (`getauxval(AT_SYSINFO_EHDR)`), or 0 when it has none.
uint64_t stallcap_vdso_address(void);

// MARK: The capture file in a forked child (owned.c)

/// Remembers the capture file's descriptor (-1: none) and its identity (device, inode), for a forked child to
/// close its copy (stallcap_close_tracked_capture): the copy would keep the capture's lock after the parent
/// closed the file.
void stallcap_track_capture(int fd, uint64_t dev, uint64_t ino);

/// In a forked child: closes the copy of the capture file's descriptor, if that number still is the capture file,
/// and forgets it.
void stallcap_close_tracked_capture(void);

#ifdef __cplusplus
}
#endif

#endif
