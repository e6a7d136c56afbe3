// stallcapture.h: the capture handler's interface, for the sampler (EpisodeSampler, StallWatchdog's install,
// BlockedOnProbe's sample of a running owner), tests and benchmarks.
//
// Two calls do the work: `stallcap_install` installs the signal handler once, and `stallcap_sample` asks one
// thread for its stack and either waits, at most two scheduler ticks, for the answer, or (timeout 0) returns at
// once and leaves the answer to a later call. Everything that runs inside the
// handler is async-signal-safe: no malloc, no locks, no Swift; frames go into preallocated static buffers. The
// module's other headers are grouped by caller too: stallcapture_watchdog.h (the watchdog thread),
// stallcapture_probe.h (the blocked-on probe), stallcapture_threads.h (thread ids and clocks, any caller),
// stallcapture_marker.h (StallMarker).
#ifndef STALLCAPTURE_H
#define STALLCAPTURE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Most frames one sample can hold.
#define STALLCAP_MAX_FRAMES 256

/// Sample flag: some frame had no usable unwind information (JIT code, an object without `.eh_frame_hdr`): the
/// frame pointer was followed from there.
#define STALLCAP_FLAG_FRAME_POINTERS 0x1u
/// Sample flag: the stack was deeper than the buffer; the outermost frames are missing.
#define STALLCAP_FLAG_TRUNCATED 0x2u
/// Sample flag: the handler knew libdispatch's code (stallcap_set_queue_code), so a turn of 0 means the thread was in
/// no queued block (or its walk could not tell: STALLCAP_FLAG_FRAME_POINTERS, STALLCAP_FLAG_TRUNCATED,
/// STALLCAP_FLAG_STOPPED_NO_INFO, STALLCAP_FLAG_STOPPED_UNUSABLE).
#define STALLCAP_FLAG_QUEUE_CODE_KNOWN 0x4u
/// Sample flag: the walk stopped before the outermost frame at a function without unwind information, whose frame
/// pointer could not be followed either: the outer frames are missing.
#define STALLCAP_FLAG_STOPPED_NO_INFO 0x8u
/// Sample flag: the walk stopped before the outermost frame at unusable unwind rules, an unreadable stack word or a
/// caller's frame not above its callee's (a stale or corrupt stack), where the frame pointer could not be followed
/// either: the outer frames are missing.
#define STALLCAP_FLAG_STOPPED_UNUSABLE 0x10u

/// What `stallcap_sample` returns.
typedef enum {
    /// The sample was taken; frames and info are filled in.
    STALLCAP_OK = 0,
    /// The thread did not answer before the deadline (two ticks, or the timeout when shorter): it waited for a
    /// CPU, slept in a system call, or blocked the signal. A thread asleep in a system call had its request
    /// cancelled and its timer disarmed; any other keeps the request outstanding (see stallcap_sample).
    STALLCAP_TIMEOUT = 1,
    /// A handler claimed the request (this call's, or an earlier call's) and has not finished: its thread was
    /// preempted inside it. No new signal was sent. The caller counts a missed sample and tries later: the next
    /// call for the same thread returns the answer once it is done (`info.timestamp_ns` says when it was taken).
    STALLCAP_BUSY = 2,
    /// The thread no longer exists.
    STALLCAP_NO_THREAD = 3,
    /// `stallcap_install` has not succeeded yet, or the app has since replaced or reset the handler (no signal
    /// was sent).
    STALLCAP_NOT_INSTALLED = 4,
    /// Arming the timer that sends the signal failed for another reason (errno is kept).
    STALLCAP_ERROR = 5,
    /// Timeout 0 only: a new request was sent (its timer armed) and nothing was waited for. A later call for the
    /// same thread collects its answer (STALLCAP_OK) or finds it still unanswered (STALLCAP_PENDING).
    STALLCAP_REQUESTED = 6,
    /// Timeout 0 only: this thread's request from an earlier call is still unanswered (its thread has not run
    /// through a tick since, or it blocks the signal). No new request or timer; the request stays outstanding.
    STALLCAP_PENDING = 7,
} stallcap_status;

