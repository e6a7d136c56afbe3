// The main thread's run-loop wait, as the watchdog reads it: whether a poll-family wait includes a given
// descriptor (read from its arguments with process_vm_readv and from /proc/self/fdinfo of the epoll sets it waits
// on), whether it waits on one epoll set without a timeout, libdispatch's own event set, and the peer of a Unix
// socket it waits on. Watchdog
// thread only; never signals the waiting thread.
#include "stallcapture_watchdog.h"
#include "files.h"
#include "owned.h"
#include "waitfds.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <stdatomic.h>
#include <unistd.h>

// libdispatch's descriptor that wakes a run loop for the main queue (an eventfd on Linux). Weak: a process
// without libdispatch has none.
extern int _dispatch_get_main_queue_handle_4CF(void) __attribute__((weak));

int stallcap_main_queue_fd(void) {
    return _dispatch_get_main_queue_handle_4CF ? _dispatch_get_main_queue_handle_4CF() : -1;
}

// True when `fd` is an anonymous inode of `kind` ("eventpoll", "eventfd"), by its link in /proc/self/fd.
static int fd_is_anon(int fd, const char *kind) {
    char target[64], expected[48];
    snprintf(expected, sizeof expected, "anon_inode:[%s]", kind);
    return stallcap_fd_target(fd, target, sizeof target) > 0 && strcmp(target, expected) == 0;
}

int stallcap_fd_is_epoll(int fd) { return fd_is_anon(fd, "eventpoll"); }

typedef int (*epoll_item_visit)(long fd, unsigned long events, unsigned long long data, void *context);

// Calls `visit` with each item of the epoll set `epfd` as /proc/self/fdinfo lists it ("tfd: <fd> events: <hex>
// data: <hex> ...", one line per item; about a hundred fit the buffer, later ones and a line cut off are not
// seen), until it returns nonzero: returns that, or 0.
static int any_epoll_item(int epfd, epoll_item_visit visit, void *context) {
    char path[64], text[8192];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", epfd);
    if (stallcap_read_small_file(path, text, sizeof text) < 0) return 0;
    for (const char *line = strstr(text, "tfd:"); line != NULL; line = strstr(line + 4, "tfd:")) {
        const char *end = strchr(line, '\n');
        if (end == NULL) break;  // cut off by the buffer: its numbers may be cut too
        const char *events = strstr(line, "events:"), *data = strstr(line, "data:");
        unsigned long mask = events != NULL && events < end ? strtoul(events + 7, NULL, 16) : 0;
        unsigned long long value = data != NULL && data < end ? strtoull(data + 5, NULL, 16) : 0;
        int found = visit(strtol(line + 4, NULL, 10), mask, value, context);
        if (found) return found;
    }
    return 0;
}

struct watch_search { int epfd, fd, depth; };

static int epoll_watches(int epfd, int fd, int depth);

static int item_leads_to_fd(long watched, unsigned long events, unsigned long long data, void *context) {
    (void)events, (void)data;
    const struct watch_search *search = context;
    if (watched == search->fd) return 1;
    return search->depth > 0 && watched != search->epfd && stallcap_fd_is_epoll((int)watched) &&
           epoll_watches((int)watched, search->fd, search->depth - 1);
}

// True when the epoll set `epfd` watches `fd`, directly or through nested sets (`depth` more levels).
static int epoll_watches(int epfd, int fd, int depth) {
    struct watch_search search = {.epfd = epfd, .fd = fd, .depth = depth};
    return any_epoll_item(epfd, item_leads_to_fd, &search);
}

static int descriptor_leads_to(int candidate, int fd) {
    return candidate == fd || (stallcap_fd_is_epoll(candidate) && epoll_watches(candidate, fd, 1));
}

// poll, ppoll: the pollfd array at args[0], args[1] entries (the first 64 are looked at).
static int pollfds_include(const stallcap_syscall_state *state, int fd) {
    struct pollfd entries[64];
    uint64_t count = state->args[1] < 64 ? state->args[1] : 64;
    if (count == 0 || stallcap_read_memory(state->args[0], entries, count * sizeof entries[0]) != 0) return 0;
    for (uint64_t i = 0; i < count; i++) {
        if (entries[i].fd >= 0 && descriptor_leads_to(entries[i].fd, fd)) return 1;
    }
    return 0;
}

// select, pselect6: `fd`'s bit in the read set at args[1] (args[0] descriptors).
static int read_set_includes(const stallcap_syscall_state *state, int fd) {
    if ((uint64_t)fd >= state->args[0] || state->args[1] == 0) return 0;
    unsigned long word = 0;
    uint64_t address = state->args[1] + (uint64_t)(fd / (8 * sizeof word)) * sizeof word;
    if (stallcap_read_memory(address, &word, sizeof word) != 0) return 0;
    return (int)((word >> (fd % (8 * sizeof word))) & 1ul);
}

int stallcap_wait_includes_fd(const stallcap_syscall_state *state, int fd) {
    if (state == NULL || state->kind != STALLCAP_SYSCALL_IN_CALL || fd < 0) return 0;
    long nr = state->nr;
#ifdef SYS_poll
    if (nr == SYS_poll) return pollfds_include(state, fd);
#endif
#ifdef SYS_select
    if (nr == SYS_select) return read_set_includes(state, fd);
#endif
#ifdef SYS_epoll_wait
    if (nr == SYS_epoll_wait) return descriptor_leads_to((int)state->args[0], fd);
#endif
#ifdef SYS_epoll_pwait2
    if (nr == SYS_epoll_pwait2) return descriptor_leads_to((int)state->args[0], fd);
#endif
    if (nr == SYS_ppoll) return pollfds_include(state, fd);
    if (nr == SYS_pselect6) return read_set_includes(state, fd);
    if (nr == SYS_epoll_pwait) return descriptor_leads_to((int)state->args[0], fd);
    return 0;
}

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

