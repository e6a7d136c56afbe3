// The capture signal's only sender: a one-shot timer on the sampled thread's own CPU clock.
//
// A signal sent with tgkill reaches a thread wherever it is, also in a sleep it entered a microsecond after the
// watchdog last looked: nanosleep, poll, epoll_wait and select then fail with EINTR or return early, whatever
// SA_RESTART says. Checking /proc/<tid>/syscall first leaves a window between the check and the signal (measured:
// about 1 % of samples cut a sleep short for a thread that sleeps every 5 ms). A timer on the thread's CPU clock
// (CLOCK_THREAD_CPUTIME_ID of that tid, SIGEV_THREAD_ID to that tid) closes it: it can expire only while the
// thread consumes CPU, at a scheduler tick that finds it running, and the kernel (CONFIG_POSIX_CPU_TIMERS_TASK_WORK,
// the default on x86_64 and arm64) generates the signal as task work on the thread's own way back to user space,
// never while it sleeps. (Without that option the tick itself sends it: a thread caught inside a system call's
// entry, before it sleeps, could still see EINTR; a window of a few instructions instead of the /proc check's.) A
// thread in a system call meets the signal after the call returned, with its result. The cost: the signal comes at the next tick the thread runs in (4 ms at HZ=250), not at once.
//
// Called only by the one thread that samples (stallcap_sample's contract), so the slots need no lock; raw system
// calls, so nothing here allocates or takes a lock the sampled thread could hold.
#include "cputimer.h"
#include "stallcapture.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/// Timers kept: the main thread's, a lock owner's or two.
#define SLOTS 4

typedef struct {
    pid_t tid;      // 0: free
    int signo;
    int timer;      // the kernel's timer id
    uint64_t used;  // for eviction: the least recently used slot goes
} timer_slot;

static timer_slot g_slots[SLOTS];
static uint64_t g_uses = 0;

static void release(timer_slot *slot) {
    if (slot->tid != 0) syscall(SYS_timer_delete, slot->timer);
    slot->tid = 0;
    slot->used = 0;  // a free slot is the first taken
}

/// The slot of `tid`, creating its timer (evicting the least recently used one) when there is none. Returns NULL
/// with errno set when the timer cannot be created (EINVAL: no such thread in this process).
static timer_slot *slot_for(pid_t tid, int signo) {
    timer_slot *victim = &g_slots[0];
    for (int i = 0; i < SLOTS; i++) {
        if (g_slots[i].tid == tid && g_slots[i].signo == signo) return &g_slots[i];
        if (g_slots[i].used < victim->used) victim = &g_slots[i];
    }
    release(victim);
    int timer = 0;
    if (stallcap_cputimer_create(stallcap_thread_cpu_clock(tid), tid, signo, &timer) != 0) return NULL;
    victim->tid = tid;
    victim->signo = signo;
    victim->timer = timer;
    return victim;
}

clockid_t stallcap_thread_cpu_clock(pid_t tid) { return (clockid_t)(((unsigned int)~tid) << 3) | 6; }

int stallcap_cputimer_create(clockid_t clock, pid_t target_tid, int signo, int *timer) {
    struct sigevent event;
    memset(&event, 0, sizeof event);
    event.sigev_notify = SIGEV_THREAD_ID;
    event.sigev_signo = signo;
    event._sigev_un._tid = target_tid;
    event.sigev_value.sival_int = target_tid;  // the handler knows its thread by this value, without gettid
    return syscall(SYS_timer_create, clock, &event, timer) == 0 ? 0 : -1;
}

int stallcap_cputimer_set(int timer, long nanoseconds) {
    struct itimerspec value;
    memset(&value, 0, sizeof value);
    value.it_value.tv_nsec = nanoseconds;  // 0 disarms; 1 expires after one more nanosecond of the thread's CPU
    return (int)syscall(SYS_timer_settime, timer, 0, &value, NULL);
}

static int set(timer_slot *slot, long nanoseconds) { return stallcap_cputimer_set(slot->timer, nanoseconds); }

int stallcap_cputimer_fire(pid_t tid, int signo) {
    for (int attempt = 0; attempt < 2; attempt++) {
        timer_slot *slot = slot_for(tid, signo);
        if (slot == NULL) return errno == EINVAL ? ESRCH : errno;
        slot->used = ++g_uses;
        // Relative and in the future: a value already due would make the kernel fire at once, from here, into
        // whatever the thread is doing.
        if (set(slot, 1) == 0) return 0;
        int err = errno;
        release(slot);  // ESRCH: the thread this timer watched is gone (its tid may be reused): create it again
        if (err != ESRCH) return err;
    }
    return ESRCH;
}

void stallcap_cputimer_cancel(pid_t tid) {
    for (int i = 0; i < SLOTS; i++)
        if (g_slots[i].tid == tid) (void)set(&g_slots[i], 0);
}

void stallcap_cputimer_release_all(void) {
    for (int i = 0; i < SLOTS; i++) release(&g_slots[i]);
}

void stallcap_cputimer_forget(void) {
    // In a child of fork(): the timers were not inherited, their ids mean nothing here.
    memset(g_slots, 0, sizeof g_slots);
    g_uses = 0;
}
