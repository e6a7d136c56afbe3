// The watchdog's deep sleep while the main thread idles in its run loop: instead of waking every check interval,
// the watchdog waits on the run loop's own epoll set (a duplicate of its descriptor, in an epoll set of ours,
// EPOLLONESHOT), so it wakes when the main thread is about to, and otherwise once per threshold; stop() wakes it
// through a pipe of ours in the same set.
//
// That readiness can be lost: epoll checks an item's readiness again when it collects it, and by then the main
// thread may have drained the run loop's set (its own epoll_wait; edge-triggered items leave the ready list). On a
// loaded machine the main thread often runs first, and the watchdog would sleep a whole threshold into a busy stall
// (measured: 28 of 50 wakes lost by a C harness whose reader runs at once). So an AIO poll of the same set
// (wdaio.c), which completes in the waker's context and cannot be taken back, wakes the sleep through an eventfd
// in the set, where AIO is available; and the main thread's CPU clock wakes it too: a one-shot timer on that clock
// (wdcpu.c), expiring after one more nanosecond of its CPU time, sends the capture signal to the watchdog thread
// itself, which blocks the signal for the sleep and waits for it through a signalfd in the same epoll set.
// Watchdog thread only, except stallcap_wd_wake (any thread) and stallcap_wd_forget_set (a forked child). Below this
// file: the futex word of the sleep between checks (wdsleep.c), which this sleep reads too.
#include "stallcapture_watchdog.h"
#include "owned.h"
#include "waitfds.h"
#include "wdaio.h"
#include "wdcpu.h"
#include "wddeep.h"
#include "wdsleep.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

// Every descriptor here is checked to be still ours before it is used (the app may close any number, even one it
// does not own, and reuse it for a file of its own): see set_is_ours and watched_is_ours. One that is not is
// forgotten, never written, waited on or closed again.
static int deep_epoll = -1;              // our epoll set: the stop pipe's read end and the watched duplicate
static int wake_read = -1;               // the stop pipe's read end (a pipe: its inode is unique, unlike an eventfd's)
static _Atomic int wake_write = -1;      // its write end, written by stallcap_wd_wake (stop)
static stallcap_fd_identity epoll_id, pipe_id;
static int deep_watched = -1;            // our duplicate of the run loop's epoll descriptor
static int deep_source = -1;             // the app's descriptor it duplicates
static int deep_signals = -1;            // signalfd of the capture signal, in deep_epoll (proven as deep_watched)
static int deep_aio_event = -1;          // eventfd, in deep_epoll, that the AIO watch's completions count into
static int deep_signals_signo = 0;
static int deep_off = 0;                 // our set was taken: no deep sleep for the rest of the run
static int aio_drained = 0;              // deep_aio_event was drained since this arming began (stallcap_wd_arm*)
static _Atomic int deep_lost = 0;        // STALLCAP_LOST_* found since stallcap_wd_take_lost

// The set (epoll and pipe) is ours: the read end is our pipe (fstat: its device and inode), and the number
// deep_epoll is an epoll set holding that pipe under that number. An epoll set shares one anonymous inode with
// every other, so its identity is what it holds: EPOLL_CTL_MOD succeeds only on a set with an item for exactly
// (the file now at wake_read, wake_read), which no set of the app's has. The fstat of the epoll descriptor first
// keeps the epoll_ctl off anything but an anonymous-inode file.
static int set_is_ours(void) {
    if (deep_epoll < 0 || wake_read < 0) return 0;
    if (!stallcap_fd_has_identity(wake_read, pipe_id) || !stallcap_fd_has_identity(deep_epoll, epoll_id)) return 0;
    struct epoll_event stop = {.events = EPOLLIN, .data.fd = wake_read};
    return epoll_ctl(deep_epoll, EPOLL_CTL_MOD, wake_read, &stop) == 0;
}

// With the set ours: the number deep_watched still holds the duplicate registered in it (the same check, on our
// set). Re-arms the one-shot watch as a side effect.
static int watched_is_ours(void) {
    if (deep_watched < 0) return 0;
    struct epoll_event watch = {.events = EPOLLIN | EPOLLONESHOT, .data.fd = deep_watched};
    return epoll_ctl(deep_epoll, EPOLL_CTL_MOD, deep_watched, &watch) == 0;
}