// libdispatch's event set (swift-corelibs-libdispatch src/event/event_epoll.c, `_dispatch_epfd`): the epoll set its
// manager thread waits in, holding the descriptors of every dispatch source and the timerfds of every timer. A block
// a timer or a source posts starts as that set's readiness, so a watch on it wakes a deep sleep on the main queue
// when the manager does (WatchdogLoop.sleepOnQueue). The number is private, so the set is recognized by what only
// it holds: libdispatch's wake-up eventfd, registered when the set is made with EPOLLIN | EPOLLFREE (0x4000, the
// kernel's internal POLLFREE bit, which no application asks for) and data 1 (DISPATCH_EPOLL_EVENTFD), as the
// kernel lists it in /proc/self/fdinfo. The set is found from the thread waiting in it (the manager, in epoll_wait
// without a timeout), so only sets that threads wait in are read.
enum { DISPATCH_EVENTFD_EVENTS = 0x4001, DISPATCH_EVENTFD_DATA = 1 };

static int item_is_dispatch_eventfd(long fd, unsigned long events, unsigned long long data, void *context) {
    (void)context;
    return (events & DISPATCH_EVENTFD_EVENTS) == DISPATCH_EVENTFD_EVENTS && data == DISPATCH_EVENTFD_DATA &&
           fd_is_anon((int)fd, "eventfd");
}

int stallcap_is_dispatch_event_set(int epfd) { return any_epoll_item(epfd, item_is_dispatch_eventfd, NULL); }

int stallcap_dispatch_event_set(void) {
    pid_t tids[256];
    int count = stallcap_list_threads(tids, 256, NULL);
    for (int i = 0; i < count; i++) {
        stallcap_syscall_state state;
        if (stallcap_read_syscall(tids[i], &state) != STALLCAP_SYSCALL_IN_CALL) continue;
        int fd = stallcap_wait_single_epoll(&state);
        if (fd >= 0 && stallcap_is_dispatch_event_set(fd)) return fd;
    }
    return -1;
}

// One sock_diag request for the Unix socket `inode` with its peer (the kernel answers during sendto, so the reply is
// read without waiting). A netlink socket of our own, closed before returning. The descriptor checks narrow, not
// close, the window in which an app's dup2 onto the same number could make it another file.
static uint32_t query_peer(uint32_t inode) {
    int sock = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (sock < 0) return 0;
    // Used and closed only while the number still names this socket (an app may dup2 onto any number).
    stallcap_fd_identity mine;
    if (stallcap_fd_identity_of(sock, &mine) != 0) {
        close(sock);
        return 0;
    }
    struct {
        struct nlmsghdr header;
        struct unix_diag_req request;
    } message = {
        .header = {.nlmsg_len = sizeof message, .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST},
        .request = {.sdiag_family = AF_UNIX, .udiag_states = ~0u, .udiag_ino = inode, .udiag_show = UDIAG_SHOW_PEER,
                    .udiag_cookie = {~0u, ~0u}},
    };
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    uint32_t peer = 0;
    long reply[256];  // aligned for the headers read from it
    if (stallcap_fd_has_identity(sock, mine) &&
        sendto(sock, &message, sizeof message, 0, (struct sockaddr *)&kernel, sizeof kernel) == (ssize_t)sizeof message &&
        stallcap_fd_has_identity(sock, mine)) {
        ssize_t length = recv(sock, reply, sizeof reply, MSG_DONTWAIT);
        struct nlmsghdr *header = (struct nlmsghdr *)reply;
        if (length > 0 && NLMSG_OK(header, (size_t)length) && header->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
            header->nlmsg_len >= NLMSG_LENGTH(sizeof(struct unix_diag_msg))) {
            struct unix_diag_msg *answer = NLMSG_DATA(header);
            int left = (int)header->nlmsg_len - (int)NLMSG_LENGTH(sizeof *answer);
            for (struct rtattr *attribute = (struct rtattr *)(answer + 1); answer->udiag_ino == inode && RTA_OK(attribute, left);
                 attribute = RTA_NEXT(attribute, left)) {
                if (attribute->rta_type == UNIX_DIAG_PEER && RTA_PAYLOAD(attribute) >= sizeof peer) {
                    memcpy(&peer, RTA_DATA(attribute), sizeof peer);
                }
            }
        }
    }
    if (stallcap_fd_has_identity(sock, mine)) close(sock);
    return peer;
}

// 1: sock_diag answered the probe; -1: it did not (no unix_diag in the kernel, a security policy): never asked again.
static _Atomic int unix_diag_state;

// Asks for the peer of a socketpair of the watchdog's own: whether the kernel answers at all.
static int probe_unix_diag(void) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return -1;
    stallcap_fd_identity ends[2];
    int known = stallcap_fd_identity_of(pair[0], &ends[0]) == 0 && stallcap_fd_identity_of(pair[1], &ends[1]) == 0;
    int works = known && query_peer((uint32_t)ends[0].ino) == (uint32_t)ends[1].ino;
    for (int i = 0; i < 2; i++) {
        if (known && stallcap_fd_has_identity(pair[i], ends[i])) close(pair[i]);
    }
    return works ? 1 : -1;
}

uint32_t stallcap_unix_socket_peer(int fd, uint32_t inode) {
    int domain = 0;
    socklen_t length = sizeof domain;
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &length) != 0 || domain != AF_UNIX) return 0;
    int state = unix_diag_state;
    if (state == 0) {
        state = probe_unix_diag();
        unix_diag_state = state;
    }
    return state > 0 ? query_peer(inode) : 0;
}
