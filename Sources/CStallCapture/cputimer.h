// cputimer.h: internal to CStallCapture. Timers on a thread's CPU clock (cputimer.c): the capture signal's only
// sender (stallcap_cputimer_fire, in stallcapture.h) and the deep sleep's wake on the main thread's CPU time
// (wddeep.c); and the one place a thread's CPU-clock id is built, also read by stallcap_thread_cpu_ns.
#ifndef STALLCAPTURE_CPUTIMER_H
#define STALLCAPTURE_CPUTIMER_H

#include <sys/types.h>
#include <time.h>

/// The CPU clock of thread `tid` of this process for clock_gettime and timer_create: the kernel's encoding of a
/// thread's clock (CPUCLOCK_SCHED with the per-thread bit), what glibc's pthread_getcpuclockid returns for it.
__attribute__((visibility("hidden"))) clockid_t stallcap_thread_cpu_clock(pid_t tid);

/// Disarms `tid`'s timer, if it has one (a signal already on its way is not recalled: the request it would
/// claim was cancelled first).
__attribute__((visibility("hidden"))) void stallcap_cputimer_cancel(pid_t tid);

/// Deletes every timer (the watchdog stopped: nothing of stallprof's stays armed or listed in /proc/self/timers).
__attribute__((visibility("hidden"))) void stallcap_cputimer_release_all(void);

/// Forgets every timer without deleting it (in a child of fork(), which has none).
__attribute__((visibility("hidden"))) void stallcap_cputimer_forget(void);

/// Creates a timer on CPU clock `clock` (stallcap_thread_cpu_clock(tid), or the process's) that sends `signo` to thread `target_tid` (SIGEV_THREAD_ID,
/// with `target_tid` as the signal's value, as the handler expects), storing the kernel's timer id in `*timer`.
/// Returns 0, or -1 with errno set (EINVAL: no such thread here).
__attribute__((visibility("hidden"))) int stallcap_cputimer_create(clockid_t clock, pid_t target_tid, int signo,
                                                                   int *timer);

/// Arms timer `timer` to expire after `nanoseconds` (below 1 s) more of its clock's CPU time; 0 disarms it.
/// Returns 0, or -1 with errno set (ESRCH: the clock's thread is gone).
__attribute__((visibility("hidden"))) int stallcap_cputimer_set(int timer, long nanoseconds);

#endif
