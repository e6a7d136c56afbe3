// Descriptor identities: how the watchdog knows a descriptor number is still its own before it writes, waits on or
// closes it (an app may close numbers it does not own, and reuse them for files of its own).
#include "stallcapture_watchdog.h"
#include "owned.h"

#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

int stallcap_fd_identity_of(int fd, stallcap_fd_identity *identity) {
    struct stat info;
    if (fd < 0 || fstat(fd, &info) != 0) return -1;
    identity->dev = (uint64_t)info.st_dev;
    identity->ino = (uint64_t)info.st_ino;
    return 0;
}

int stallcap_fd_has_identity(int fd, stallcap_fd_identity identity) {
    stallcap_fd_identity now;
    return stallcap_fd_identity_of(fd, &now) == 0 && now.dev == identity.dev && now.ino == identity.ino;
}

// Written by the watchdog thread, read in a forked child (where that thread does not exist). Three separate
// words: a fork in the middle of an update leaves a mismatch, and a mismatch closes nothing.
static _Atomic int tracked_fd = -1;
static _Atomic uint64_t tracked_dev, tracked_ino;

void stallcap_track_capture(int fd, uint64_t dev, uint64_t ino) {
    atomic_store(&tracked_fd, -1);
    atomic_store(&tracked_dev, dev);
    atomic_store(&tracked_ino, ino);
    atomic_store(&tracked_fd, fd);
}

void stallcap_close_tracked_capture(void) {
    int fd = atomic_exchange(&tracked_fd, -1);
    stallcap_fd_identity identity = {atomic_load(&tracked_dev), atomic_load(&tracked_ino)};
    if (fd >= 0 && stallcap_fd_has_identity(fd, identity)) close(fd);
}
