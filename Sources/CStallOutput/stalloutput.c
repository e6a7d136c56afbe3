#include "stalloutput.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { GUARDED_COUNT = 3 };
static const int guarded_signals[GUARDED_COUNT] = {SIGINT, SIGTERM, SIGHUP};

/// The file the handler removes: copied here before the guard is armed, never allocated in the handler.
static char guarded_path[PATH_MAX];
/// 1 while guarded_path names a file to remove.
static volatile sig_atomic_t guarded = 0;
/// 1 while stalloutput_create() makes the file: a handler running on another thread (the creating one has the
/// signals blocked) waits for its name, a few system calls away, so that no signal leaves the file behind.
static volatile sig_atomic_t creating = 0;
/// The actions the guard replaced, put back when it is disarmed.
static struct sigaction previous[GUARDED_COUNT];
static int replaced[GUARDED_COUNT];

/// The handler: remove the file, then die of the signal (its default action, raised again: it is delivered when
/// the handler returns, the signal being blocked inside it). unlink, sigaction and raise are async-signal-safe.
static void on_signal(int signo) {
    while (creating) {
    }
    if (guarded) {
        unlink(guarded_path);
        guarded = 0;
    }
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = SIG_DFL;
    sigemptyset(&action.sa_mask);
    sigaction(signo, &action, NULL);
    raise(signo);
}

/// Blocks the guarded signals; `saved` gets the mask to restore.
static void block(sigset_t *saved) {
    sigset_t set;
    sigemptyset(&set);
    for (int i = 0; i < GUARDED_COUNT; i++) sigaddset(&set, guarded_signals[i]);
    pthread_sigmask(SIG_BLOCK, &set, saved);
}

static void restore(const sigset_t *saved) { pthread_sigmask(SIG_SETMASK, saved, NULL); }

/// Puts back the actions the guard replaced (signals blocked by the caller).
static void disarm(void) {
    guarded = 0;
    for (int i = 0; i < GUARDED_COUNT; i++) {
        if (replaced[i]) sigaction(guarded_signals[i], &previous[i], NULL);
        replaced[i] = 0;
    }
}

int stalloutput_create(char *template) {
    if (strlen(template) >= sizeof guarded_path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    sigset_t saved;
    block(&saved);
    if (guarded) {
        restore(&saved);
        errno = EBUSY;
        return -1;
    }
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    for (int i = 0; i < GUARDED_COUNT; i++) sigaddset(&action.sa_mask, guarded_signals[i]);
    creating = 1;
    for (int i = 0; i < GUARDED_COUNT; i++) {
        replaced[i] = 0;
        if (sigaction(guarded_signals[i], NULL, &previous[i]) != 0) continue;
        if (!(previous[i].sa_flags & SA_SIGINFO) && previous[i].sa_handler == SIG_IGN) continue;  // stays ignored
        if (sigaction(guarded_signals[i], &action, NULL) == 0) replaced[i] = 1;
    }
    int fd = mkostemp(template, O_CLOEXEC);
    int error = errno;
    if (fd >= 0) {
        memcpy(guarded_path, template, strlen(template) + 1);
        guarded = 1;
    } else {
        disarm();
    }
    creating = 0;
    restore(&saved);
    errno = error;
    return fd;
}

int stalloutput_commit(const char *target) {
    sigset_t saved;
    block(&saved);
    if (!guarded) {
        restore(&saved);
        errno = ENOENT;
        return -1;
    }
    if (rename(guarded_path, target) != 0) {
        int error = errno;
        restore(&saved);
        errno = error;
        return -1;
    }
    disarm();
    restore(&saved);
    return 0;
}

void stalloutput_abandon(void) {
    sigset_t saved;
    block(&saved);
    if (guarded) unlink(guarded_path);
    disarm();
    restore(&saved);
}
