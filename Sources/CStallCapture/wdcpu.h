// wdcpu.h: internal to CStallCapture. The deep sleep's wake on CPU time (wdcpu.c): a one-shot timer on a thread's
// (or the whole process's) CPU clock that sends the capture signal to the watchdog thread, which blocks that signal
// while the timer is armed. wddeep.c reads the signal through a signalfd in its set. Watchdog thread only.
#ifndef STALLCAPTURE_WDCPU_H
#define STALLCAPTURE_WDCPU_H

#include <sys/types.h>

/// Blocks `signo` on the calling thread and arms the timer to expire after `after_ns` more of thread `tid`'s CPU
/// time (tid 0: the process's), creating it (or making it afresh, for another clock, target or signal) first.
/// Returns 0, or -1 with nothing armed and the mask unchanged. Not while armed.
__attribute__((visibility("hidden"))) int stallcap_wdcpu_arm(pid_t tid, int signo, long after_ns);

/// 1 when stallcap_wdcpu_arm may be tried with these arguments: not armed, a thread id (0: the process), a signal
/// and a positive span; else 0. The one check of both stallcap_wdcpu_arm and wddeep.c's stallcap_wd_arm_cpu (which
/// asks before it makes a signalfd for the signal).
__attribute__((visibility("hidden"))) int stallcap_wdcpu_can_arm(pid_t tid, int signo, long after_ns);

/// 1 while armed (stallcap_wdcpu_arm, not yet stallcap_wd_disarm_cpu), else 0.
__attribute__((visibility("hidden"))) int stallcap_wdcpu_armed(void);

/// Disarms and deletes the timer (in a forked child, which has none, only forgets it); the watchdog ended.
__attribute__((visibility("hidden"))) void stallcap_wdcpu_forget(void);

#endif
