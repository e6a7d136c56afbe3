// The deep sleep's wake on CPU time (wdcpu.h): the main thread's clock (a run loop's deep sleep: the main thread
// leaving its wait runs, and the first scheduler tick that finds it running expires the timer), the process's
// (dispatchMain(): a busy block anywhere), and each watched event loop's thread's (a target's own thread leaving its
// wait). Every timer sends the capture signal to the watchdog thread itself, which blocks it while any is armed:
// blocked, the signal never runs a handler (whatever the app set meanwhile) and never reaches the main thread; it is
// drained before the mask is restored. Timers are kept across sleeps in a table of WDCPU_TIMERS, each on one clock,
// and made afresh for another target thread or signal, or in a forked child (which has no timers).
#include "stallcapture_watchdog.h"
#include "stallcapture_threads.h"
#include "cputimer.h"
#include "wdcpu.h"

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

/// One kept timer: the kernel's id, the thread whose CPU clock it runs on (0: the whole process's), and whether it
/// is armed now.
typedef struct {
    int id;
    pid_t clock;
    int armed;
} wd_timer;

static wd_timer timers[WDCPU_TIMERS];
static int timer_count = 0;       // timers[0..timer_count) exist in timers_pid
static pid_t timers_pid = 0;      // the process that created them (a forked child has no timers)
static pid_t timers_target = 0;   // the thread they signal (the watchdog)
static int timers_signo = 0;
static int masked = 0;            // the signal is blocked: at least one timer was armed since the last disarm
static sigset_t mask_before;

static void delete_timer(int index) {
    if (timers_pid == getpid()) syscall(SYS_timer_delete, timers[index].id);
    timers[index] = timers[--timer_count];
}

static void release_timers(void) {
    while (timer_count > 0) delete_timer(timer_count - 1);
}

static int find_timer(pid_t tid) {
    for (int i = 0; i < timer_count; i++) {
        if (timers[i].clock == tid) return i;
    }
    return -1;
}

int stallcap_wdcpu_can_arm(pid_t tid, int signo, long after_ns) {
    if (tid < 0 || signo <= 0 || after_ns <= 0) return 0;
    if (masked && signo != timers_signo) return 0;
    int index = timers_pid == getpid() ? find_timer(tid) : -1;
    return index < 0 || !timers[index].armed;
}

int stallcap_wdcpu_arm(pid_t tid, int signo, long after_ns) {
    if (!stallcap_wdcpu_can_arm(tid, signo, after_ns)) return -1;
    pid_t self = stallcap_gettid();
    if (!masked && timer_count > 0 && (timers_pid != getpid() || timers_target != self || timers_signo != signo)) {
        if (timers_pid != getpid()) timer_count = 0;  // a forked child's: none exists here
        release_timers();
    }
    int index = find_timer(tid);
    if (index < 0) {
        // Full: a timer not armed now (its thread no longer watched) makes room.
        for (int i = 0; i < timer_count && timer_count == WDCPU_TIMERS; i++) {
            if (!timers[i].armed) delete_timer(i);
        }
        if (timer_count == WDCPU_TIMERS) return -1;
        clockid_t clock = tid == 0 ? CLOCK_PROCESS_CPUTIME_ID : stallcap_thread_cpu_clock(tid);
        int id;
        if (stallcap_cputimer_create(clock, self, signo, &id) != 0) return -1;
        timers_pid = getpid();
        timers_target = self;
        timers_signo = signo;
        index = timer_count++;
        timers[index] = (wd_timer){.id = id, .clock = tid, .armed = 0};
    }
    if (!masked) {
        sigset_t only;
        sigemptyset(&only);
        sigaddset(&only, signo);
        if (pthread_sigmask(SIG_BLOCK, &only, &mask_before) != 0) return -1;
        masked = 1;
    }
    timers[index].armed = 1;
    if (stallcap_cputimer_set(timers[index].id, after_ns) != 0) {
        delete_timer(index);  // ESRCH: the watched thread is gone (its tid may be reused)
        int any = 0;
        for (int i = 0; i < timer_count; i++) any |= timers[i].armed;
        if (!any) stallcap_wd_disarm_cpu();
        return -1;
    }
    return 0;
}

int stallcap_wdcpu_armed(void) { return masked; }

void stallcap_wd_disarm_cpu(void) {
    if (!masked) return;
    // Once timer_settime returns, an expiry in progress has queued its signal. Still blocked, it is taken here
    // without a descriptor (the signalfd is only ever waited on, never read).
    for (int i = 0; i < timer_count; i++) {
        if (timers[i].armed && timers_pid == getpid()) (void)stallcap_cputimer_set(timers[i].id, 0);
        timers[i].armed = 0;
    }
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, timers_signo);
    siginfo_t info;
    struct timespec none = {0, 0};
    while (sigtimedwait(&only, &info, &none) > 0) {}
    pthread_sigmask(SIG_SETMASK, &mask_before, NULL);
    masked = 0;
}

void stallcap_wdcpu_forget(void) {
    // In a forked child the calling thread is not the watchdog (whose mask was saved), and no timer exists.
    if (timers_pid == getpid()) {
        stallcap_wd_disarm_cpu();
        release_timers();
    }
    masked = 0;
    timer_count = 0;
}
