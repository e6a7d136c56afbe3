// libdispatch's main queue, read in place: under dispatchMain() or an async @main the queue is drained by pool
// workers, and whether it is idle (nothing queued, nobody draining it) is in two words of the queue itself,
// `_dispatch_main_q`. Reading them touches no thread and enqueues nothing, where a ping wakes a worker.
//
// The layout is swift-corelibs-libdispatch's `struct dispatch_queue_static_s` on LP64 (src/queue_internal.h,
// DISPATCH_LANE_CLASS_HEADER): the object header (vtable, two reference counts, do_next, do_targetq, do_ctxt,
// do_finalizer: 48 bytes), then dq_items_tail (the pointer-sized field a lane carves out of the queue header),
// dq_state, dq_serialnum, dq_label, dq_atomic_flags. It is a private layout, so it is checked, never assumed:
// here against two fields libdispatch fixes for the main queue (serial number 1, and the label pointer that the
// public dispatch_queue_get_label returns), and by the watchdog against the drain lock, which must hold the id of
// the thread that runs a ping (WatchdogLoop, DispatchQueueIdle). Any thread; plain atomic loads.
#include "stallcapture_watchdog.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

// Weak: a process without libdispatch has neither.
extern char _dispatch_main_q[] __attribute__((weak));
extern const char *dispatch_queue_get_label(void *queue) __attribute__((weak));
extern void *dispatch_get_current_queue(void) __attribute__((weak));

enum {
    ITEMS_TAIL = 48,  // struct dispatch_object_s *volatile dq_items_tail
    STATE = 56,       // uint64_t volatile dq_state
    SERIALNUM = 64,   // unsigned long dq_serialnum (1 for the main queue)
    LABEL = 72,       // const char *dq_label ("com.apple.main-thread")
    FLAGS = 80,       // uint32_t volatile dq_atomic_flags
};

static const char *queue(void) {
    if (sizeof(void *) != 8 || !_dispatch_main_q || !dispatch_queue_get_label) return NULL;
    return _dispatch_main_q;
}

static int read_queue(const char *q, stallcap_main_queue_reading *reading);

int stallcap_main_queue_layout(void) {
    const char *q = queue();
    if (!q) return 0;
    const char *label = dispatch_queue_get_label((void *)q);
    return label != NULL && *(const unsigned long *)(q + SERIALNUM) == 1 && *(const char *const *)(q + LABEL) == label;
}

int stallcap_main_queue_read(stallcap_main_queue_reading *reading) {
    const char *q = queue();
    return q ? read_queue(q, reading) : -1;
}

const void *stallcap_current_queue(void) {
    return dispatch_get_current_queue && sizeof(void *) == 8 ? dispatch_get_current_queue() : NULL;
}

int stallcap_queue_read(const void *queue, stallcap_main_queue_reading *reading) {
    const char *q = queue;
    if (!q || sizeof(void *) != 8 || !dispatch_queue_get_label) return -1;
    const char *label = dispatch_queue_get_label((void *)q);
    if (label == NULL || *(const char *const *)(q + LABEL) != label) return -1;
    return read_queue(q, reading);
}

/// Reads queue `q`'s state, tail and flags (see stallcap_main_queue_read).
static int read_queue(const char *q, stallcap_main_queue_reading *reading) {
    _Atomic uint64_t *state = (_Atomic uint64_t *)(q + STATE);
    // The tail between two reads of the state that agree: a block pushed before the first read shows in the tail or
    // the state's bits (a push stores the tail first), and one that was locked and popped after it either still
    // holds the drain lock at the second read or has run to its end. Retried a few times when they differ;
    // then -1, as if unreadable (the caller pings).
    for (int attempt = 0; attempt < 4; attempt++) {
        uint64_t before = atomic_load_explicit(state, memory_order_acquire);
        uintptr_t tail = atomic_load_explicit((_Atomic uintptr_t *)(q + ITEMS_TAIL), memory_order_acquire);
        uint32_t flags = atomic_load_explicit((_Atomic uint32_t *)(q + FLAGS), memory_order_acquire);
        uint64_t after = atomic_load_explicit(state, memory_order_acquire);
        if (before != after) continue;
        reading->state = after;
        reading->tail = tail;
        reading->flags = flags;
        return 0;
    }
    return -1;
}
