// wdcpu.h: internal to CStallCapture. The deep sleep's wake on CPU time (wdcpu.c): one-shot timers on threads' (or
// the whole process's) CPU clocks that send the capture signal to the watchdog thread, which blocks that signal
// while any is armed. wddeep.c reads the signal through a signalfd in its set. Watchdog thread only.
#ifndef STALLCAPTURE_WDCPU_H
#define STALLCAPTURE_WDCPU_H

#include <sys/types.h>

/// Most timers kept at once: the main thread's (or the process's) and one per watched event loop's thread.
#define WDCPU_TIMERS 72

/// Blocks `signo` on the calling thread (unless an armed timer blocked it already) and arms a timer to expire after
/// `after_ns` more of thread `tid`'s CPU time (tid 0: the process's), creating it first (all are made afresh for
/// another target or signal). Several clocks may be armed at once, with one signal. Returns 0, or -1 with that
/// clock not armed (and the mask unchanged when no other is). Not for a clock armed already.
__attribute__((visibility("hidden"))) int stallcap_wdcpu_arm(pid_t tid, int signo, long after_ns);

/// 1 when stallcap_wdcpu_arm may be tried with these arguments: that clock not armed, a thread id (0: the
/// process), the signal of the timers armed now (if any) and a positive span; else 0. The one check of both stallcap_wdcpu_arm and wddeep.c's stallcap_wd_arm_cpu (which
/// asks before it makes a signalfd for the signal).
__attribute__((visibility("hidden"))) int stallcap_wdcpu_can_arm(pid_t tid, int signo, long after_ns);

/// 1 while any timer is armed (stallcap_wdcpu_arm, not yet stallcap_wd_disarm_cpu), else 0.
__attribute__((visibility("hidden"))) int stallcap_wdcpu_armed(void);

/// Disarms and deletes the timers (in a forked child, which has none, only forgets them); the watchdog ended.
__attribute__((visibility("hidden"))) void stallcap_wdcpu_forget(void);

#endif
