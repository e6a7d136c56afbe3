// codemap.h: internal to CStallCapture. The executable mappings of this process and the return-address test that
// the stack-memory walks (stackscan.c, memwalk.c) share. Watchdog thread only.
#ifndef STALLCAPTURE_CODEMAP_H
#define STALLCAPTURE_CODEMAP_H

#include <stdint.h>

/// Most executable mappings kept; later ones are ignored (their return addresses are then not recognised).
#define STALLCAP_MAX_CODE_RANGES 1024

/// The readable executable mappings of this process, [start, end) each, in address order (16 KiB).
typedef struct {
    uint32_t count;
    uint64_t start[STALLCAP_MAX_CODE_RANGES];
    uint64_t end[STALLCAP_MAX_CODE_RANGES];
} stallcap_code_map;

/// Reads /proc/self/maps once. Fills `map` with the readable executable ranges (when not NULL) and returns the end
/// of the mapping containing `address` (0 when none, or when `address` is 0).
__attribute__((visibility("hidden"))) uint64_t stallcap_read_maps(stallcap_code_map *map, uint64_t address);

/// True (1) when `address` lies in one of `map`'s ranges and the instruction before it is a call: it can be a
/// return address.
__attribute__((visibility("hidden"))) int stallcap_plausible_return(const stallcap_code_map *map, uint64_t address);

#endif
