// The map of loaded images (path, load bias, address range, build id) from the dynamic loader, and the vDSO's
// address. Watchdog thread; never called from signal context.
#include "stallcapture_watchdog.h"

#include <elf.h>
#include <limits.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

struct iterate_context {
    void (*callback)(const stallcap_image *, void *);
    void *context;
    uint64_t adds;
    char exe[PATH_MAX];
};

static void find_build_id(const struct dl_phdr_info *info, stallcap_image *image) {
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE) continue;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
        const uint8_t *end = p + ph->p_memsz;
        uint32_t align = ph->p_align == 8 ? 7u : 3u;  // notes in an 8-aligned segment are padded to 8
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *note = (const ElfW(Nhdr) *)p;
            const uint8_t *name = p + sizeof(ElfW(Nhdr));
            const uint8_t *desc = name + ((note->n_namesz + align) & ~align);
            const uint8_t *next = desc + ((note->n_descsz + align) & ~align);
            if (next > end) break;
            if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
                image->build_id = desc;
                image->build_id_length = note->n_descsz;
                return;
            }
            p = next;
        }
    }
}

static int visit(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    struct iterate_context *ctx = data;
    ctx->adds = info->dlpi_adds;
    if (ctx->callback == NULL) return 1;
    stallcap_image image;
    memset(&image, 0, sizeof image);
    image.path = (info->dlpi_name && info->dlpi_name[0]) ? info->dlpi_name : ctx->exe;
    image.load_bias = (uint64_t)info->dlpi_addr;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uint64_t s = (uint64_t)info->dlpi_addr + ph->p_vaddr;
        if (s < lo) lo = s;
        if (s + ph->p_memsz > hi) hi = s + ph->p_memsz;
    }
    if (hi == 0) return 0;
    image.start = lo;
    image.end = hi;
    find_build_id(info, &image);
    ctx->callback(&image, ctx->context);
    return 0;
}

uint64_t stallcap_for_each_image(void (*callback)(const stallcap_image *, void *), void *context) {
    struct iterate_context ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.callback = callback;
    ctx.context = context;
    ssize_t len = readlink("/proc/self/exe", ctx.exe, sizeof ctx.exe - 1);
    ctx.exe[len > 0 ? len : 0] = '\0';
    dl_iterate_phdr(visit, &ctx);
    return ctx.adds;
}

uint64_t stallcap_image_generation(void) {
    struct iterate_context ctx;
    memset(&ctx, 0, sizeof ctx);
    dl_iterate_phdr(visit, &ctx);
    return ctx.adds;
}

uint64_t stallcap_vdso_address(void) { return (uint64_t)getauxval(AT_SYSINFO_EHDR); }
