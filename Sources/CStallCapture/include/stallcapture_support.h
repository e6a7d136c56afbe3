// stallcapture_support.h: small helpers the watchdog needs from C: thread ids, clocks and the image map.
// None of these run in signal context.
#ifndef STALLCAPTURE_SUPPORT_H
#define STALLCAPTURE_SUPPORT_H

#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The kernel thread id of the calling thread.
pid_t stallcap_gettid(void);

/// Names the calling thread (at most 15 characters are kept), as shown by ps, top and debuggers.
void stallcap_name_thread(const char *name);

/// CLOCK_MONOTONIC in nanoseconds.
uint64_t stallcap_monotonic_ns(void);

/// The watchdog thread's sleep between checks: a futex word of this process (one watchdog at a time). Read the
/// word with stallcap_wd_sequence() before deciding to sleep, then sleep with that value: a stallcap_wd_wake()
/// in between makes the sleep return at once, so no wake is lost.
uint32_t stallcap_wd_sequence(void);
/// Sleeps at most `timeout_ns` (relative, CLOCK_MONOTONIC) unless the word no longer equals `seen` or is
/// changed meanwhile. Returns early on a wake or a signal; the caller re-checks its state either way.
void stallcap_wd_sleep(uint32_t seen, int64_t timeout_ns);
/// Changes the word and wakes the sleeping watchdog thread, if any.
void stallcap_wd_wake(void);

/// CLOCK_REALTIME in nanoseconds since the Unix epoch.
uint64_t stallcap_realtime_ns(void);

/// CPU time consumed so far by thread `tid` of this process, in nanoseconds, or -1 when it cannot be read.
int64_t stallcap_thread_cpu_ns(pid_t tid);

/// Reads `/proc/self/task/<tid>/schedstat`: nanoseconds the thread has run and nanoseconds it has waited on a
/// run queue (ready but not running). Returns 0, or -1 when the file cannot be read.
int stallcap_thread_schedstat(pid_t tid, uint64_t *run_ns, uint64_t *wait_ns);

/// Reads the context-switch counters of thread `tid` from `/proc/self/task/<tid>/status`
/// (`voluntary_ctxt_switches`: the thread went to sleep, blocked or stopped; `nonvoluntary_ctxt_switches`: it was
/// preempted). Returns 0, or -1 when the file cannot be read or parsed.
int stallcap_thread_switches(pid_t tid, uint64_t *voluntary, uint64_t *involuntary);

/// Reads the blocked-signal mask of thread `tid` from `/proc/self/task/<tid>/status` (`SigBlk`, bit n-1 set when
/// signal n is blocked). Returns 0, or -1 when the file cannot be read or parsed.
int stallcap_thread_blocked_signals(pid_t tid, uint64_t *blocked);

/// The state letter of thread `tid` from `/proc/self/task/<tid>/stat` (`R` running or runnable, `S` sleeping,
/// `D` uninterruptible...), or 0 when it cannot be read.
char stallcap_thread_state(pid_t tid);

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

/// Which file a descriptor refers to, as it was opened: device and inode (`fstat`). A pipe's inode is unique;
/// every eventfd and epoll set shares one anonymous inode, so those need more (wddeep.c).
typedef struct {
    uint64_t dev;
    uint64_t ino;
} stallcap_fd_identity;

/// Fills `identity` for open descriptor `fd`. Returns 0, or -1 when it is not open.
int stallcap_fd_identity_of(int fd, stallcap_fd_identity *identity);

/// 1 when `fd` is open and refers to the file `identity`, else 0. One `fstat`; async-signal-safe.
int stallcap_fd_has_identity(int fd, stallcap_fd_identity identity);

/// Remembers the capture file's descriptor (-1: none) and its identity, for a forked child to close its copy
/// (stallcap_close_tracked_capture): the copy would keep the capture's lock after the parent closed the file.
void stallcap_track_capture(int fd, uint64_t dev, uint64_t ino);

/// In a forked child: closes the copy of the capture file's descriptor, if that number still is the capture file,
/// and forgets it.
void stallcap_close_tracked_capture(void);

/// Where the kernel mapped this process's vDSO (`getauxval(AT_SYSINFO_EHDR)`), or 0 when it has none.
uint64_t stallcap_vdso_address(void);

#ifdef __cplusplus
}
#endif

#endif
