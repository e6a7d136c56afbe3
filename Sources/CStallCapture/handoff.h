// handoff.h: internal to CStallCapture. The request word shared by the watchdog and the signal handler, and the
// hand-off of a finished sample from the handler back to the watchdog without waking a sleeper on the fast path.
//
// The word (64 bits, atomic): bits 0-1 state, bits 2-30 target tid, bit 31 "the watchdog sleeps on the word",
// bits 32-63 generation. The low 32 bits are also the futex word (x86_64 and aarch64 Linux are little-endian):
// every transition the watchdog may sleep through (a claim, done) changes them, so a wait cannot miss one.
#ifndef STALLCAPTURE_HANDOFF_H
#define STALLCAPTURE_HANDOFF_H

#include <stdint.h>
#include <sys/types.h>

enum { ST_IDLE = 0, ST_REQUESTED = 1, ST_CLAIMED = 2, ST_DONE = 3 };

#define HANDOFF_SLEEPING (1ull << 31)
#define HANDOFF_TID_MASK 0x1fffffffu
#define WORD(gen, tid, st) \
    (((uint64_t)(gen) << 32) | ((uint64_t)((uint32_t)(tid) & HANDOFF_TID_MASK) << 2) | (uint64_t)(st))
#define WORD_STATE(w) ((int)((w) & 3u))
#define WORD_TID(w) ((pid_t)(((w) >> 2) & HANDOFF_TID_MASK))
#define WORD_GEN(w) ((uint32_t)((w) >> 32))

/// The one request slot.
extern _Atomic uint64_t stallcap_request_word __attribute__((visibility("hidden")));

/// Decides, once at install, whether spinning can pay off: not when the process may use only one CPU (the
/// watchdog's affinity mask is the process's unless the app changed it). Not in signal context.
__attribute__((visibility("hidden"))) void stallcap_handoff_setup(void);

/// Handler side: claims the request if it is REQUESTED for thread `self` (keeping the sleeping bit). Returns the
/// claimed word, or 0 when there was nothing to claim. Async-signal-safe.
__attribute__((visibility("hidden"))) uint64_t stallcap_handoff_claim(pid_t self);

/// Handler side: marks the claimed request done; makes a futex wake system call only when the watchdog has said
/// it sleeps on the word. Async-signal-safe.
__attribute__((visibility("hidden"))) void stallcap_handoff_done(uint64_t claimed);

/// Watchdog side: after the signal for request `gen` (thread `tid`) was sent, waits for it: spins for a short,
/// bounded time, then sleeps on the futex until CLOCK_MONOTONIC `deadline_ns`. Returns ST_DONE (the result may be
/// collected), ST_IDLE (timed out, the request was cancelled before any handler claimed it) or ST_CLAIMED (timed
/// out while a handler runs: it is left to finish).
__attribute__((visibility("hidden"))) int stallcap_handoff_wait(uint32_t gen, pid_t tid, uint64_t deadline_ns);

#endif