/// Per-sample facts measured inside the handler, on the sampled thread.
typedef struct {
    /// CLOCK_MONOTONIC, nanoseconds, when the handler ran.
    uint64_t timestamp_ns;
    /// CPU time the sampled thread had consumed, nanoseconds: its CPU clock, read by the caller when it collected
    /// the answer, at `collected_ns` (not in the handler: that saves the thread a system call per sample). The
    /// thread may have run on since the handler: up to `collected_ns - timestamp_ns` more. 0 when it is gone.
    uint64_t thread_cpu_ns;
    /// Number of frames written, leaf first.
    uint32_t frame_count;
    /// STALLCAP_FLAG_* bits.
    uint32_t flags;
    /// Nanoseconds the handler spent unwinding (how long the sampled thread was held up, less signal delivery).
    uint64_t unwind_ns;
    /// The queued block the thread was running (a dispatch queue's turn), the same in every sample of one block
    /// and different for the next: see stallcap_set_queue_code. 0 when unknown or not in a block.
    uint64_t turn;
    /// CLOCK_MONOTONIC, nanoseconds, when `thread_cpu_ns` was read.
    uint64_t collected_ns;
} stallcap_sample_info;

/// Finds libdispatch's code (the object that holds its main queue, `_dispatch_main_q`), so that samples say which queued block they are in
/// (`stallcap_sample_info.turn`). Not in a handler; before sampling starts. Returns 0; ENOENT when libdispatch is
/// not loaded; ENOTSUP when it is linked into the executable (a static Swift standard library), where no turn is
/// told.
int stallcap_set_queue_code(void);

/// The turn of the calling thread now, as the handler would find it in a sample taken here (0 outside a queued
/// block or before stallcap_set_queue_code). For tests; not in a handler.
uint64_t stallcap_queue_turn_here(void);

/// Installs the capture handler for `signo` (with SA_RESTART | SA_SIGINFO | SA_ONSTACK, all signals masked while it runs)
/// after preparing the calling thread (stallcap_warm_thread). Idempotent for the same signal. Returns 0; EINVAL for a signal other than
/// SIGPROF, SIGUSR1, SIGUSR2 or a real-time signal; EBUSY when the app handles or ignores `signo` (never replaced
/// silently); EALREADY when the handler is installed on a different signal; or the errno of a failed call.
int stallcap_install(int signo);

/// Registers, once per process, a fork handler for the child: the capture state (request slot, semaphore) is
/// reset, then `child` runs (the caller's own reset; it must only store atomics). Returns 0 or an errno.
int stallcap_register_atfork(void (*child)(void));

/// True for the signals `stallcap_install` accepts.
int stallcap_signal_allowed(int signo);

/// Prepares the calling thread for sampling, the first time only: gives it a 64 KiB alternate signal stack (mmap,
/// guard page below) unless it already has one, so that the handler (SA_ONSTACK) never needs the thread's own
/// stack and a thread with little stack left is sampled safely (the stack is freed at thread exit); records its
/// stack bounds, which the handler's unwinder keeps its reads within (and without which it follows no frame
/// pointer); and walks its stack once, so that every symbol the unwinder calls is bound. Call it from every thread
/// that may be sampled (not in a handler).
void stallcap_warm_thread(void);

/// Walks the calling thread's stack from here with the handler's unwinder, as a handler would from a signal
/// context: `frames` gets the address in this function, then return addresses. `cache` is NULL (no cache) or
/// `stallcap_unwind_cache_size()` zeroed bytes of the caller's, used by one walk at a time. For tests; not in a
/// handler. Returns the number of frames; `flags` gets STALLCAP_FLAG_* bits.
uint32_t stallcap_unwind_here(uintptr_t *frames, uint32_t max_frames, uint32_t *flags, void *cache);

/// Walks the stack of an interrupted thread from its signal context (`ucontext`, a handler's third argument) with
/// the unwinder stallprof's capture handler uses, on that thread, inside a handler of the caller's own:
/// async-signal-safe, no system call. `cache` as for `stallcap_unwind_here`. For tests (CUnwindCheck), which
/// compare it with another unwinder at random interruption points.
uint32_t stallcap_unwind_context(const void *ucontext, uintptr_t *frames, uint32_t max_frames, uint32_t *flags,
                                 void *cache);

/// The size of a cache for `stallcap_unwind_here` (the handler's own is static).
size_t stallcap_unwind_cache_size(void);

/// Says that libraries were loaded or unloaded: the handler empties its cache of unwind rules before its next walk
/// (an address may now hold other code). Any thread; not in a handler.
void stallcap_unwind_forget_images(void);