// With the set ours: the number deep_signals still holds our signalfd (the same check).
static int signals_are_ours(void) {
    if (deep_signals < 0) return 0;
    struct epoll_event ready = {.events = EPOLLIN, .data.fd = deep_signals};
    return epoll_ctl(deep_epoll, EPOLL_CTL_MOD, deep_signals, &ready) == 0;
}

// With the set ours: the number deep_aio_event still holds our eventfd (the same check). Re-arms its one-shot
// item as a side effect: a count left from an earlier poll (the main thread woke since, or a poll was cancelled)
// wakes a sleep at most once, also one on libdispatch's queue, which never drains it.
static int aio_event_is_ours(void) {
    if (deep_aio_event < 0) return 0;
    struct epoll_event ready = {.events = EPOLLIN | EPOLLONESHOT, .data.fd = deep_aio_event};
    return epoll_ctl(deep_epoll, EPOLL_CTL_MOD, deep_aio_event, &ready) == 0;
}

// Forgets the whole set without touching any of its numbers: they may be the app's now.
static void lose_set(void) {
    stallcap_aio_poll_forget();  // every slot's poll cancelled
    atomic_store(&wake_write, -1);
    deep_epoll = wake_read = deep_watched = deep_source = deep_signals = deep_aio_event = -1;
    deep_off = 1;
    atomic_fetch_or(&deep_lost, STALLCAP_LOST_DEEP_SET);
}

// Forgets the duplicate without touching its number (the AIO watch on its file is cancelled).
static void lose_watched(void) {
    stallcap_aio_poll_cancel();
    deep_watched = deep_source = -1;
    atomic_fetch_or(&deep_lost, STALLCAP_LOST_WATCHED);
}

static int create_set(void) {
    int pipe_fds[2];
    deep_epoll = epoll_create1(EPOLL_CLOEXEC);
    if (deep_epoll < 0 || pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
        if (deep_epoll >= 0) close(deep_epoll);
        deep_epoll = -1;
        return -1;
    }
    struct epoll_event stop = {.events = EPOLLIN, .data.fd = pipe_fds[0]};
    if (stallcap_fd_identity_of(deep_epoll, &epoll_id) != 0 || stallcap_fd_identity_of(pipe_fds[0], &pipe_id) != 0 ||
        epoll_ctl(deep_epoll, EPOLL_CTL_ADD, pipe_fds[0], &stop) != 0) {
        close(pipe_fds[0]);
        close(pipe_fds[1]);
        close(deep_epoll);
        deep_epoll = -1;
        return -1;
    }
    wake_read = pipe_fds[0];
    atomic_store(&wake_write, pipe_fds[1]);
    return 0;
}

