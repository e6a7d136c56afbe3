// The signal handler and the request protocol between the watchdog and the sampled thread.
//
// One request is in flight at a time, in one atomic 64-bit word (handoff.h: state IDLE, REQUESTED, CLAIMED, DONE,
// target tid, generation). The watchdog publishes REQUESTED and arms a timer on the thread's CPU clock
// (cputimer.c), which signals the thread the next time it runs, never inside a sleep. The handler claims the
// request with a compare-and-swap (REQUESTED -> CLAIMED) only if it runs on the target thread, unwinds into static
// buffers and stores DONE, waking nobody; the watchdog looks at the word once per tick (handoff.c), for two ticks
// at most. Unanswered by then, a request stays outstanding while its thread waits for a CPU (under contention the
// tick that fires the timer is often the one that preempts the thread, and the signal comes when it runs again):
// the next call for the same thread waits on for it (no new timer) or collects its answer. A call with timeout 0
// waits for nothing: it sends the request and returns, and a later call collects the answer (the watchdog's
// pipelined samples: request at one wake, collect at the next). A thread asleep in a system call, a call for
// another thread, or stallcap_sample_cancel cancels it with a compare-and-swap (REQUESTED -> IDLE) and disarms
// the timer: a handler that runs later finds nothing to claim and writes nothing.
// The static buffers are written only under a claim, read only after DONE, and no new request is made until a
// claim ends.
#include "stallcapture.h"
#include "stallcapture_probe.h"
#include "stallcapture_threads.h"
#include "altstack.h"
#include "cputimer.h"
#include "handoff.h"
#include "unwind.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define g_state stallcap_request_word

// Frames are 64-bit addresses: Swift reads them as UInt and the capture file stores them as UInt64.
_Static_assert(sizeof(uintptr_t) == sizeof(uint64_t), "64-bit addresses");

static _Atomic int g_signo = 0;

/// The generation of the request a call left outstanding (unanswered while its thread waits for a CPU, or claimed
/// by a handler that has not finished), 0 for none: the next call for the same thread waits on for it or collects
/// its answer. Only the sampling thread reads and writes it.
static uint32_t g_outstanding = 0;

// Written only by the handler that holds the CLAIMED state; read by the watchdog after it sees DONE.
static uintptr_t g_frames[STALLCAP_MAX_FRAMES];
static stallcap_sample_info g_info;
static stallcap_unwind_cache g_cache;  // used by the handler that holds the CLAIMED state only
static stallcap_turn_trace g_trace;  // likewise

