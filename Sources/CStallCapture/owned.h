// owned.h: internal to CStallCapture. Descriptor identities (owned.c): how the watchdog's C code knows a
// descriptor number is still its own before it writes, waits on or closes it (an app may close numbers it does
// not own, and reuse them for files of its own).
#ifndef STALLCAPTURE_OWNED_H
#define STALLCAPTURE_OWNED_H

#include <stdint.h>

/// Which file a descriptor refers to, as it was opened: device and inode (`fstat`). A pipe's inode is unique;
/// every eventfd and epoll set shares one anonymous inode, so those need more (wddeep.c).
typedef struct {
    uint64_t dev;
    uint64_t ino;
} stallcap_fd_identity;

/// Fills `identity` for open descriptor `fd`. Returns 0, or -1 when it is not open.
__attribute__((visibility("hidden"))) int stallcap_fd_identity_of(int fd, stallcap_fd_identity *identity);

/// 1 when `fd` is open and refers to the file `identity`, else 0. One `fstat`; async-signal-safe.
__attribute__((visibility("hidden"))) int stallcap_fd_has_identity(int fd, stallcap_fd_identity identity);

#endif
