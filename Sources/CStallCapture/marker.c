// The calling thread's kernel tid without a system call per call, and its marker ring, for StallMarker (app
// threads, any of them).
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

// The calling thread's marker ring (StallMarker's per-thread rings): 0 until it asks for one.
static __thread int32_t stallcap_marker_ring_slot_value;

int32_t stallcap_marker_ring_slot(void) { return stallcap_marker_ring_slot_value; }

void stallcap_set_marker_ring_slot(int32_t slot) { stallcap_marker_ring_slot_value = slot; }

// In a forked child the only thread is the one that forked, under a new tid: forget its cached one, and its
// marker ring (the child's rings start afresh).
static void stallcap_tid_cache_reset_in_child(void) {
    stallcap_tid_cache = 0;
    stallcap_marker_ring_slot_value = 0;
}

// Registered when the image loads, so no call ever takes a lock to register it.
__attribute__((constructor)) static void stallcap_tid_cache_register(void) {
    (void)pthread_atfork(NULL, NULL, stallcap_tid_cache_reset_in_child);
}
