// The hand-off of a finished sample from the signal handler to the watchdog (see handoff.h for the word).
//
// The watchdog spins on the word for a bounded time right after the signal: a handler that answers in the usual
// tens of microseconds stores DONE and returns, waking nobody (waking a thread asleep on another core would cost
// the sampled thread ~12 µs of its stop). Only if the handler is late (the thread waits for a CPU, blocks the
// signal for a while) does the watchdog set the sleeping bit with a compare-and-swap and sleep on the futex with
// the sample's deadline; a handler that then finishes sees the bit in the word it replaces and wakes it.
#define _GNU_SOURCE
#include "handoff.h"
#include "stallcapture.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the hand-off's futex word is the low half of the request word: little-endian only"
#endif

_Atomic uint64_t stallcap_request_word = 0;

/// How long the watchdog spins before it sleeps: signal delivery and unwinding take 10-20 µs here when the thread
/// is on another CPU; beyond that the thread is not running (preempted, or queued on the watchdog's own CPU) and
/// spinning would only burn the watchdog's CPU and keep the thread off it. No sched_yield: on a shared CPU the
/// yielded-to thread runs out its slice (milliseconds) before the watchdog gets back, while sleeping lets the
/// handler's wake-up bring the watchdog back at once.
#define SPIN_NS 50000ull

/// The spin actually used: 0 when this process may run on one CPU only (the thread could then never answer
/// while the watchdog spins). Set by stallcap_handoff_setup.
static _Atomic uint64_t g_spin_ns = SPIN_NS;

static _Atomic uint64_t g_spin_hits = 0;
static _Atomic uint64_t g_waits = 0;
static _Atomic uint64_t g_deadlines = 0;

static uint32_t *futex_word(void) { return (uint32_t *)(void *)&stallcap_request_word; }

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield" ::: "memory");
#endif
}

void stallcap_handoff_setup(void) {
    cpu_set_t set;
    int cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 2;
    atomic_store(&g_spin_ns, cpus > 1 ? SPIN_NS : 0);
}

uint64_t stallcap_handoff_claim(pid_t self) {
    uint64_t word = atomic_load_explicit(&stallcap_request_word, memory_order_acquire);
    // At most a few rounds: only the watchdog's sleeping bit or its cancel can change the word under us.
    while (WORD_STATE(word) == ST_REQUESTED && WORD_TID(word) == (self & (pid_t)HANDOFF_TID_MASK)) {
        uint64_t claimed = (word & ~3ull) | ST_CLAIMED;
        if (atomic_compare_exchange_weak_explicit(&stallcap_request_word, &word, claimed, memory_order_acq_rel,
                                                  memory_order_acquire))
            return claimed;
    }
    return 0;
}

void stallcap_handoff_done(uint64_t claimed) {
    uint64_t done = WORD(WORD_GEN(claimed), WORD_TID(claimed), ST_DONE);
    uint64_t old = atomic_exchange_explicit(&stallcap_request_word, done, memory_order_acq_rel);
    if (old & HANDOFF_SLEEPING) syscall(SYS_futex, futex_word(), FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/// The word once the deadline has passed: cancels a request nobody claimed.
static int time_out(uint32_t gen, pid_t tid) {
    atomic_fetch_add_explicit(&g_deadlines, 1, memory_order_relaxed);
    uint64_t word = atomic_load_explicit(&stallcap_request_word, memory_order_acquire);
    for (;;) {
        if (WORD_GEN(word) != gen) return ST_CLAIMED;  // cannot happen: only this caller starts requests
        int state = WORD_STATE(word);
        if (state != ST_REQUESTED) return state == ST_DONE ? ST_DONE : ST_CLAIMED;
        if (atomic_compare_exchange_strong(&stallcap_request_word, &word, WORD(gen, tid, ST_IDLE))) return ST_IDLE;
    }
}

int stallcap_handoff_wait(uint32_t gen, pid_t tid, uint64_t deadline_ns) {
    uint64_t start = now_ns();
    uint64_t spin = atomic_load_explicit(&g_spin_ns, memory_order_relaxed);
    uint64_t spin_end = start + spin < deadline_ns ? start + spin : deadline_ns;
    for (unsigned i = 1;; i++) {
        uint64_t word = atomic_load_explicit(&stallcap_request_word, memory_order_acquire);
        if (WORD_STATE(word) == ST_DONE && WORD_GEN(word) == gen) {
            atomic_fetch_add_explicit(&g_spin_hits, 1, memory_order_relaxed);
            return ST_DONE;
        }
        cpu_relax();
        if (i % 16 != 0) continue;
        if (now_ns() >= spin_end) break;
    }
    atomic_fetch_add_explicit(&g_waits, 1, memory_order_relaxed);
    struct timespec deadline = {.tv_sec = (time_t)(deadline_ns / 1000000000ull),
                                .tv_nsec = (long)(deadline_ns % 1000000000ull)};
    uint64_t word = atomic_load_explicit(&stallcap_request_word, memory_order_acquire);
    for (;;) {
        int state = WORD_STATE(word);
        if (state == ST_DONE && WORD_GEN(word) == gen) return ST_DONE;
        if (WORD_GEN(word) != gen || (state != ST_REQUESTED && state != ST_CLAIMED)) return time_out(gen, tid);
        if (!(word & HANDOFF_SLEEPING)) {
            // Say we sleep. If the handler changed the word meanwhile, look at the new word instead.
            if (!atomic_compare_exchange_strong(&stallcap_request_word, &word, word | HANDOFF_SLEEPING)) continue;
            word |= HANDOFF_SLEEPING;
        }
        // Sleeps only while the low half is still `word`: a claim or done since returns EAGAIN at once. The
        // timeout is absolute, on CLOCK_MONOTONIC (FUTEX_WAIT_BITSET without FUTEX_CLOCK_REALTIME).
        long r = syscall(SYS_futex, futex_word(), FUTEX_WAIT_BITSET_PRIVATE, (uint32_t)word, &deadline, NULL,
                         FUTEX_BITSET_MATCH_ANY);
        if (r != 0 && errno == ETIMEDOUT) return time_out(gen, tid);
        if (r != 0 && errno != EAGAIN && errno != EINTR) {
            if (now_ns() >= deadline_ns) return time_out(gen, tid);
            struct timespec pause = {.tv_sec = 0, .tv_nsec = 50000};  // an unexpected error: poll, do not spin
            nanosleep(&pause, NULL);
        }
        word = atomic_load_explicit(&stallcap_request_word, memory_order_acquire);
    }
}

void stallcap_handoff_counts(stallcap_handoff_stats *counts) {
    counts->spun = atomic_load_explicit(&g_spin_hits, memory_order_relaxed);
    counts->slept = atomic_load_explicit(&g_waits, memory_order_relaxed);
    counts->deadlines = atomic_load_explicit(&g_deadlines, memory_order_relaxed);
}
