// What a ping's post does to the wait an executor target's thread sits in (stallcap_wait_token, stallcap_wait_stirred
// in stallcapture_watchdog.h): read just before the post and just after it, a wait the post itself ended is one
// whose readiness the post raised, or whose futex word it changed, within microseconds. A handler's own wait (a
// query polling its socket, a contended lock) is not readied by a post to the loop, so it is never learned as the
// loop's idle wait however promptly it lets pings through (WatchdogLoop, RunLoopWait). Watchdog thread only; the
// waiting thread's memory is read with process_vm_readv. Of its descriptors only an epoll set is polled, through a
// duplicate proven an epoll set first (a zero-timeout poll of an epoll set has no side effect; the app's number may
// name another file by now, and a FUSE file's poll asks its server), never the app's number itself: the set of an
// epoll_wait, or the one descriptor of a poll (CoreFoundation's run loop polls its epoll set so). A poll of several
// descriptors has no token (the thread's CPU clock decides alone: WatchedTarget.sendPing).
#include "stallcapture_watchdog.h"
#include "waitfds.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdint.h>
#include <sys/syscall.h>

#include <unistd.h>

// 1 when the epoll set the app's number `fd` names is ready now, 0 when not, -1 when `fd` is no epoll set (any
// more): polled through a duplicate proven an epoll set.
static int epoll_ready(int fd) {
    if (fd < 0) return -1;
    int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) return -1;
    int ready = -1;
    if (stallcap_fd_is_epoll(copy)) {
        struct pollfd set = {.fd = copy, .events = POLLIN};
        ready = poll(&set, 1, 0);
    }
    close(copy);
    return ready;
}

static int is_futex_wait(const stallcap_syscall_state *state) {
    int op = (int)state->args[1] & FUTEX_CMD_MASK;
    return state->nr == SYS_futex && (op == FUTEX_WAIT || op == FUTEX_WAIT_BITSET);
}

// The descriptor of a poll or ppoll on one pollfd (a run loop's wait on its epoll set: CoreFoundation's), or -1.
static int single_pollfd(const stallcap_syscall_state *state) {
    long nr = state->nr;
    int is_poll = nr == SYS_ppoll;
#ifdef SYS_poll
    is_poll = is_poll || nr == SYS_poll;
#endif
    struct pollfd entry;
    if (!is_poll || state->args[1] != 1 || stallcap_read_memory(state->args[0], &entry, sizeof entry) != 0) return -1;
    return entry.fd;
}

static int is_epoll_wait(long nr) {
#ifdef SYS_epoll_wait
    if (nr == SYS_epoll_wait) return 1;
#endif
#ifdef SYS_epoll_pwait2
    if (nr == SYS_epoll_pwait2) return 1;
#endif
    return nr == SYS_epoll_pwait;
}

int stallcap_wait_token(const stallcap_syscall_state *state, uint64_t *token) {
    if (state == NULL || token == NULL || state->kind != STALLCAP_SYSCALL_IN_CALL) return -1;
    long nr = state->nr;
    if (is_futex_wait(state)) {
        uint32_t word;
        if (stallcap_read_memory(state->args[0], &word, sizeof word) != 0) return -1;
        *token = word;
        return 0;
    }
    int ready = is_epoll_wait(nr) ? epoll_ready((int)state->args[0]) : epoll_ready(single_pollfd(state));
    if (ready < 0) return -1;
    *token = (uint64_t)ready;
    return 0;
}

int stallcap_wait_stirred(const stallcap_syscall_state *state, uint64_t before, uint64_t after) {
    if (state == NULL || state->kind != STALLCAP_SYSCALL_IN_CALL) return 0;
    if (is_futex_wait(state)) return before != after;
    return before == 0 && after > 0;
}
