// Where the call before a return address went, so that a return address found by scanning stack words can be
// checked against the frame below it (the callee must contain it). Memory is read with process_vm_readv only.
#define _GNU_SOURCE
#include "stallcapture_blocked.h"

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

int stallcap_call_reaches(uint64_t return_address, uint64_t inner) {
    uint64_t target = 0;
    int known = stallcap_call_target(return_address, &target);
    if (known <= 0) return known == 0;
    return inner >= target && inner - target < STALLCAP_MAX_FUNCTION_BYTES;
}
