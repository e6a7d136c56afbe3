// The hand-off of a finished sample from the signal handler to the watchdog (see handoff.h for the word).
//
// The signal comes from a timer on the thread's CPU clock (cputimer.c), at the next scheduler tick that finds the
// thread running: up to a tick (4 ms at HZ=250) after the request, not microseconds. So the watchdog does not
// spin for it, and the handler never wakes the watchdog (a wake-up of a thread on another core would cost the
// sampled thread 6-9 µs of its stop): it stores DONE and returns. The watchdog polls the word instead, sleeping
// POLL_NS between looks (POLL_CLAIMED_NS once a handler has claimed the request and is unwinding), until the
// sample's deadline.
#include "handoff.h"
#include "stallcapture.h"
#include "stallcapture_threads.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the hand-off's futex word is the low half of the request word: little-endian only"
#endif

_Atomic uint64_t stallcap_request_word = 0;

/// The watchdog's pause between looks at the word while the request waits for its tick.
#define POLL_NS 1000000ull
/// The pause once a handler claimed the request: it is unwinding, done within microseconds.
#define POLL_CLAIMED_NS 20000ull

static _Atomic uint64_t g_found_at_once = 0;
static _Atomic uint64_t g_waits = 0;
static _Atomic uint64_t g_deadlines = 0;

static uint32_t *futex_word(void) { return (uint32_t *)(void *)&stallcap_request_word; }

uint64_t stallcap_handoff_claim(pid_t self) {
    uint64_t word = atomic_load_explicit(&stallcap_request_word, memory_order_acquire);
    // At most a few rounds: only the watchdog's cancel can change the word under us.
    while (WORD_STATE(word) == ST_REQUESTED && WORD_TID(word) == (self & (pid_t)HANDOFF_TID_MASK)) {
        uint64_t claimed = (word & ~3ull) | ST_CLAIMED;
        if (atomic_compare_exchange_weak_explicit(&stallcap_request_word, &word, claimed, memory_order_acq_rel,
                                                  memory_order_acquire))
            return claimed;
    }
    return 0;
}

void stallcap_handoff_done(uint64_t claimed) {
    atomic_store_explicit(&stallcap_request_word, WORD(WORD_GEN(claimed), WORD_TID(claimed), ST_DONE),
                          memory_order_release);
}

int stallcap_handoff_wait(uint32_t gen, uint64_t deadline_ns) {
    int slept = 0;
    uint64_t claimed_pause = POLL_CLAIMED_NS;
    for (;;) {
        uint64_t word = atomic_load_explicit(&stallcap_request_word, memory_order_acquire);
        int state = WORD_STATE(word);
        if (WORD_GEN(word) != gen) return ST_IDLE;  // cannot happen: only this caller starts requests
        if (state == ST_DONE) {
            if (!slept) atomic_fetch_add_explicit(&g_found_at_once, 1, memory_order_relaxed);
            return ST_DONE;
        }
        if (state == ST_IDLE) return ST_IDLE;
        uint64_t now = stallcap_monotonic_ns();
        if (now >= deadline_ns) {
            atomic_fetch_add_explicit(&g_deadlines, 1, memory_order_relaxed);
            return state;  // REQUESTED (left outstanding) or CLAIMED (a handler is finishing)
        }
        // Claimed: the handler is unwinding, done within microseconds, unless its thread lost the CPU; the pause
        // doubles each time (20 µs to 1 ms) so that a preempted or stopped thread is not polled 10,000 times.
        uint64_t pause = state == ST_CLAIMED ? claimed_pause : POLL_NS;
        if (state == ST_CLAIMED && claimed_pause < POLL_NS) claimed_pause *= 2;
        if (pause > deadline_ns - now) pause = deadline_ns - now;
        struct timespec timeout = {.tv_sec = (time_t)(pause / 1000000000ull), .tv_nsec = (long)(pause % 1000000000ull)};
        if (!slept) atomic_fetch_add_explicit(&g_waits, 1, memory_order_relaxed);
        slept = 1;
        // Returns at once (EAGAIN) when the handler changed the word since the look above; nobody wakes it.
        syscall(SYS_futex, futex_word(), FUTEX_WAIT_PRIVATE, (uint32_t)word, &timeout, NULL, 0);
    }
}

void stallcap_handoff_counts(stallcap_handoff_stats *counts) {
    counts->spun = atomic_load_explicit(&g_found_at_once, memory_order_relaxed);
    counts->slept = atomic_load_explicit(&g_waits, memory_order_relaxed);
    counts->deadlines = atomic_load_explicit(&g_deadlines, memory_order_relaxed);
}
