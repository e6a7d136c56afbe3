// unwind.h: internal to CStallCapture. The signal handler's stack walk (unwind.c) and its cache of unwind rules
// (unwcache.c). See ehframe.h for the rules themselves.
#ifndef STALLCAPTURE_UNWIND_H
#define STALLCAPTURE_UNWIND_H

#include "ehframe.h"
#include "stallcapture.h"

#include <stdint.h>

/// Cached rules of one lookup address (32 bytes). Only the plainest steps are kept: the CFA at the stack or frame
/// pointer plus an offset, the return address and the frame pointer at offsets from it (or unchanged, or
/// undefined), the stack pointer the CFA; others are found again each time.
typedef struct {
    uintptr_t key;    // the lookup address; 0: empty
    uintptr_t image;  // the tag of key's object (eh_image) when the rules were found: used only while it is the same
    int32_t cfa_offset, ra_offset, fp_offset;
    uint8_t cfa_on_fp;  // the CFA is the frame pointer plus cfa_offset, else the stack pointer plus it
    uint8_t ra_kind;    // EH_RULE_* of the return address, or STALLCAP_UNWIND_NO_INFO
    uint8_t fp_kind;    // EH_RULE_* of the frame pointer
    uint8_t ra_signed;
} stallcap_unwind_entry;

/// `ra_kind` of an address no loaded object has unwind information for.
#define STALLCAP_UNWIND_NO_INFO 0xff

/// Entries of the handler's cache: direct-mapped by lookup address, 128 KiB of static memory.
#define STALLCAP_UNWIND_CACHE_SIZE 4096

/// A cache of steps by lookup address. Written by one walk at a time (the handler's is used only by the handler that
/// holds the claimed request). An entry is used only while its address lies in the same loaded object
/// (eh_image); the whole cache is emptied when the watchdog sees the loaded images changed
/// (stallcap_unwind_forget_images).
typedef struct stallcap_unwind_cache {
    uint64_t generation;
    stallcap_unwind_entry entries[STALLCAP_UNWIND_CACHE_SIZE];
} stallcap_unwind_cache;

/// Empties `cache` if libraries came or went since it was last used. Once per walk.
__attribute__((visibility("hidden"))) void stallcap_unwind_cache_begin(stallcap_unwind_cache *cache);

/// The entry `lookup` is kept in, or would be.
static inline stallcap_unwind_entry *stallcap_unwind_cache_slot(stallcap_unwind_cache *cache, uintptr_t lookup) {
    return &cache->entries[(size_t)(((uint64_t)lookup * 0x9e3779b97f4a7c15ull) >> 52) &
                           (STALLCAP_UNWIND_CACHE_SIZE - 1)];
}

/// Keeps in `entry` what eh_find_row found for `lookup` (EH_FOUND with `row`, or EH_NO_INFO) and the tag of the
/// `image` it gave, when simple enough.
__attribute__((visibility("hidden"))) void stallcap_unwind_cache_store(stallcap_unwind_entry *entry,
                                                                       uintptr_t lookup, uintptr_t image,
                                                                       int found, const eh_row *row);

/// The step a cached entry (not STALLCAP_UNWIND_NO_INFO) describes.
__attribute__((visibility("hidden"))) void stallcap_unwind_cache_step(const stallcap_unwind_entry *entry,
                                                                      eh_step *step);

/// Walks the stack of the interrupted `context` (a ucontext_t) into `frames`, leaf first: the interrupted
/// instruction, then return addresses. Sets STALLCAP_FLAG_TRUNCATED and STALLCAP_FLAG_FRAME_POINTERS in `flags`.
/// `cache` may be NULL. Async-signal-safe; on the thread the context belongs to (its stack bounds are
/// thread-local).
__attribute__((visibility("hidden"))) uint32_t stallcap_unwind(const void *context, uintptr_t *frames,
                                                               uint32_t max_frames, uint32_t *flags,
                                                               stallcap_unwind_cache *cache);

/// Records the calling thread's stack and alternate signal stack bounds for later walks on it (not in a handler).
__attribute__((visibility("hidden"))) void stallcap_unwind_prepare_thread(void);

#endif