/// Samples thread `tid` of this process: arms a one-shot timer on the thread's CPU clock that sends the signal
/// the next time the thread runs (at a scheduler tick, so never into a sleep or a system call: the thread meets it
/// on its way back to user code), then waits for the handler, looking once per tick when handlers usually finish
/// (the handler wakes nobody). The wait ends at the latest two ticks after the call began (`stallcap_tick_ns`),
/// or after `timeout_ns` when that is shorter. A request unanswered by then is left outstanding while its thread
/// waits for a CPU (under contention the tick that fires the timer often preempts the thread, and the signal
/// comes when it runs again): the next call for the same thread waits on for it (no new timer), or returns its
/// answer at once if it came meanwhile (`info.timestamp_ns` says when); a call for another thread cancels it, and
/// so does a timeout that finds the thread asleep in a system call. The caller checks beforehand that the thread
/// is not in a system call (its stack is read from memory then): the timer never interrupts one, so such a thread
/// would only run out the wait. On STALLCAP_OK, up to `max_frames` addresses (leaf first; the leaf is the
/// interrupted instruction, the others are return addresses) are copied to `frames` and `info` is filled in. Call
/// from one thread at a time.
///
/// With `timeout_ns` 0 the call never waits (the watchdog's pipelined samples): it collects this thread's answer
/// to an earlier request when one came (STALLCAP_OK), says the earlier request is still unanswered
/// (STALLCAP_PENDING), or else sends a new request and returns (STALLCAP_REQUESTED). It reads nothing in /proc: a
/// caller that finds the thread asleep in a system call with a request pending reads its stack from memory and
/// cancels the request (stallcap_sample_cancel). STALLCAP_BUSY, STALLCAP_NO_THREAD, STALLCAP_NOT_INSTALLED and
/// STALLCAP_ERROR mean what they mean for a waiting call.
stallcap_status stallcap_sample(pid_t tid, int64_t timeout_ns, uintptr_t *frames, uint32_t max_frames,
                                stallcap_sample_info *info);

/// Cancels the request a timed-out or pipelined (timeout 0) `stallcap_sample` left outstanding, and discards an
/// answer nobody collected: the next `stallcap_sample` starts afresh (a sampler calls it when it starts and ends,
/// so that no sample of an earlier episode is collected in a later one). Same calling thread as `stallcap_sample`.
void stallcap_sample_cancel(void);

/// stallcap_sample_cancel when the slot holds a request (or an uncollected answer) for thread `tid`; nothing when
/// it holds another thread's, which another episode's sampler still waits for. Same calling thread.
void stallcap_sample_cancel_thread(pid_t tid);

/// 1 when the one request slot holds another thread's request: not answered yet (requested, or its handler
/// running), or answered and not collected yet. A sampler that shares the slot with other episodes' then leaves it
/// to that request. Same calling thread as `stallcap_sample`.
int stallcap_sample_slot_taken(pid_t tid);

/// Ends sampling (the watchdog stops): cancels any request and deletes every timer stallprof created, so no
/// signal of ours can come later. Same calling thread as `stallcap_sample`.
void stallcap_sample_end(void);

/// Arms a one-shot timer on thread `tid`'s CPU clock that sends `signo` to that thread the next time it runs
/// user code after a scheduler tick (never inside a system call): the delivery `stallcap_sample` uses, also for
/// benchmarks that measure its floor. One timer per thread and signal is kept (a few at most). Returns 0, ESRCH
/// (no such thread in this process) or another errno. Not in a signal handler; one calling thread at a time.
int stallcap_cputimer_fire(pid_t tid, int signo);

/// The kernel's scheduler tick, nanoseconds (4 ms at HZ=250): the resolution of CLOCK_MONOTONIC_COARSE, read once.
/// The capture signal comes at a tick; `stallcap_sample` waits at most two.
uint64_t stallcap_tick_ns(void);

/// Counts of `stallcap_sample` hand-offs that waited (a timeout above 0) since the process started; pipelined
/// calls wait for nothing and count nowhere. For benchmarks and tests.
typedef struct {
    /// Found done at the caller's first look, before any pause.
    uint64_t spun;
    /// Needed one or more of the caller's pauses (the usual case: the signal waits for a tick), whatever the end.
    uint64_t slept;
    /// Reached the deadline (cancelled, left to a handler still running, or found done only then).
    uint64_t deadlines;
    /// Pauses taken in all (each one a wake-up of the caller).
    uint64_t pauses;
} stallcap_handoff_stats;

/// Reads the hand-off counts (relaxed: figures, not synchronisation).
void stallcap_handoff_counts(stallcap_handoff_stats *counts);

#ifdef __cplusplus
}
#endif

#endif
