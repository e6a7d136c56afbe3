// handoff.h: internal to CStallCapture. The request word shared by the watchdog and the signal handler, and the
// hand-off of a finished sample from the handler back to the watchdog, which looks at it once per tick, when a
// handler has usually finished (the handler wakes nobody).
//
// The word (64 bits, atomic): bits 0-1 state, bits 2-30 target tid, bit 31 unused, bits 32-63 generation. The low
// 32 bits are also the futex word the watchdog pauses on (x86_64 and aarch64 Linux are little-endian): a claim or
// done since its last look changes them, so its pause then ends at once.
#ifndef STALLCAPTURE_HANDOFF_H
#define STALLCAPTURE_HANDOFF_H

#include <stdint.h>
#include <sys/types.h>

enum { ST_IDLE = 0, ST_REQUESTED = 1, ST_CLAIMED = 2, ST_DONE = 3 };

#define HANDOFF_TID_MASK 0x1fffffffu
#define WORD(gen, tid, st) \
    (((uint64_t)(gen) << 32) | ((uint64_t)((uint32_t)(tid) & HANDOFF_TID_MASK) << 2) | (uint64_t)(st))
#define WORD_STATE(w) ((int)((w) & 3u))
#define WORD_TID(w) ((pid_t)(((w) >> 2) & HANDOFF_TID_MASK))
#define WORD_GEN(w) ((uint32_t)((w) >> 32))

/// The one request slot.
extern _Atomic uint64_t stallcap_request_word __attribute__((visibility("hidden")));

/// Handler side: claims the request if it is REQUESTED for thread `self`. Returns the
/// claimed word, or 0 when there was nothing to claim. Async-signal-safe.
__attribute__((visibility("hidden"))) uint64_t stallcap_handoff_claim(pid_t self);

/// Handler side: marks the claimed request done (one atomic store, no system call). Async-signal-safe.
__attribute__((visibility("hidden"))) void stallcap_handoff_done(uint64_t claimed);

/// Watchdog side: after the timer for request `gen` was armed, waits for its handler until CLOCK_MONOTONIC
/// `deadline_ns`, looking at the word once per tick, just after a handler has usually finished (learned with
/// stallcap_handoff_learn), then at short pauses while a handler holds the claim. Returns ST_DONE (the result may
/// be collected), ST_REQUESTED (the deadline passed unanswered: the request is left outstanding unless the caller
/// cancels it), ST_CLAIMED (the deadline passed while a handler runs) or ST_IDLE (cancelled).
__attribute__((visibility("hidden"))) int stallcap_handoff_wait(uint32_t gen, uint64_t deadline_ns);

/// Watchdog side: notes when (CLOCK_MONOTONIC) a handler finished, so that later waits look at the word at that
/// point of their ticks.
__attribute__((visibility("hidden"))) void stallcap_handoff_learn(uint64_t finished_ns);

#endif
