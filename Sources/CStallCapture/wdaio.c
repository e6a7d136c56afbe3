// wdaio.c: the deep sleep's AIO watch (wdaio.h). An epoll item checks its file's readiness again when the waiter
// collects it, so the run loop's set, drained by the main thread first, wakes nobody (wddeep.c). A Linux AIO poll
// (IOCB_CMD_POLL, Linux 4.18), one per slot (the run loop's or libdispatch's set, and each watched event
// loop's set), woken with the event mask in the wake-up's key, as an epoll set passes EPOLLIN to its
// own waiters, completes there and then (the kernel's aio_poll_wake), in the waker's context, and its completion
// stays queued, with one added to an eventfd (IOCB_FLAG_RESFD) that the deep sleep's set holds. Measured with a C
// harness whose reader drains the set at once and then blocks: the epoll watch missed 16 of 40 and 58 of 100
// wakes, the AIO poll 0 of 240. Plain wake-ups without a mask, or a context lock held at that instant, fall back to
// the kernel's re-check (a miss is then possible, as with epoll). Where AIO is unavailable the epoll watch remains
// alone. The context lives as long as the process once made (io_destroy waits for RCU grace periods, 28-40 ms
// measured, which stop() would make its caller wait): stop cancels the poll, and the next start collects it. The
// watchdog thread, and the stop() caller once that thread has ended; never signal context.
#include "wdaio.h"

#include <errno.h>
#include <linux/aio_abi.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static aio_context_t aio_context = 0;
static pid_t aio_owner = 0;   // the process that created the context (a forked child has none)
static int aio_off = 0;       // io_setup failed: no AIO here

/// One poll: slot 0 the run loop's (or libdispatch's) set, the others watched event loops' sets.
typedef struct {
    struct iocb poll;  // the poll in flight; its address is its identity in completions and io_cancel
    int in_flight;     // submitted and not yet collected
    int cancelled;     // the poll in flight was cancelled: it watches nothing, and its completion is due
    int source;        // the descriptor it was asked to watch (slot 0: the caller's duplicate; others: the app's)
    int tag;           // who it watches for (a target's thread), with `source` and `since` its identity
    uint64_t since;    // that thread's CPU clock when it was submitted (a thread that ran since may wait elsewhere)
} aio_slot;

static aio_slot slots[WDAIO_SLOTS];

static void forget_slots(void) {
    for (int i = 0; i < WDAIO_SLOTS; i++) slots[i].in_flight = 0, slots[i].cancelled = 0;
}

static int aio_available(void) {
    if (aio_owner != 0 && aio_owner != getpid()) aio_owner = 0, aio_context = 0, forget_slots();
    if (aio_owner != 0) return 1;
    if (aio_off) return 0;
    aio_context = 0;
    if (syscall(SYS_io_setup, WDAIO_SLOTS, &aio_context) != 0) {
        aio_off = 1;
        return 0;
    }
    aio_owner = getpid();
    return 1;
}

int stallcap_aio_usable(void) { return aio_available(); }

static int ours(void) { return aio_owner != 0 && aio_owner == getpid(); }

static int submit(int slot, int fd, int source, int tag, uint64_t since, int event_fd) {
    aio_slot *s = &slots[slot];
    memset(&s->poll, 0, sizeof s->poll);
    s->poll.aio_lio_opcode = IOCB_CMD_POLL;
    s->poll.aio_fildes = (uint32_t)fd;
    s->poll.aio_buf = POLLIN;
    s->poll.aio_flags = IOCB_FLAG_RESFD;
    s->poll.aio_resfd = (uint32_t)event_fd;
    struct iocb *list[1] = {&s->poll};
    if (syscall(SYS_io_submit, aio_context, 1, list) != 1) return -1;
    s->in_flight = 1;
    s->cancelled = 0;
    s->source = source;
    s->tag = tag;
    s->since = since;
    return 0;
}

int stallcap_aio_poll_arm_slot(int slot, int fd, int source, int tag, uint64_t since, int event_fd) {
    if (slot < 0 || slot >= WDAIO_SLOTS || fd < 0 || event_fd < 0 || !aio_available()) return -1;
    stallcap_aio_poll_reap();
    aio_slot *s = &slots[slot];
    if (s->in_flight) {
        if (!s->cancelled && s->source == source && s->tag == tag && s->since == since) return 0;
        stallcap_aio_poll_cancel_slot(slot);  // another descriptor's poll: collected by a later arming
        return -2;
    }
    return submit(slot, fd, source, tag, since, event_fd);
}

int stallcap_aio_poll_arm(int fd, int event_fd) { return stallcap_aio_poll_arm_slot(0, fd, fd, 0, 0, event_fd); }

int stallcap_aio_poll_reap(void) {
    if (!ours()) return 0;
    int any = 0;
    for (int i = 0; i < WDAIO_SLOTS && !any; i++) any = slots[i].in_flight;
    if (!any) return 0;
    struct io_event events[WDAIO_SLOTS];
    struct timespec none = {0, 0};
    long n = syscall(SYS_io_getevents, aio_context, 0, WDAIO_SLOTS, events, &none);
    int finished = 0;
    for (long i = 0; i < n; i++) {
        uintptr_t obj = (uintptr_t)events[i].obj;
        for (int k = 0; k < WDAIO_SLOTS; k++) {
            if (obj != (uintptr_t)&slots[k].poll || !slots[k].in_flight) continue;
            finished |= slots[k].cancelled ? 0 : (k == 0 ? 1 : 2);
            slots[k].in_flight = 0, slots[k].cancelled = 0;
        }
    }
    return finished;
}

int stallcap_aio_poll_slot_watches(int slot, int source, int tag, uint64_t since) {
    if (slot < 0 || slot >= WDAIO_SLOTS || !ours()) return 0;
    aio_slot *s = &slots[slot];
    if (!s->in_flight || s->cancelled || s->source != source || s->tag != tag || s->since != since) return 0;
    stallcap_aio_poll_reap();
    return s->in_flight && !s->cancelled;
}

int stallcap_aio_poll_in_flight(void) { return ours() && slots[0].in_flight && !slots[0].cancelled; }

int stallcap_aio_poll_watches(int fd) { return fd >= 0 && stallcap_aio_poll_slot_watches(0, fd, 0, 0); }

void stallcap_aio_poll_cancel_slot(int slot) {
    if (slot < 0 || slot >= WDAIO_SLOTS || !ours() || !slots[slot].in_flight || slots[slot].cancelled) return;
    struct io_event result;
    (void)syscall(SYS_io_cancel, aio_context, &slots[slot].poll, &result);  // EINPROGRESS: its completion comes later
    slots[slot].cancelled = 1;
}

void stallcap_aio_poll_cancel(void) { stallcap_aio_poll_cancel_slot(0); }

void stallcap_aio_poll_forget(void) {
    if (ours()) {
        for (int i = 0; i < WDAIO_SLOTS; i++) stallcap_aio_poll_cancel_slot(i);  // kept for the next start to collect
        return;
    }
    aio_owner = 0, aio_context = 0, aio_off = 0;  // a forked child's
    forget_slots();
}
