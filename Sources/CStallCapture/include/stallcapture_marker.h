// stallcapture_marker.h: what StallMarker needs from C on the app's threads. Not for signal context.
#ifndef STALLCAPTURE_MARKER_H
#define STALLCAPTURE_MARKER_H

#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The kernel thread id of the calling thread, cached in a thread-local variable: one gettid system call per
/// thread (the first call), none after. The cache is reset in the child of a fork (the forking thread's id
/// changes there; no other thread survives a fork).
pid_t stallcap_cached_tid(void);

#ifdef __cplusplus
}
#endif

#endif
