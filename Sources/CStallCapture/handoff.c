// The hand-off of a finished sample from the signal handler to the watchdog (see handoff.h for the word).
//
// The signal comes from a timer on the thread's CPU clock (cputimer.c), at the next scheduler tick that finds the
// thread running: up to a tick (4 ms at HZ=250) after the request, not microseconds. The handler never wakes the
// watchdog (a wake-up of a thread on another core would cost the sampled thread 6-9 µs of its stop): it stores
// DONE and returns. The watchdog does not poll blindly either: ticks come on a fixed grid of CLOCK_MONOTONIC
// (multiples of the tick on every CPU, unless the kernel was booted with skew_tick=1), and a handler finishes at
// about the same offset into its tick every time (on an idle 2-vCPU KVM guest: 6-12 µs after the tick for 90 % of
// them, within 25 µs for 99 %; under load 25 µs at the median, 60 µs at p90). So the watchdog sleeps until that
// offset (learned from the answers) plus LOOK_AFTER_NS, in the next tick: one wake-up per sample when the thread
// runs at that tick. A handler later than the look is found at the next tick's look or at the deadline, and its
// offset is learned. Once a handler has claimed the request it is unwinding: the watchdog then looks
// POLL_CLAIMED_NS later, doubling.
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

/// How long after a handler's usual finishing time (its offset into the tick) the watchdog looks: the delivery's
/// jitter, and the unwinding of a deeper stack than last time.
#define LOOK_AFTER_NS 40000ull
/// The first pause once a handler claimed the request: it is unwinding, done within microseconds.
#define POLL_CLAIMED_NS 20000ull
/// Bounds of the tick length taken from the kernel (HZ from 100 to 1000).
#define TICK_MIN_NS 1000000ull
#define TICK_MAX_NS 10000000ull

static _Atomic uint64_t g_found_at_once = 0;
static _Atomic uint64_t g_waits = 0;
static _Atomic uint64_t g_pauses = 0;
static _Atomic uint64_t g_deadlines = 0;
/// How far into its tick handlers finish (CLOCK_MONOTONIC modulo the tick): the latest seen, sinking back a
/// quarter of the way towards each earlier one. 0 until one finished: the tick itself, where the kernel's default
/// grid puts it.
static _Atomic uint64_t g_phase_ns = 0;

static uint32_t *futex_word(void) { return (uint32_t *)(void *)&stallcap_request_word; }

uint64_t stallcap_tick_ns(void) {
    static _Atomic uint64_t tick = 0;
    uint64_t value = atomic_load_explicit(&tick, memory_order_relaxed);
    if (value != 0) return value;
    // The coarse clocks advance once per tick: their resolution is the tick (TICK_NSEC), whatever the clock
    // source. USER_HZ (sysconf(_SC_CLK_TCK)) is always 100 and says nothing about it.
    struct timespec res;
    value = clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0 && res.tv_sec == 0 ? (uint64_t)res.tv_nsec : 0;
    if (value < TICK_MIN_NS || value > TICK_MAX_NS) value = 4000000ull;  // HZ=250, the usual
    atomic_store_explicit(&tick, value, memory_order_relaxed);
    return value;
}

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

void stallcap_handoff_learn(uint64_t finished_ns) {
    uint64_t seen = finished_ns % stallcap_tick_ns();
    uint64_t phase = atomic_load_explicit(&g_phase_ns, memory_order_relaxed);
    // An envelope, not the last value: a handler a little later than the one before would otherwise be missed by
    // the look and found a tick later. One much later (its thread switched out at the tick) only delays the
    // looks of the next few samples, never past the deadline.
    phase = seen >= phase ? seen : phase - (phase - seen) / 4;
    atomic_store_explicit(&g_phase_ns, phase, memory_order_relaxed);
}

/// The first time after `now` at which a handler that runs at the next tick has usually finished, plus the margin.
static uint64_t next_look(uint64_t now, uint64_t tick) {
    uint64_t offset = (atomic_load_explicit(&g_phase_ns, memory_order_relaxed) + LOOK_AFTER_NS) % tick;
    uint64_t look = now - now % tick + offset;
    return look > now ? look : look + tick;
}

int stallcap_handoff_wait(uint32_t gen, uint64_t deadline_ns) {
    uint64_t tick = stallcap_tick_ns();
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
            return state;  // REQUESTED (unanswered: left outstanding or cancelled) or CLAIMED (a handler is finishing)
        }
        // Claimed: the handler is unwinding, done within microseconds, unless its thread lost the CPU; the pause
        // doubles each time so that a preempted thread is not polled thousands of times.
        uint64_t wake = state == ST_CLAIMED ? now + claimed_pause : next_look(now, tick);
        if (state == ST_CLAIMED && claimed_pause < tick / 4) claimed_pause *= 2;
        if (wake > deadline_ns) wake = deadline_ns;
        struct timespec until = {.tv_sec = (time_t)(wake / 1000000000ull), .tv_nsec = (long)(wake % 1000000000ull)};
        if (!slept) atomic_fetch_add_explicit(&g_waits, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&g_pauses, 1, memory_order_relaxed);
        slept = 1;
        // Until `wake` on CLOCK_MONOTONIC (absolute); returns at once (EAGAIN) when the handler changed the word
        // since the look above, so a hand-off between the look and the sleep is not left for a tick. Nobody wakes
        // it: an interruption by a signal of the app's only means one more look.
        syscall(SYS_futex, futex_word(), FUTEX_WAIT_BITSET_PRIVATE, (uint32_t)word, &until, NULL,
                FUTEX_BITSET_MATCH_ANY);
    }
}

void stallcap_handoff_counts(stallcap_handoff_stats *counts) {
    counts->spun = atomic_load_explicit(&g_found_at_once, memory_order_relaxed);
    counts->slept = atomic_load_explicit(&g_waits, memory_order_relaxed);
    counts->pauses = atomic_load_explicit(&g_pauses, memory_order_relaxed);
    counts->deadlines = atomic_load_explicit(&g_deadlines, memory_order_relaxed);
}
