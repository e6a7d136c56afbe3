// What a ping's post does to the wait an executor target's thread sits in (stallcap_wait_token, stallcap_wait_stirred
// in stallcapture_watchdog.h): read just before the post and just after it, a wait the post itself ended is one
// whose readiness the post raised, or whose futex word it changed, within microseconds. A handler's own wait (a
// query polling its socket, a contended lock) is not readied by a post to the loop, so it is never learned as the
// loop's idle wait however promptly it lets pings through (WatchdogLoop, RunLoopWait). Watchdog thread only; the
// waiting thread's memory is read with process_vm_readv, its descriptors polled with a zero timeout (no side effect
// on a pipe, socket, eventfd or epoll set), never waited on.
#include "stallcapture_watchdog.h"

#include <linux/futex.h>
#include <poll.h>
#include <stdint.h>
#include <sys/syscall.h>

enum { MOST_POLLFDS = 16 };

// The number of descriptors ready now among `count` pollfds at `address`, or -1 when they cannot be read.
static int ready_pollfds(uint64_t address, uint64_t count) {
    struct pollfd entries[MOST_POLLFDS];
    if (count == 0 || count > MOST_POLLFDS) return -1;
    if (stallcap_read_memory(address, entries, count * sizeof entries[0]) != 0) return -1;
    for (uint64_t i = 0; i < count; i++) entries[i].revents = 0;
    return poll(entries, (nfds_t)count, 0);
}

static int is_futex_wait(const stallcap_syscall_state *state) {
    int op = (int)state->args[1] & FUTEX_CMD_MASK;
    return state->nr == SYS_futex && (op == FUTEX_WAIT || op == FUTEX_WAIT_BITSET);
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

static int is_poll(long nr) {
#ifdef SYS_poll
    if (nr == SYS_poll) return 1;
#endif
    return nr == SYS_ppoll;
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
    int ready = -1;
    if (is_epoll_wait(nr)) {
        struct pollfd set = {.fd = (int)state->args[0], .events = POLLIN};
        ready = (int)state->args[0] >= 0 ? poll(&set, 1, 0) : -1;
    } else if (is_poll(nr)) {
        ready = ready_pollfds(state->args[0], state->args[1]);
    }
    if (ready < 0) return -1;
    *token = (uint64_t)ready;
    return 0;
}

int stallcap_wait_stirred(const stallcap_syscall_state *state, uint64_t before, uint64_t after) {
    if (state == NULL || state->kind != STALLCAP_SYSCALL_IN_CALL) return 0;
    if (is_futex_wait(state)) return before != after;
    return before == 0 && after > 0;
}
