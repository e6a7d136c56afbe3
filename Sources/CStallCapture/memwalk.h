// memwalk.h: internal to CStallCapture. The two ways a sleeping thread's stack is read from its memory: the walk
// with the code's unwind information (memwalk.c, first) and the scan of stack words (stackscan.c, where that walk
// cannot go on).
#ifndef STALLCAPTURE_MEMWALK_H
#define STALLCAPTURE_MEMWALK_H

#include "codemap.h"

#include <stdint.h>

/// The scan of stackscan.c from leaf `pc` and stack pointer `sp`, within [sp, stack_end) (stack_end not 0), with
/// `map` the executable mappings: stallcap_stack_from_memory's whole walk where the unwind-information walk does
/// not run (aarch64, a misaligned stack pointer), else its walk from the frame where that one stops (then
/// `pc_returns`: pc is a return address, a frame the scan may find stale words above). Sets
/// STALLCAP_MEMSTACK_TRUNCATED, _SCANNED, _CHAIN.
__attribute__((visibility("hidden"))) uint32_t stallcap_scan_stack(const stallcap_code_map *map, uint64_t pc,
                                                                   int pc_returns, uint64_t sp, uint64_t stack_end,
                                                                   uint32_t max_scan_bytes, uintptr_t *frames,
                                                                   uint32_t max_frames, uint32_t *flags);

#endif
