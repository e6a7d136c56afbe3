// wddeep.h: internal to CStallCapture. What wddispatch.c (the watch on libdispatch's event set, above it) needs of
// the deep sleep's set (wddeep.c). Watchdog thread only.
#ifndef STALLCAPTURE_WDDEEP_H
#define STALLCAPTURE_WDDEEP_H

/// Makes the eventfd that AIO completions count into (in the deep sleep's set, one-shot) if there is none, proves it
/// the watchdog's, drains what it counted since the last arming (this arming starts afresh), and submits an AIO poll
/// of `watched` into it unless one still watches it. A poll that finishes after the drain wakes the next deep sleep
/// (return 1), at worst once early. Call after the set was proven the watchdog's (stallcap_wd_arm,
/// stallcap_wd_arm_set). Returns 0 when a poll of `watched` is in flight, -2 when a poll of another descriptor was
/// still in flight (cancelled: the next arming watches `watched`), -1 otherwise (no AIO here, the eventfd taken by
/// the app).
__attribute__((visibility("hidden"))) int stallcap_wd_arm_aio(int watched);

/// Closes the deep sleep's own descriptors, each only if it is still the watchdog's, and forgets them (the watchdog
/// ended, or in a forked child): the whole of stallcap_wd_forget but libdispatch's set's duplicate, which
/// stallcap_wd_forget (wddispatch.c) forgets first.
__attribute__((visibility("hidden"))) void stallcap_wd_forget_set(void);

#endif
