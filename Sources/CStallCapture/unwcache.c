// The handler's cache of unwind steps: a direct-mapped table by lookup address, so that a stack seen before is
// walked without parsing .eh_frame again (a busy stall revisits the same return addresses sample after sample).
#include "unwind.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

static _Atomic uint64_t g_images_generation = 0;  // a static cache starts at 0 too: nothing to empty

void stallcap_unwind_forget_images(void) { atomic_fetch_add_explicit(&g_images_generation, 1, memory_order_release); }

void stallcap_unwind_cache_begin(stallcap_unwind_cache *cache) {
    uint64_t generation = atomic_load_explicit(&g_images_generation, memory_order_acquire);
    if (cache->generation == generation) return;
    memset(cache->entries, 0, sizeof cache->entries);  // an address may now hold other code
    cache->generation = generation;
}

static int fits(int64_t value) { return value >= INT32_MIN && value <= INT32_MAX; }

static int cacheable(const eh_rule *rule) {
    return (rule->kind == EH_RULE_OFFSET && fits(rule->offset)) || rule->kind == EH_RULE_SAME ||
           rule->kind == EH_RULE_UNDEF;
}

void stallcap_unwind_cache_store(stallcap_unwind_entry *entry, uintptr_t lookup, uintptr_t image, int found,
                                 const eh_row *row) {
    entry->key = 0;
    entry->image = image;
    if (found == EH_NO_INFO) {
        entry->ra_kind = STALLCAP_UNWIND_NO_INFO;
    } else {
        if (found != EH_FOUND || row->cfa_is_expr || row->signal_frame || !fits(row->cfa_offset)) return;
        if (row->cfa_reg != EH_SP && row->cfa_reg != EH_FP) return;
        const eh_rule *ra = &row->rules[EH_RA], *fp = &row->rules[EH_FP];
        if (!cacheable(ra) || !cacheable(fp) || row->rules[EH_SP].kind != EH_RULE_SAME) return;
        for (int k = 0; k < EH_NSAVED; k++) {
            entry->saved[k] = stallcap_saved_slot(&row->rules[eh_saved_regs[k]]);
            if (entry->saved[k] == INT8_MIN) return;
        }
        entry->cfa_on_fp = row->cfa_reg == EH_FP;
        entry->cfa_offset = (int32_t)row->cfa_offset;
        entry->ra_kind = ra->kind;
        entry->ra_offset = (int32_t)ra->offset;
        entry->fp_kind = fp->kind;
        entry->fp_offset = (int32_t)fp->offset;
        entry->ra_signed = row->ra_signed;
    }
    entry->key = lookup;
}

void stallcap_unwind_cache_step(const stallcap_unwind_entry *entry, eh_step *step) {
    step->cfa_is_expr = 0;
    step->signal_frame = 0;
    step->ra_signed = entry->ra_signed;
    step->cfa_reg = entry->cfa_on_fp ? EH_FP : EH_SP;
    step->cfa_offset = entry->cfa_offset;
    step->ra.kind = entry->ra_kind;
    step->ra.offset = entry->ra_offset;
    step->fp.kind = entry->fp_kind;
    step->fp.offset = entry->fp_offset;
    step->sp.kind = EH_RULE_SAME;
    for (int k = 0; k < EH_NSAVED; k++) {
        step->saved[k].kind = entry->saved[k] == 0 ? EH_RULE_SAME : EH_RULE_OFFSET;
        step->saved[k].offset = (int64_t)entry->saved[k] * (int64_t)sizeof(uintptr_t);
    }
}
