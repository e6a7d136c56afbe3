// stallcapture_marker.h: what StallMarker needs from C on the app's threads. Not for signal context.
#ifndef STALLCAPTURE_MARKER_H
#define STALLCAPTURE_MARKER_H

#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The kernel thread id of the calling thread, cached in a thread-local variable: one gettid system call per
/// thread (the first call), none after. The cache is reset in the child of a fork (the forking thread's id
/// changes there; no other thread survives a fork).
pid_t stallcap_cached_tid(void);

/// The calling thread's marker-ring word, a thread-local variable StallMarker's per-thread rings interpret (0
/// until set: the thread has not asked for a ring). Reset to 0 in the child of a fork. No system call.
int32_t stallcap_marker_ring_slot(void);
/// Sets the calling thread's marker-ring word.
void stallcap_set_marker_ring_slot(int32_t slot);

#ifdef __cplusplus
}
#endif

#endif
