// The deep sleep's watch on libdispatch's event set (under dispatchMain() or an async @main: WatchdogLoop's
// sleepOnQueue): an AIO poll of a duplicate of the set's descriptor, completing into the deep sleep's eventfd
// (wddeep.c, wdaio.c), and never an item of the watchdog's own epoll set. Nested in a set of ours, the set would
// change libdispatch's own epoll_ctl: from Linux 6.17 (and stable kernels with that fix) the kernel counts the
// depth above a set too, so libdispatch adding an epoll descriptor nested three deep (a dispatch source on it) fails
// with ELOOP and the source never fires, and every add into the set takes the kernel's full loop check (its
// global mutex and a walk of reverse paths). An AIO poll is no epoll link: the same add succeeds (a reviewer's C
// check, 2026-12-06). Where AIO is unavailable the set is not watched at all.
//
// The duplicate is proven before each use by what it holds (stallcap_is_dispatch_event_set: an epoll set with
// libdispatch's wake-up eventfd, of which a process has one): a number the app took since is left alone.
// Watchdog thread only, and stallcap_wd_forget's caller (which forgets the whole deep sleep here: this file is above
// wddeep.c).
#include "stallcapture_watchdog.h"
#include "wdaio.h"
#include "wddeep.h"

#include <fcntl.h>
#include <unistd.h>

static int dispatch_watched = -1;  // our duplicate of libdispatch's event set

// The number dispatch_watched still holds a duplicate of libdispatch's set (ours, unless the app put its own
// duplicate of that private descriptor on our number: not guarded against).
static int dispatch_watched_is_ours(void) {
    return dispatch_watched >= 0 && stallcap_is_dispatch_event_set(dispatch_watched);
}

int stallcap_wd_watch_dispatch(int fd) {
    if (!stallcap_aio_usable()) return -3;
    if (fd < 0) return -1;
    if (dispatch_watched >= 0 && !dispatch_watched_is_ours()) {
        stallcap_aio_poll_cancel();
        dispatch_watched = -1;  // the number is the app's now: left alone
    }
    if (dispatch_watched < 0) {
        // Duplicated, then recognized: `fd` may have been closed and its number reused in between.
        int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (copy < 0) return -1;
        if (!stallcap_is_dispatch_event_set(copy)) {
            close(copy);
            return -1;
        }
        dispatch_watched = copy;
    }
    return stallcap_wd_arm_aio(dispatch_watched);
}

int stallcap_wd_dispatch_watch_holds(void) { return stallcap_aio_poll_watches(dispatch_watched); }

void stallcap_wd_forget(void) {
    if (dispatch_watched_is_ours()) {
        if (stallcap_aio_poll_watches(dispatch_watched)) stallcap_aio_poll_cancel();
        close(dispatch_watched);
    }
    dispatch_watched = -1;
    stallcap_wd_forget_set();
}
