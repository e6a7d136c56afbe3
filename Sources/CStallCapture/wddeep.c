// The watchdog's deep sleep while the main thread idles in its run loop: instead of waking every check interval,
// the watchdog waits on the run loop's own epoll set (a duplicate of its descriptor, in an epoll set of ours,
// EPOLLONESHOT), so it wakes when the main thread is about to, and otherwise once per threshold.
//
// That readiness can be lost: epoll checks an item's readiness again when it collects it, and by then the main
// thread may have drained the run loop's set (its own epoll_wait; edge-triggered items leave the ready list). On a
// loaded machine the main thread often runs first: the watchdog then slept a whole threshold into a busy stall
// (measured: 28 of 50 wakes lost by a C harness whose reader runs at once). So the main thread's CPU clock wakes
// the sleep too: a one-shot timer on that clock, expiring after one more nanosecond of its CPU time, sends the
// capture signal to the watchdog thread itself, which blocks the signal for the sleep and waits for it through a
// signalfd in the same epoll set. Blocked, the signal never runs a handler (whatever the app set meanwhile) and
// never reaches the main thread; it is drained before the mask is restored.
// Watchdog thread only, except stallcap_wd_wake_deep (any thread) and stallcap_wd_forget (a forked child).
#define _GNU_SOURCE
#include "handoff.h"
#include "stallcapture_blocked.h"
#include "stallcapture_support.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <unistd.h>

static int deep_epoll = -1;              // our epoll set: the stop eventfd and the watched duplicate
static _Atomic int deep_event = -1;      // written by stallcap_wd_wake_deep (stop)
static int deep_watched = -1;            // our duplicate of the run loop's epoll descriptor
static int deep_source = -1;             // the app's descriptor it duplicates
static int deep_signals = -1;            // signalfd of the capture signal, in deep_epoll
static int deep_signals_signo = 0;
static int deep_timer = 0;               // the kernel's id of the CPU-clock timer, when deep_timer_pid != 0
static pid_t deep_timer_pid = 0;         // the process that created it (a forked child has no timers)
static pid_t deep_timer_clock = 0;       // the thread whose CPU clock it runs on
static pid_t deep_timer_target = 0;      // the thread it signals (the watchdog)
static int deep_timer_signo = 0;
static int deep_cpu_armed = 0;
static sigset_t deep_mask_before;

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
        else if (events[i].data.fd == deep_signals && woken == 0) woken = 2;
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

static void release_timer(void) {
    if (deep_timer_pid == getpid()) syscall(SYS_timer_delete, deep_timer);
    deep_timer_pid = 0;
}


int stallcap_wd_arm_cpu(pid_t tid, int signo) {
    if (deep_epoll < 0 || deep_cpu_armed || tid <= 0 || signo <= 0) return -1;
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, signo);
    if (deep_signals >= 0 && deep_signals_signo != signo) {
        epoll_ctl(deep_epoll, EPOLL_CTL_DEL, deep_signals, NULL);
        close(deep_signals);
        deep_signals = -1;
    }
    if (deep_signals < 0) {
        int fd = signalfd(-1, &only, SFD_NONBLOCK | SFD_CLOEXEC);
        struct epoll_event ready = {.events = EPOLLIN, .data.fd = fd};
        if (fd < 0 || epoll_ctl(deep_epoll, EPOLL_CTL_ADD, fd, &ready) != 0) {
            if (fd >= 0) close(fd);
            return -1;
        }
        deep_signals = fd;
        deep_signals_signo = signo;
    }
    pid_t self = (pid_t)syscall(SYS_gettid);
    if (deep_timer_pid != 0 && (deep_timer_pid != getpid() || deep_timer_clock != tid || deep_timer_target != self ||
                                deep_timer_signo != signo))
        release_timer();
    if (deep_timer_pid == 0) {
        if (stallcap_cputimer_create(tid, self, signo, &deep_timer) != 0) return -1;
        deep_timer_pid = getpid();
        deep_timer_clock = tid;
        deep_timer_target = self;
        deep_timer_signo = signo;
    }
    if (pthread_sigmask(SIG_BLOCK, &only, &deep_mask_before) != 0) return -1;
    deep_cpu_armed = 1;
    if (stallcap_cputimer_set(deep_timer, 1) != 0) {  // one more nanosecond of the main thread's CPU time
        stallcap_wd_disarm_cpu();
        release_timer();  // ESRCH: the watched thread is gone (its tid may be reused)
        return -1;
    }
    return 0;
}

void stallcap_wd_disarm_cpu(void) {
    if (!deep_cpu_armed) return;
    // Once timer_settime returns, an expiry in progress has queued its signal: the drain below takes it.
    if (deep_timer_pid != 0) (void)stallcap_cputimer_set(deep_timer, 0);
    struct signalfd_siginfo info;
    while (deep_signals >= 0 && read(deep_signals, &info, sizeof info) == (ssize_t)sizeof info) {}
    pthread_sigmask(SIG_SETMASK, &deep_mask_before, NULL);
    deep_cpu_armed = 0;
}

void stallcap_wd_forget(void) {
    // In a forked child the calling thread is not the watchdog (whose mask was saved), and no timer exists.
    if (deep_timer_pid == getpid()) stallcap_wd_disarm_cpu();
    deep_cpu_armed = 0;
    release_timer();
    int event = atomic_exchange(&deep_event, -1);
    if (event >= 0) close(event);
    if (deep_signals >= 0) close(deep_signals);
    if (deep_watched >= 0) close(deep_watched);
    if (deep_epoll >= 0) close(deep_epoll);
    deep_epoll = deep_watched = deep_source = deep_signals = -1;
}
