// calltarget.h: internal to CStallCapture. Where the call before a return address went (calltarget.c), for the
// stack-memory walks (memwalk.c, stackscan.c) that check a frame they infer against the frame below it.
#ifndef STALLCAPTURE_CALLTARGET_H
#define STALLCAPTURE_CALLTARGET_H

#include <stdint.h>

/// Largest function size assumed when checking that a callee contains an address.
#define STALLCAP_MAX_FUNCTION_BYTES (1u << 20)

/// Where the call instruction just before `return_address` went: x86_64 `call rel32` (a PLT stub is followed
/// to the function its GOT slot holds) or `call *disp32(%rip)`; aarch64 `BL` (not through PLT stubs). Returns 1
/// and sets `target`, 0 when the call is indirect or otherwise not known, -1 when the code cannot be read.
__attribute__((visibility("hidden"))) int stallcap_call_target(uint64_t return_address, uint64_t *target);

/// True (1) when `inner` lies within STALLCAP_MAX_FUNCTION_BYTES after `target`, or after where the unconditional
/// jumps starting at `target` lead (up to four).
__attribute__((visibility("hidden"))) int stallcap_target_reaches(uint64_t target, uint64_t inner);

#endif