static uint64_t clock_ns(clockid_t clock) {
    struct timespec ts;
    if (clock_gettime(clock, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

// The handler makes no system call: clock_gettime is read from the vDSO (a system call only on a kernel whose
// clock source the vDSO cannot read), the unwinder reads memory only, and the target thread is named by the
// timer's value (cputimer.c), not by gettid. docs/WATCHDOG.md lists this; a seccomp test holds it.
static void handler(int signo, siginfo_t *info, void *context) {
    (void)signo;
    // Only our timer's signal claims a request (a stray kill() of the same signal does not): the kernel delivers
    // it to the thread it names, whose tid it carries as its value.
    if (info == NULL || info->si_code != SI_TIMER) return;
    int saved_errno = errno;
    // Only what must happen on the thread happens here: the thread's CPU clock is read by the watchdog (its clock
    // id is readable from outside), and nobody is woken: the watchdog looks at the request word once a tick
    // (handoff.c).
    uint64_t claimed = stallcap_handoff_claim((pid_t)info->si_value.sival_int);
    if (claimed != 0) {
        uint32_t flags = 0;
        g_info.timestamp_ns = clock_ns(CLOCK_MONOTONIC);
        g_info.thread_cpu_ns = 0;
        g_info.frame_count = stallcap_unwind(context, g_frames, STALLCAP_MAX_FRAMES, &flags, &g_cache, &g_trace);
        g_info.turn = stallcap_turn_of(&g_trace);
        g_info.flags = flags;
        g_info.unwind_ns = clock_ns(CLOCK_MONOTONIC) - g_info.timestamp_ns;
        stallcap_handoff_done(claimed);
    }
    errno = saved_errno;
}

// True when `action` is our handler.
static int is_ours(const struct sigaction *action) {
    return (action->sa_flags & SA_SIGINFO) && action->sa_sigaction == handler;
}

// True when `action` is the default disposition: the only one we take over (SIG_IGN is the app's choice).
static int is_default(const struct sigaction *action) {
    return !(action->sa_flags & SA_SIGINFO) && action->sa_handler == SIG_DFL;
}

int stallcap_signal_allowed(int signo) {
    return signo == SIGPROF || signo == SIGUSR1 || signo == SIGUSR2 || (signo >= SIGRTMIN && signo <= SIGRTMAX);
}

void stallcap_warm_thread(void) {
    static __thread int warmed = 0;
    if (warmed) return;
    warmed = 1;
    stallcap_install_alt_stack();
    stallcap_unwind_prepare_thread();
    uintptr_t frames[64];
    uint32_t flags = 0;
    (void)stallcap_unwind_here(frames, 64, &flags, NULL);
}

uint32_t stallcap_unwind_here(uintptr_t *frames, uint32_t max_frames, uint32_t *flags, void *cache) {
    ucontext_t context;
    if (getcontext(&context) != 0 || max_frames == 0) return 0;
    return stallcap_unwind(&context, frames, max_frames, flags, cache, NULL);
}

uint32_t stallcap_unwind_context(const void *ucontext, uintptr_t *frames, uint32_t max_frames, uint32_t *flags,
                                 void *cache) {
    return max_frames == 0 ? 0 : stallcap_unwind(ucontext, frames, max_frames, flags, cache, NULL);
}

size_t stallcap_unwind_cache_size(void) { return sizeof(stallcap_unwind_cache); }

uint64_t stallcap_queue_turn_here(void) {
    ucontext_t context;
    uintptr_t frames[STALLCAP_MAX_FRAMES];
    uint32_t flags = 0;
    stallcap_turn_trace trace;
    if (getcontext(&context) != 0) return 0;
    (void)stallcap_unwind(&context, frames, STALLCAP_MAX_FRAMES, &flags, NULL, &trace);
    return stallcap_turn_of(&trace);
}

static void (*g_child_callback)(void) = NULL;

// In the child of fork(): no request is in flight there (the watchdog thread does not exist): start afresh, then
// let the Swift side reset itself.
static void atfork_child(void) {
    atomic_store(&g_state, 0);
    g_outstanding = 0;
    stallcap_cputimer_forget();
    if (g_child_callback) g_child_callback();
}

int stallcap_register_atfork(void (*child)(void)) {
    static _Atomic int registered = 0;
    if (atomic_exchange(&registered, 1)) return 0;
    g_child_callback = child;
    int result = pthread_atfork(NULL, NULL, atfork_child);
    if (result != 0) atomic_store(&registered, 0);
    return result;
}

int stallcap_install(int signo) {
    if (!stallcap_signal_allowed(signo)) return EINVAL;
    int current = atomic_load(&g_signo);
    struct sigaction old;
    if (sigaction(signo, NULL, &old) != 0) return errno;
    if (current == signo && is_ours(&old)) return 0;
    if (!is_default(&old) && !is_ours(&old)) return EBUSY;  // the app handles or ignores it: never replace that
    if (current != 0 && current != signo) return EALREADY;
    // Prepare this thread (alternate stack, stack bounds) and bind the unwinder's symbols before any handler runs.
    stallcap_warm_thread();

    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = handler;
    action.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;  // on the thread's alternate stack when it has one
    sigfillset(&action.sa_mask);  // no other handler runs inside ours (synchronous faults still get through)
    if (sigaction(signo, &action, &old) != 0) return errno;
    if (!is_default(&old) && !is_ours(&old)) {
        sigaction(signo, &old, NULL);  // someone installed a handler between our check and our install
        return EBUSY;
    }
    atomic_store(&g_signo, signo);
    return 0;
}

static stallcap_status collect(uintptr_t *frames, uint32_t max_frames, stallcap_sample_info *info, uint32_t gen,
                               pid_t tid) {
    stallcap_sample_info copy = g_info;
    // Read from here, after the handler finished: the thread may have run since (the caller looks some
    // microseconds after the handler usually finishes, a tick later when it missed it), so the time is kept too.
    int64_t cpu = stallcap_thread_cpu_ns(tid);
    copy.collected_ns = stallcap_monotonic_ns();
    copy.thread_cpu_ns = cpu > 0 ? (uint64_t)cpu : 0;
    uint32_t n = copy.frame_count < max_frames ? copy.frame_count : max_frames;
    if (n < copy.frame_count) copy.flags |= STALLCAP_FLAG_TRUNCATED;
    memcpy(frames, g_frames, n * sizeof(uintptr_t));
    copy.frame_count = n;
    *info = copy;
    stallcap_handoff_learn(copy.timestamp_ns + copy.unwind_ns);
    g_outstanding = 0;
    atomic_store_explicit(&g_state, WORD(gen, tid, ST_IDLE), memory_order_release);
    return STALLCAP_OK;
}

/// Drops whatever the slot holds that is not the outstanding request of `tid`: cancels another request (and
/// disarms its timer), discards a finished one nobody will collect. Returns the word left in the slot.
static uint64_t settle(pid_t tid) {
    uint64_t word = atomic_load_explicit(&g_state, memory_order_acquire);
    for (;;) {
        int state = WORD_STATE(word);
        int ours = g_outstanding != 0 && WORD_GEN(word) == g_outstanding &&
                   WORD_TID(word) == (tid & (pid_t)HANDOFF_TID_MASK);
        if (state == ST_IDLE || state == ST_CLAIMED || ours) return word;
        uint64_t idle = WORD(WORD_GEN(word), WORD_TID(word), ST_IDLE);
        // REQUESTED -> IDLE can race a handler claiming it: then look at the word again.
        if (atomic_compare_exchange_strong(&g_state, &word, idle)) {
            if (state == ST_REQUESTED) stallcap_cputimer_cancel(WORD_TID(word));
            g_outstanding = 0;
            return idle;
        }
    }
}

void stallcap_sample_cancel(void) {
    g_outstanding = 0;  // an answer still on its way is then discarded, not collected by a later call
    (void)settle(0);
}

void stallcap_sample_cancel_thread(pid_t tid) {
    uint64_t word = atomic_load_explicit(&g_state, memory_order_acquire);
    if (WORD_TID(word) == (tid & (pid_t)HANDOFF_TID_MASK)) stallcap_sample_cancel();
}

int stallcap_sample_slot_taken(pid_t tid) {
    uint64_t word = atomic_load_explicit(&g_state, memory_order_acquire);
    int state = WORD_STATE(word);
    return state != ST_IDLE && WORD_TID(word) != (tid & (pid_t)HANDOFF_TID_MASK);
}

void stallcap_sample_end(void) {
    stallcap_sample_cancel();
    stallcap_cputimer_release_all();
}

/// The longest a request waits for its answer: two ticks, or the caller's timeout when shorter.
static uint64_t wait_bound(int64_t timeout_ns) {
    uint64_t bound = 2 * stallcap_tick_ns();
    return timeout_ns < 0 ? 0 : (uint64_t)timeout_ns < bound ? (uint64_t)timeout_ns : bound;
}

stallcap_status stallcap_sample(pid_t tid, int64_t timeout_ns, uintptr_t *frames, uint32_t max_frames,
                                stallcap_sample_info *info) {
    int signo = atomic_load(&g_signo);
    if (signo == 0) return STALLCAP_NOT_INSTALLED;
    // The app may have replaced or reset the handler since: then our signal could kill it or reach its handler.
    struct sigaction current;
    if (sigaction(signo, NULL, &current) != 0 || !is_ours(&current)) {
        stallcap_sample_cancel();
        return STALLCAP_NOT_INSTALLED;
    }
    uint64_t word = settle(tid);
    if (WORD_STATE(word) == ST_CLAIMED) return STALLCAP_BUSY;
    // An outstanding request of a thread that has exited can never be answered (its timer watched the old
    // thread): drop it.
    if (WORD_STATE(word) == ST_REQUESTED && stallcap_thread_cpu_ns(tid) < 0) {
        stallcap_sample_cancel();
        return STALLCAP_NO_THREAD;
    }
    // This thread's request from an earlier call, answered since (it got its CPU back): a sample taken when its
    // handler ran, collected now.
    if (WORD_STATE(word) == ST_DONE) return collect(frames, max_frames, info, WORD_GEN(word), tid);
    // Timeout 0 (pipelined): an outstanding request is left to a later call, with no look at /proc.
    if (timeout_ns == 0 && WORD_STATE(word) == ST_REQUESTED) return STALLCAP_PENDING;
    uint32_t gen = WORD_GEN(word);
    if (WORD_STATE(word) != ST_REQUESTED) {  // none outstanding: a new request, and its timer
        gen += 1;
        if (gen == 0) gen = 1;  // 0 means "none" in g_outstanding
        atomic_store_explicit(&g_state, WORD(gen, tid, ST_REQUESTED), memory_order_release);
        int err = stallcap_cputimer_fire(tid, signo);
        if (err != 0) {
            uint64_t expected = WORD(gen, tid, ST_REQUESTED);
            // A stray delivery of the same signal may have claimed the request meanwhile: leave it to finish.
            if (!atomic_compare_exchange_strong(&g_state, &expected, WORD(gen, tid, ST_IDLE))) return STALLCAP_BUSY;
            errno = err;
            return err == ESRCH ? STALLCAP_NO_THREAD : STALLCAP_ERROR;
        }
        g_outstanding = gen;
        if (timeout_ns == 0) return STALLCAP_REQUESTED;
    }
    switch (stallcap_handoff_wait(gen, stallcap_monotonic_ns() + wait_bound(timeout_ns))) {
    case ST_DONE: return collect(frames, max_frames, info, gen, tid);
    case ST_REQUESTED: {
        // No answer within two ticks. A thread asleep in a system call may sleep for ever: its request is cancelled
        // and its timer disarmed rather than left to fire at some later moment, after the app may have reset the
        // signal or the watchdog stopped (the caller reads its stack from memory). One waiting for a CPU keeps it.
        stallcap_syscall_state syscall_state;
        if (stallcap_read_syscall(tid, &syscall_state) == STALLCAP_SYSCALL_IN_CALL) stallcap_sample_cancel();
        return STALLCAP_TIMEOUT;
    }
    case ST_CLAIMED: return STALLCAP_BUSY;  // claimed and still running: a later call collects it
    default: return STALLCAP_TIMEOUT;
    }
}
