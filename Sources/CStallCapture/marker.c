// The calling thread's kernel tid without a system call per call, for StallMarker (app threads, any of them).
#define _GNU_SOURCE
#include "stallcapture_marker.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

// 0 until the thread first asks (no thread has tid 0).
static __thread pid_t stallcap_tid_cache;

pid_t stallcap_cached_tid(void) {
    pid_t tid = stallcap_tid_cache;
    if (tid == 0) {
        tid = (pid_t)syscall(SYS_gettid);
        stallcap_tid_cache = tid;
    }
    return tid;
}

// In a forked child the only thread is the one that forked, under a new tid: forget its cached one.
static void stallcap_tid_cache_reset_in_child(void) { stallcap_tid_cache = 0; }

// Registered when the image loads, so no call ever takes a lock to register it.
__attribute__((constructor)) static void stallcap_tid_cache_register(void) {
    (void)pthread_atfork(NULL, NULL, stallcap_tid_cache_reset_in_child);
}
