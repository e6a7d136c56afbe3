// The deep sleep's wake on CPU time (wdcpu.h): the main thread's clock (a run loop's deep sleep: the main thread
// leaving its wait runs, and the first scheduler tick that finds it running expires the timer) or the process's
// (dispatchMain(): a busy block anywhere). The timer sends the capture signal to the watchdog thread itself, which
// blocks it while armed: blocked, the signal never runs a handler (whatever the app set meanwhile) and never reaches
// the main thread; it is drained before the mask is restored. One timer is kept across sleeps and made afresh only
// for another clock, target or signal, or in a forked child (which has no timers).
#include "stallcapture_watchdog.h"
#include "stallcapture_threads.h"
#include "cputimer.h"
#include "wdcpu.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

static int timer_id = 0;          // the kernel's id of the timer, when timer_pid != 0
static pid_t timer_pid = 0;       // the process that created it (a forked child has no timers)
static pid_t timer_clock = 0;     // the thread whose CPU clock it runs on; 0: the whole process's
static pid_t timer_target = 0;    // the thread it signals (the watchdog)
static int timer_signo = 0;
static int armed = 0;
static sigset_t mask_before;

static void release_timer(void) {
    if (timer_pid == getpid()) syscall(SYS_timer_delete, timer_id);
    timer_pid = 0;
}

int stallcap_wdcpu_can_arm(pid_t tid, int signo, long after_ns) {
    return !armed && tid >= 0 && signo > 0 && after_ns > 0;
}

int stallcap_wdcpu_arm(pid_t tid, int signo, long after_ns) {
    if (!stallcap_wdcpu_can_arm(tid, signo, after_ns)) return -1;
    pid_t self = stallcap_gettid();
    if (timer_pid != 0 && (timer_pid != getpid() || timer_clock != tid || timer_target != self || timer_signo != signo))
        release_timer();
    if (timer_pid == 0) {
        clockid_t clock = tid == 0 ? CLOCK_PROCESS_CPUTIME_ID : stallcap_thread_cpu_clock(tid);
        if (stallcap_cputimer_create(clock, self, signo, &timer_id) != 0) return -1;
        timer_pid = getpid();
        timer_clock = tid;
        timer_target = self;
        timer_signo = signo;
    }
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, signo);
    if (pthread_sigmask(SIG_BLOCK, &only, &mask_before) != 0) return -1;
    armed = 1;
    if (stallcap_cputimer_set(timer_id, after_ns) != 0) {  // relative: after_ns more of that clock's CPU time
        stallcap_wd_disarm_cpu();
        release_timer();  // ESRCH: the watched thread is gone (its tid may be reused)
        return -1;
    }
    return 0;
}

int stallcap_wdcpu_armed(void) { return armed; }

void stallcap_wd_disarm_cpu(void) {
    if (!armed) return;
    // Once timer_settime returns, an expiry in progress has queued its signal. Still blocked, it is taken here
    // without a descriptor (the signalfd is only ever waited on, never read).
    if (timer_pid != 0) (void)stallcap_cputimer_set(timer_id, 0);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, timer_signo);
    siginfo_t info;
    struct timespec none = {0, 0};
    while (sigtimedwait(&only, &info, &none) > 0) {}
    pthread_sigmask(SIG_SETMASK, &mask_before, NULL);
    armed = 0;
}

void stallcap_wdcpu_forget(void) {
    // In a forked child the calling thread is not the watchdog (whose mask was saved), and no timer exists.
    if (timer_pid == getpid()) stallcap_wd_disarm_cpu();
    armed = 0;
    release_timer();
}
