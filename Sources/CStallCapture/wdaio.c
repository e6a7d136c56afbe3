// wdaio.c: the deep sleep's AIO watch (wdaio.h). An epoll item checks its file's readiness again when the waiter
// collects it, so the run loop's set, drained by the main thread first, wakes nobody (wddeep.c). A Linux AIO poll
// (IOCB_CMD_POLL, Linux 4.18) woken with the event mask in the wake-up's key, as an epoll set passes EPOLLIN to its
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
static struct iocb aio_poll;  // the poll in flight; its address is its identity in completions and io_cancel
static int aio_in_flight = 0; // submitted and not yet collected (0 or 1)
static int aio_cancelled = 0; // the poll in flight was cancelled: it watches nothing, and its completion is due

static int aio_available(void) {
    if (aio_owner != 0 && aio_owner != getpid()) aio_owner = 0, aio_context = 0, aio_in_flight = 0, aio_cancelled = 0;
    if (aio_owner != 0) return 1;
    if (aio_off) return 0;
    aio_context = 0;
    if (syscall(SYS_io_setup, 4, &aio_context) != 0) {
        aio_off = 1;
        return 0;
    }
    aio_owner = getpid();
    return 1;
}

int stallcap_aio_usable(void) { return aio_available(); }

int stallcap_aio_poll_arm(int fd, int event_fd) {
    if (fd < 0 || event_fd < 0 || !aio_available()) return -1;
    stallcap_aio_poll_reap();
    if (aio_in_flight) {
        if (!aio_cancelled && aio_poll.aio_fildes == (uint32_t)fd) return 0;
        stallcap_aio_poll_cancel();  // another descriptor's poll: collected by a later arming, which then submits
        return -2;
    }
    memset(&aio_poll, 0, sizeof aio_poll);
    aio_poll.aio_lio_opcode = IOCB_CMD_POLL;
    aio_poll.aio_fildes = (uint32_t)fd;
    aio_poll.aio_buf = POLLIN;
    aio_poll.aio_flags = IOCB_FLAG_RESFD;
    aio_poll.aio_resfd = (uint32_t)event_fd;
    struct iocb *list[1] = {&aio_poll};
    if (syscall(SYS_io_submit, aio_context, 1, list) != 1) return -1;
    aio_in_flight = 1;
    return 0;
}

int stallcap_aio_poll_reap(void) {
    if (aio_owner == 0 || aio_owner != getpid() || !aio_in_flight) return 0;
    struct io_event events[4];
    struct timespec none = {0, 0};
    long n = syscall(SYS_io_getevents, aio_context, 0, 4, events, &none);
    int finished = 0;
    for (long i = 0; i < n; i++) {
        if (events[i].obj == (uint64_t)(uintptr_t)&aio_poll) aio_in_flight = 0, aio_cancelled = 0, finished++;
    }
    return finished;
}

int stallcap_aio_poll_in_flight(void) {
    return aio_owner != 0 && aio_owner == getpid() && aio_in_flight && !aio_cancelled;
}

int stallcap_aio_poll_watches(int fd) {
    if (fd < 0 || !stallcap_aio_poll_in_flight()) return 0;
    stallcap_aio_poll_reap();
    return stallcap_aio_poll_in_flight() && aio_poll.aio_fildes == (uint32_t)fd;
}

void stallcap_aio_poll_cancel(void) {
    if (aio_owner == 0 || aio_owner != getpid() || !aio_in_flight || aio_cancelled) return;
    struct io_event result;
    (void)syscall(SYS_io_cancel, aio_context, &aio_poll, &result);  // EINPROGRESS: its completion comes later
    aio_cancelled = 1;
}

void stallcap_aio_poll_forget(void) {
    if (aio_owner != 0 && aio_owner == getpid()) {
        stallcap_aio_poll_cancel();  // kept, with the context, for the next start to collect
        return;
    }
    aio_owner = 0, aio_context = 0, aio_in_flight = 0, aio_cancelled = 0, aio_off = 0;  // a forked child's
}
