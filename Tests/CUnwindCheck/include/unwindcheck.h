// unwindcheck.h: a test harness for the capture handler's unwinder (tests only, never linked into an app).
#ifndef UNWINDCHECK_H
#define UNWINDCHECK_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// What unwindcheck_run found.
typedef struct {
    /// Signals whose walks were compared.
    uint32_t signals;
    /// Walks that differed from glibc's `backtrace` from the same signal (after its handler and trampoline frames).
    uint32_t mismatches;
    /// Walks in which the unwinder followed a frame pointer (no unwind information).
    uint32_t frame_pointer_walks;
    /// Smallest and largest number of frames of a compared walk.
    uint32_t min_frames, max_frames;
    /// Compared walks of fewer than 3 frames (short of the thread's start).
    uint32_t short_walks;
    /// The first mismatch: both walks (ours from the interrupted pc; glibc's from the handler).
    uint32_t first_ours_count, first_reference_count;
    uintptr_t first_ours[64], first_reference[64];
} unwindcheck_result;

/// Runs a worker thread through varied code (libc's qsort, snprintf, strtol, memmove, malloc, the vDSO's clock, a
/// recursion), interrupts it `signals` times with SIGRTMAX - 2 at unpredictable points, and in that signal's handler
/// walks the interrupted context with the capture unwinder (`stallcap_unwind_context`, with a cache) and with
/// glibc's `backtrace` (libgcc's unwinder); and from inside the handler, through the signal trampoline's unwind
/// information, with `stallcap_unwind_here`. Returns 0, or -1 when the harness could not run.
int unwindcheck_run(uint32_t signals, unwindcheck_result *result);

#ifdef __cplusplus
}
#endif

#endif
