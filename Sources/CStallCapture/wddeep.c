// The watchdog's deep sleep while the main thread idles in its run loop: instead of waking every check interval,
// the watchdog waits on the run loop's own epoll set (a duplicate of its descriptor, in an epoll set of ours,
// EPOLLONESHOT), so it wakes exactly when the main thread is about to, and otherwise once per threshold.
// Watchdog thread only, except stallcap_wd_wake_deep (any thread) and stallcap_wd_forget (a forked child).
#define _GNU_SOURCE
#include "stallcapture_blocked.h"
#include "stallcapture_support.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

static int deep_epoll = -1;              // our epoll set: the stop eventfd and the watched duplicate
static _Atomic int deep_event = -1;      // written by stallcap_wd_wake_deep (stop)
static int deep_watched = -1;            // our duplicate of the run loop's epoll descriptor
static int deep_source = -1;             // the app's descriptor it duplicates

int stallcap_wait_single_epoll(const stallcap_syscall_state *state) {
    if (state == NULL || state->kind != STALLCAP_SYSCALL_IN_CALL) return -1;
    long nr = state->nr;
    int fd = -1;
    if (nr == SYS_ppoll) {
        // ppoll(fds, 1, NULL, ...): one descriptor, no timeout.
        struct pollfd entry;
        if (state->args[1] != 1 || state->args[2] != 0) return -1;
        if (stallcap_read_memory(state->args[0], &entry, sizeof entry) != 0 || !(entry.events & POLLIN)) return -1;
        fd = entry.fd;
    } else if (nr == SYS_epoll_pwait) {
        if ((int)state->args[3] != -1) return -1;  // a timeout
        fd = (int)state->args[0];
#ifdef SYS_epoll_wait
    } else if (nr == SYS_epoll_wait) {
        if ((int)state->args[3] != -1) return -1;
        fd = (int)state->args[0];
#endif
    } else {
        return -1;
    }
    return fd >= 0 && stallcap_fd_is_epoll(fd) ? fd : -1;
}

int stallcap_wd_watch(int fd) {
    if (fd < 0) return -1;
    if (fd == deep_source && deep_watched >= 0) return 0;
    if (deep_epoll < 0) {
        deep_epoll = epoll_create1(EPOLL_CLOEXEC);
        int event = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (deep_epoll < 0 || event < 0) {
            if (event >= 0) close(event);
            stallcap_wd_forget();
            return -1;
        }
        struct epoll_event stop = {.events = EPOLLIN, .data.fd = event};
        epoll_ctl(deep_epoll, EPOLL_CTL_ADD, event, &stop);
        atomic_store(&deep_event, event);
    }
    if (deep_watched >= 0) {
        epoll_ctl(deep_epoll, EPOLL_CTL_DEL, deep_watched, NULL);
        close(deep_watched);
        deep_watched = deep_source = -1;
    }
    // Duplicated, then checked again: the app may have closed `fd` and reused its number in between. A duplicate
    // of an epoll descriptor keeps only that epoll instance alive (never a pipe or socket the app closes).
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) return -1;
    struct epoll_event watch = {.events = EPOLLIN | EPOLLONESHOT, .data.fd = copy};
    if (!stallcap_fd_is_epoll(copy) || epoll_ctl(deep_epoll, EPOLL_CTL_ADD, copy, &watch) != 0) {
        close(copy);
        return -1;
    }
    deep_watched = copy;
    deep_source = fd;
    return 0;
}

int stallcap_wd_arm(void) {
    if (deep_epoll < 0 || deep_watched < 0) return -1;
    // Arming checks readiness at once: a set already ready wakes the next stallcap_wd_deep_sleep immediately.
    struct epoll_event watch = {.events = EPOLLIN | EPOLLONESHOT, .data.fd = deep_watched};
    return epoll_ctl(deep_epoll, EPOLL_CTL_MOD, deep_watched, &watch);
}

int stallcap_wd_deep_sleep(uint32_t seen, int64_t timeout_ns) {
    if (deep_epoll < 0 || stallcap_wd_sequence() != seen) return 0;
    int ms = timeout_ns <= 0 ? 0 : (int)((timeout_ns + 999999) / 1000000);
    struct epoll_event events[2];
    int n = epoll_wait(deep_epoll, events, 2, ms);
    int woken = 0;
    for (int i = 0; i < n; i++) {
        if (events[i].data.fd == deep_watched) woken = 1;
    }
    return woken;
}

void stallcap_wd_wake_deep(void) {
    int event = atomic_load(&deep_event);
    if (event >= 0) {
        uint64_t one = 1;
        ssize_t written = write(event, &one, sizeof one);
        (void)written;  // full (never read after stop): the set stays readable, which is all that matters
    }
}

void stallcap_wd_forget(void) {
    int event = atomic_exchange(&deep_event, -1);
    if (event >= 0) close(event);
    if (deep_watched >= 0) close(deep_watched);
    if (deep_epoll >= 0) close(deep_epoll);
    deep_epoll = deep_watched = deep_source = -1;
}