int stallcap_wd_watch(int fd) {
    if (fd < 0 || deep_off) return -1;
    if (fd == deep_source && deep_watched >= 0) return 0;  // stallcap_wd_arm proves it all before the sleep
    if (deep_epoll < 0 && create_set() != 0) return -1;
    if (!set_is_ours()) {
        lose_set();
        return -1;
    }
    if (deep_watched >= 0) {
        // Removed only from our own set, and closed only when that proved the number still holds our duplicate.
        if (epoll_ctl(deep_epoll, EPOLL_CTL_DEL, deep_watched, NULL) == 0) {
            stallcap_aio_poll_cancel();
            close(deep_watched);
            deep_watched = deep_source = -1;
        } else {
            lose_watched();
        }
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

// Makes the eventfd that AIO completions count into if there is none, or proves it ours, and drains it once per
// arming (the first watch of the arming starts it afresh: stallcap_wd_arm and stallcap_wd_arm_set begin one).
static int ready_aio_event(void) {
    if (deep_epoll < 0) return -1;
    if (deep_aio_event < 0) {
        int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        struct epoll_event ready = {.events = EPOLLIN | EPOLLONESHOT, .data.fd = fd};
        if (fd < 0 || epoll_ctl(deep_epoll, EPOLL_CTL_ADD, fd, &ready) != 0) {
            if (fd >= 0) close(fd);
            return -1;
        }
        deep_aio_event = fd;
    } else if (!aio_event_is_ours()) {
        stallcap_aio_poll_forget();
        deep_aio_event = -1;  // the number is the app's now: left alone
        return -1;
    }
    if (aio_drained) return 0;
    // Read right after its proof, as the set's descriptors are closed right after theirs (a number swapped by an
    // app thread in between is the one window left: "The host's descriptors" in docs/WATCHDOG.md).
    uint64_t count;
    while (read(deep_aio_event, &count, sizeof count) > 0) {}
    aio_drained = 1;
    return 0;
}

// The AIO watch (wdaio.c) of `watched` (wddeep.h): beside the one-shot epoll watch of the run loop's set, which can
// lose the main thread's wake, or alone, on libdispatch's event set (wddispatch.c).
int stallcap_wd_arm_aio(int watched) {
    if (watched < 0 || ready_aio_event() != 0) return -1;
    return stallcap_aio_poll_arm(watched, deep_aio_event);
}

int stallcap_wd_watch_target(int slot, pid_t tid, int fd, uint64_t since) {
    if (slot < 1 || slot >= WDAIO_SLOTS || fd < 0 || ready_aio_event() != 0) return -1;
    if (stallcap_aio_poll_slot_watches(slot, fd, tid, since)) return 0;
    // Duplicated, then recognized, and closed once the poll holds the file: no number of ours is kept.
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) return -1;
    int result =
        stallcap_fd_is_epoll(copy) ? stallcap_aio_poll_arm_slot(slot, copy, fd, tid, since, deep_aio_event) : -1;
    close(copy);
    return result;
}

int stallcap_wd_target_watch_holds(int slot, pid_t tid, int fd, uint64_t since) {
    return deep_aio_event >= 0 && stallcap_aio_poll_slot_watches(slot, fd, tid, since);
}

void stallcap_wd_unwatch_target(int slot) {
    if (slot >= 1) stallcap_aio_poll_cancel_slot(slot);
}

int stallcap_wd_arm(void) {
    if (deep_epoll < 0 || deep_watched < 0) return -1;
    aio_drained = 0;
    if (!set_is_ours()) {
        lose_set();
        return -1;
    }
    // Arming checks readiness at once: a set already ready wakes the next stallcap_wd_deep_sleep immediately.
    if (!watched_is_ours()) {
        lose_watched();
        return -1;
    }
    (void)stallcap_wd_arm_aio(deep_watched);
    return 0;
}

// Waits on our set, proven ours by the caller.
static int wait_on_set(int64_t timeout_ns) {
    int ms = timeout_ns <= 0 ? 0 : (int)((timeout_ns + 999999) / 1000000);
    struct epoll_event events[4];
    int n = epoll_wait(deep_epoll, events, 4, ms);
    int woken = 0;
    for (int i = 0; i < n; i++) {
        if (events[i].data.fd == wake_read) {
            // stallcap_wd_wake: a stop, or targets added or removed. Drained, once proven still our pipe (the sleep
            // may have lasted thresholds), or its level-triggered readiness would end every later sleep at once.
            char bytes[64];
            if (stallcap_fd_has_identity(wake_read, pipe_id)) {
                while (read(wake_read, bytes, sizeof bytes) > 0) {}
            }
        } else if (events[i].data.fd == deep_watched) woken = 1;
        else if (events[i].data.fd == deep_aio_event) {
            // Drained as it is reported (a count left would end the next rest at once, whose proof re-arms the
            // one-shot item); then which polls finished: a watched event loop's alone is 3; the run loop's or
            // libdispatch's (or a count left over) is 1.
            uint64_t count;
            while (read(deep_aio_event, &count, sizeof count) > 0) {}
            int finished = stallcap_aio_poll_reap();
            int by = (finished & 1) || finished == 0 ? 1 : 3;
            if (woken == 0 || woken == 2 || by == 1) woken = by;
        } else if (events[i].data.fd == deep_signals && woken == 0) woken = 2;
    }
    return woken;
}

int stallcap_wd_watch_holds(void) { return deep_aio_event >= 0 && stallcap_aio_poll_watches(deep_watched); }

int stallcap_wd_deep_sleep(uint32_t seen, int64_t timeout_ns) {
    // Called right after stallcap_wd_arm, which proved the set ours.
    if (deep_epoll < 0 || stallcap_wd_sequence() != seen) return 0;
    return wait_on_set(timeout_ns);
}

int stallcap_wd_rest(uint32_t seen, int64_t timeout_ns) {
    // Everything stays armed from the sleep before, which nothing ended: the one-shot watch was not collected (a
    // collected one ends the rest), and a timer that expired since has readied the signalfd. Only the set is
    // proven ours again, with the calls that suffice: the read end is still our pipe (its inode is unique), the
    // number deep_epoll is a set holding it under that number (EPOLL_CTL_MOD, an error on anything else, with no
    // effect), and the signalfd is still in it (closed by the app, its item would be gone, and with it the wake by
    // CPU time).
    if (deep_epoll < 0 || !stallcap_wdcpu_armed()) return -1;
    if (!stallcap_fd_has_identity(wake_read, pipe_id)) {
        lose_set();
        return -1;
    }
    struct epoll_event stop = {.events = EPOLLIN, .data.fd = wake_read};
    if (epoll_ctl(deep_epoll, EPOLL_CTL_MOD, wake_read, &stop) != 0 || !signals_are_ours()) {
        lose_set();
        return -1;
    }
    // The AIO watches' eventfd too (re-armed as a side effect: a completion since wakes the rest at once), or the
    // event loops resting three thresholds on their polls would have lost their wake.
    if (deep_aio_event >= 0 && !aio_event_is_ours()) {
        stallcap_aio_poll_forget();
        deep_aio_event = -1;  // the number is the app's now: left alone
        return -1;
    }
    if (stallcap_wd_sequence() != seen) return 0;
    return wait_on_set(timeout_ns);
}

void stallcap_wd_wake(void) {
    stallcap_wd_word_wake();  // the sleep between checks; a deep sleep not yet begun sees the word changed
    int event = atomic_load(&wake_write);
    // Only into our own pipe: a number the app took since is left alone.
    if (event >= 0 && stallcap_fd_has_identity(event, pipe_id)) {
        char one = 1;
        ssize_t written = write(event, &one, 1);
        (void)written;  // full (never read after stop): the set stays readable, which is all that matters
    }
}

int stallcap_wd_take_lost(void) { return atomic_exchange(&deep_lost, 0); }

int stallcap_wd_arm_set(void) {
    if (deep_off) return -1;
    aio_drained = 0;
    if (deep_epoll < 0 && create_set() != 0) return -1;
    if (!set_is_ours()) {
        lose_set();
        return -1;
    }
    return 0;
}

int stallcap_wd_arm_cpu(pid_t tid, int signo, long after_ns) {
    // Called right after stallcap_wd_arm or stallcap_wd_arm_set, which proved the set ours.
    if (deep_epoll < 0 || !stallcap_wdcpu_can_arm(tid, signo, after_ns)) return -1;
    if (deep_signals >= 0 && !signals_are_ours()) {
        lose_set();  // the number is the app's now: no deep sleep for the rest of the run, said once
        return -1;
    }
    if (deep_signals >= 0 && deep_signals_signo != signo) {
        epoll_ctl(deep_epoll, EPOLL_CTL_DEL, deep_signals, NULL);
        close(deep_signals);
        deep_signals = -1;
    }
    if (deep_signals < 0) {
        sigset_t only;
        sigemptyset(&only);
        sigaddset(&only, signo);
        int fd = signalfd(-1, &only, SFD_NONBLOCK | SFD_CLOEXEC);
        struct epoll_event ready = {.events = EPOLLIN, .data.fd = fd};
        if (fd < 0 || epoll_ctl(deep_epoll, EPOLL_CTL_ADD, fd, &ready) != 0) {
            if (fd >= 0) close(fd);
            return -1;
        }
        deep_signals = fd;
        deep_signals_signo = signo;
    }
    return stallcap_wdcpu_arm(tid, signo, after_ns);
}

void stallcap_wd_forget_set(void) {
    stallcap_wdcpu_forget();
    int event = atomic_exchange(&wake_write, -1);
    if (set_is_ours()) {
        // In a forked child the set is shared with the parent: watched_is_ours re-arms the parent's watch, at
        // worst one early wake there; a removal (EPOLL_CTL_DEL) would take the watch away from it.
        if (watched_is_ours()) close(deep_watched);
        if (signals_are_ours()) close(deep_signals);
        if (aio_event_is_ours()) close(deep_aio_event);
        if (event >= 0 && stallcap_fd_has_identity(event, pipe_id)) close(event);
        close(wake_read);
        close(deep_epoll);
    }
    stallcap_aio_poll_forget();
    deep_epoll = wake_read = deep_watched = deep_source = deep_signals = deep_aio_event = -1;
    deep_off = 0;
}
