// The watchdog thread's sleep between checks: one futex system call, without libdispatch's semaphore and time
// conversions on each of the 16 wakes per second of an idle watchdog. The deep sleep (wddeep.c) sits above this
// file: it reads the same word before it sleeps, and its stallcap_wd_wake changes the word through here.
#include "stallcapture_watchdog.h"
#include "wdsleep.h"

#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Atomic uint32_t stallcap_wd_word;

uint32_t stallcap_wd_sequence(void) { return atomic_load_explicit(&stallcap_wd_word, memory_order_acquire); }

void stallcap_wd_sleep(uint32_t seen, int64_t timeout_ns) {
    if (timeout_ns <= 0) return;
    struct timespec timeout = {(time_t)(timeout_ns / 1000000000), (long)(timeout_ns % 1000000000)};
    // EAGAIN (the word changed), EINTR and ETIMEDOUT all mean: go and look.
    syscall(SYS_futex, &stallcap_wd_word, FUTEX_WAIT_PRIVATE, seen, &timeout, NULL, 0);
}

void stallcap_wd_word_wake(void) {
    atomic_fetch_add_explicit(&stallcap_wd_word, 1, memory_order_release);
    syscall(SYS_futex, &stallcap_wd_word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}
