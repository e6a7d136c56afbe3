// Where the call before a return address went, so that a return address found by scanning stack words can be
// checked against the frame below it (the callee must contain it). Memory is read with process_vm_readv only.
#include "stallcapture_probe.h"
#include "calltarget.h"

#include <string.h>

#if defined(__x86_64__)
// Follows a PLT stub at `stub` ([endbr64] [bnd] jmp *disp32(%rip)) to the function its GOT slot holds.
static uint64_t through_plt(uint64_t stub) {
    uint8_t code[11];
    if (stallcap_read_memory(stub, code, sizeof code) != 0) return stub;
    int at = 0;
    if (code[0] == 0xF3 && code[1] == 0x0F && code[2] == 0x1E && code[3] == 0xFA) at = 4;  // endbr64
    if (code[at] == 0xF2) at++;                                                            // bnd
    if (code[at] != 0xFF || code[at + 1] != 0x25) return stub;
    int32_t displacement;
    memcpy(&displacement, code + at + 2, 4);
    uint64_t slot = stub + (uint64_t)(at + 6) + (uint64_t)(int64_t)displacement, target = 0;
    if (stallcap_read_memory(slot, &target, sizeof target) != 0 || target == 0) return stub;
    return target;
}

int stallcap_call_target(uint64_t return_address, uint64_t *target) {
    uint8_t code[6];
    if (return_address < 6 || stallcap_read_memory(return_address - 6, code, sizeof code) != 0) return -1;
    if (code[1] == 0xE8) {  // call rel32
        int32_t displacement;
        memcpy(&displacement, code + 2, 4);
        *target = through_plt(return_address + (uint64_t)(int64_t)displacement);
        return 1;
    }
    if (code[0] == 0xFF && code[1] == 0x15) {  // call *disp32(%rip): a GOT slot (-fno-plt)
        int32_t displacement;
        memcpy(&displacement, code + 2, 4);
        uint64_t slot = return_address + (uint64_t)(int64_t)displacement;
        if (stallcap_read_memory(slot, target, sizeof *target) != 0 || *target == 0) return 0;
        return 1;
    }
    return 0;  // through a register or memory operand: not known
}
#elif defined(__aarch64__)
int stallcap_call_target(uint64_t return_address, uint64_t *target) {
    uint32_t insn, first;
    if (return_address < 4 || stallcap_read_memory(return_address - 4, &insn, sizeof insn) != 0) return -1;
    if ((insn & 0xFC000000u) != 0x94000000u) return 0;  // not BL imm26
    int64_t offset = (int64_t)((int32_t)(insn << 6) >> 6) * 4;
    uint64_t callee = return_address - 4 + (uint64_t)offset;
    if (stallcap_read_memory(callee, &first, sizeof first) != 0) return -1;
    if ((first & 0x9F00001Fu) == 0x90000010u) return 0;  // adrp x16: a PLT stub, not followed
    *target = callee;
    return 1;
}
#else
#error "stallprof's capture supports x86_64 and aarch64 Linux"
#endif

/// Most `jmp` hops followed from a call's target: a thunk that tail-jumps into the function doing the work
/// (Swift's `wait(timeout:)` jumps into `wait(wallTimeout:)`), or a chain of them.
#define MAX_JUMP_HOPS 4

#if defined(__x86_64__)
// Where the unconditional direct jump at `at` ([endbr64] jmp rel32 / jmp rel8) goes; 0 when it is none.
static uint64_t jump_target(uint64_t at) {
    uint8_t code[9];
    if (stallcap_read_memory(at, code, sizeof code) != 0) return 0;
    int i = code[0] == 0xF3 && code[1] == 0x0F && code[2] == 0x1E && code[3] == 0xFA ? 4 : 0;  // endbr64
    if (code[i] == 0xEB) return at + (uint64_t)(i + 2) + (uint64_t)(int64_t)(int8_t)code[i + 1];
    if (code[i] != 0xE9) return 0;
    int32_t displacement;
    memcpy(&displacement, code + i + 1, 4);
    return at + (uint64_t)(i + 5) + (uint64_t)(int64_t)displacement;
}
#else
// Where the unconditional branch `B imm26` at `at` goes; 0 when it is none.
static uint64_t jump_target(uint64_t at) {
    uint32_t insn;
    if (stallcap_read_memory(at, &insn, sizeof insn) != 0 || (insn & 0xFC000000u) != 0x14000000u) return 0;
    return at + (uint64_t)((int64_t)((int32_t)(insn << 6) >> 6) * 4);
}
#endif

int stallcap_target_reaches(uint64_t target, uint64_t inner) {
    for (int hop = 0; target != 0 && hop <= MAX_JUMP_HOPS; hop++) {
        if (inner >= target && inner - target < STALLCAP_MAX_FUNCTION_BYTES) return 1;
        if (hop < MAX_JUMP_HOPS) target = jump_target(target);
    }
    return 0;
}

int stallcap_call_reaches(uint64_t return_address, uint64_t inner) {
    uint64_t target = 0;
    int known = stallcap_call_target(return_address, &target);
    if (known <= 0) return known == 0;
    return stallcap_target_reaches(target, inner);
}
