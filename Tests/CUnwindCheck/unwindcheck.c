// Compares the capture handler's unwinder with libgcc's (through glibc's backtrace) at unpredictable interruption
// points: prologues, epilogues, libc without frame pointers, the vDSO. Test-only code.
#include "unwindcheck.h"
#include "stallcapture.h"

#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define DEPTH 128

typedef struct {
    uint32_t ours_count, here_count, reference_count, flags;
    uintptr_t ours[DEPTH];  // from the interrupted context
    uintptr_t here[DEPTH];  // from inside this handler: through the signal trampoline's unwind information
    void *reference[DEPTH];
} walk_pair;

static walk_pair *g_pairs;
static uint32_t g_capacity;
static _Atomic uint32_t g_taken;
static _Atomic int g_stop;
static void *g_cache;

static void on_signal(int signo, siginfo_t *info, void *context) {
    (void)signo;
    (void)info;
    uint32_t index = atomic_load(&g_taken);
    if (index >= g_capacity) return;
    walk_pair *pair = &g_pairs[index];
    pair->flags = 0;
    pair->ours_count = stallcap_unwind_context(context, pair->ours, DEPTH, &pair->flags, g_cache);
    pair->here_count = stallcap_unwind_here(pair->here, DEPTH, &pair->flags, NULL);
    pair->reference_count = (uint32_t)backtrace(pair->reference, DEPTH);
    atomic_store(&g_taken, index + 1);
}

static int compare_ints(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

static long g_sink;

__attribute__((noinline)) static int recurse(int level) {
    if (level == 0) {
        char text[64];
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        // Not "%f" nor strtod: glibc's multi-precision assembly (__mpn_submul_1) has unwind information that
        // leads libgcc to a wild read (seen: SIGSEGV inside backtrace), where this unwinder stops at its bounds.
        // Sixteen times: the deepest rounds then take a twentieth of the worker's time, not a few thousandths, so
        // that signals land 30-40 calls deep in every run (once, at load 0.5, 1,500 signals found 38 frames at most).
        for (int i = 0; i < 16; i++) {
            snprintf(text, sizeof text, "%ld %ld", g_sink, (long)ts.tv_nsec + i);
            g_sink += strtol(text, NULL, 10);
        }
        return (int)text[0];
    }
    return recurse(level - 1) + level;
}

static void *work(void *arg) {
    sigset_t unblock;  // created from a Dispatch worker, the thread inherited its mask, which blocks signals
    sigemptyset(&unblock);
    sigaddset(&unblock, *(int *)arg);
    pthread_sigmask(SIG_UNBLOCK, &unblock, NULL);
    stallcap_warm_thread();
    int values[256];
    char *from = malloc(1 << 16), *to = malloc(1 << 16);
    for (unsigned round = 0; !atomic_load(&g_stop); round++) {
        for (int i = 0; i < 256; i++) values[i] = (int)((round * 2654435761u + (unsigned)i * 40503u) & 0xffff);
        qsort(values, 256, sizeof values[0], compare_ints);
        memmove(to, from, 1 << 16);
        free(malloc(64 + round % 4096));
        g_sink += recurse((int)(round % 40));
    }
    free(from);
    free(to);
    return NULL;
}

/// True when `reference` ends with the `count` addresses of `tail`, after at most `extra` others.
static int ends_with(void *const *reference, uint32_t reference_count, const uintptr_t *tail, uint32_t count,
                     uint32_t extra) {
    if (count == 0 || reference_count < count || reference_count - count > extra) return 0;
    for (uint32_t j = 0; j < count; j++)
        if ((uintptr_t)reference[reference_count - count + j] != tail[j]) return 0;
    return 1;
}

int unwindcheck_run(uint32_t signals, unwindcheck_result *result) {
    int signo = SIGRTMAX - 2;  // a signal no test installs the capture handler on
    memset(result, 0, sizeof *result);
    g_pairs = calloc(signals, sizeof *g_pairs);
    g_cache = calloc(1, stallcap_unwind_cache_size());
    if (g_pairs == NULL || g_cache == NULL) return -1;
    g_capacity = signals;
    atomic_store(&g_taken, 0);
    atomic_store(&g_stop, 0);
    void *warm[4];
    backtrace(warm, 4);  // glibc loads libgcc on its first call: not in a handler
    struct sigaction action, old;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = on_signal;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&action.sa_mask);
    if (sigaction(signo, &action, &old) != 0) return -1;
    pthread_t worker;
    if (pthread_create(&worker, NULL, work, &signo) != 0) return -1;
    usleep(10000);
    uint32_t unanswered = 0;  // in a row: a worker that never takes the signal ends the run
    for (uint32_t sent = 0; atomic_load(&g_taken) < signals && unanswered < 20; sent++) {
        uint32_t before = atomic_load(&g_taken);
        pthread_kill(worker, signo);
        for (int wait = 0; wait < 1000 && atomic_load(&g_taken) == before; wait++) usleep(50);
        unanswered = atomic_load(&g_taken) == before ? unanswered + 1 : 0;
        usleep(37 + (sent * 7919u) % 400);  // an irregular pace: the worker is caught all over its loop
    }
    atomic_store(&g_stop, 1);
    pthread_join(worker, NULL);
    sigaction(signo, &old, NULL);
    result->min_frames = UINT32_MAX;
    for (uint32_t i = 0; i < atomic_load(&g_taken); i++) {
        walk_pair *pair = &g_pairs[i];
        result->signals++;
        if (pair->flags & STALLCAP_FLAG_FRAME_POINTERS) result->frame_pointer_walks++;
        if (pair->ours_count < result->min_frames) result->min_frames = pair->ours_count;
        if (pair->ours_count < 3) result->short_walks++;
        if (pair->ours_count > result->max_frames) result->max_frames = pair->ours_count;
        // glibc's walk starts in this handler (after a frame of ASan's, which intercepts backtrace): ours must be
        // its tail, from the interrupted pc on, after at most 4 frames (the handler, the trampoline, ASan's); the
        // walk from inside the handler must be its tail above the handler's frame (each leaves the handler at
        // another call).
        int same = ends_with(pair->reference, pair->reference_count, pair->ours, pair->ours_count, 4) &&
                   pair->here_count > 2 &&
                   ends_with(pair->reference, pair->reference_count, pair->here + 2, pair->here_count - 2, 2);
        if (same) continue;
        if (result->mismatches++ == 0) {
            result->first_ours_count = pair->ours_count < 64 ? pair->ours_count : 64;
            result->first_reference_count = pair->reference_count < 64 ? pair->reference_count : 64;
            memcpy(result->first_ours, pair->ours, result->first_ours_count * sizeof(uintptr_t));
            memcpy(result->first_reference, pair->reference, result->first_reference_count * sizeof(uintptr_t));
        }
    }
    free(g_pairs);
    free(g_cache);
    return 0;
}
