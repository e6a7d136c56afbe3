// wdaio.h: internal to CStallCapture. The deep sleep's second watch on the run loop's epoll set (wddeep.c), and its
// only watch on libdispatch's event set (wddispatch.c): a Linux AIO poll (IOCB_CMD_POLL) that completes into an
// eventfd, which no drain by the main thread (or libdispatch's manager) can take back.
#ifndef STALLCAPTURE_WDAIO_H
#define STALLCAPTURE_WDAIO_H

#include <stdint.h>

/// Polls at most in flight at once: slot 0 for the run loop's or libdispatch's set, the rest for watched event
/// loops' sets (WDAIO_SLOTS - 1 of them).
#define WDAIO_SLOTS 65

/// 1 when this process can use Linux AIO (its context made, or made now), 0 when it cannot (no such system call, a
/// seccomp filter, the system's limit of contexts: tried once per process).
__attribute__((visibility("hidden"))) int stallcap_aio_usable(void);

/// Submits a poll for input on `fd` whose completion adds one to the eventfd `event_fd`, unless a poll is still in
/// flight (one at a time: a poll not yet finished keeps watching its file). Returns 0 when a poll of `fd` watches
/// now, -1 when AIO is unavailable here, -2 when a poll of another descriptor was still in flight (it is cancelled,
/// and a later arming, once it is collected, submits this one).
__attribute__((visibility("hidden"))) int stallcap_aio_poll_arm(int fd, int event_fd);

/// Like stallcap_aio_poll_arm, in `slot`, for the poll of `fd` whose identity is (`source`, `tag`, `since`): the
/// poll in flight there is kept when it has that identity, else cancelled (-2). `fd` may be closed once this
/// returns (the poll holds its file).
__attribute__((visibility("hidden"))) int stallcap_aio_poll_arm_slot(int slot, int fd, int source, int tag,
                                                                    uint64_t since, int event_fd);

/// True when the poll in `slot` with identity (`source`, `tag`, `since`) watches now (collected first).
__attribute__((visibility("hidden"))) int stallcap_aio_poll_slot_watches(int slot, int source, int tag,
                                                                        uint64_t since);

/// Cancels the poll in flight in `slot`, if any (collected later, as stallcap_aio_poll_cancel's).
__attribute__((visibility("hidden"))) void stallcap_aio_poll_cancel_slot(int slot);

/// Collects the polls that finished, without waiting. Returns a mask of which did, cancelled ones aside: 1 slot
/// 0's, 2 another slot's (their eventfd counts hold them).
__attribute__((visibility("hidden"))) int stallcap_aio_poll_reap(void);

/// True when a poll watches now: submitted in this process, not cancelled and not yet collected.
__attribute__((visibility("hidden"))) int stallcap_aio_poll_in_flight(void);

/// True when a poll of `fd` watches now: in flight and not cancelled, collected first (a finished poll watches
/// nothing any more).
__attribute__((visibility("hidden"))) int stallcap_aio_poll_watches(int fd);

/// Cancels the poll in flight (the file it watches is about to be let go); it finishes soon after and is collected
/// by a later stallcap_aio_poll_reap, before which no new poll is submitted.
__attribute__((visibility("hidden"))) void stallcap_aio_poll_cancel(void);

/// Cancels every poll (the watchdog ended); the context stays for the process's next watchdog, which collects the
/// cancelled poll before its first. In a forked child, whose process has no such context, only forgets it.
__attribute__((visibility("hidden"))) void stallcap_aio_poll_forget(void);

#endif
