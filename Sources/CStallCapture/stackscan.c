// A sleeping thread's stack, built from its stack memory without signalling it: the leaf is the PC /proc
// reports; return addresses are found by scanning words above the stack pointer (each must point into an
// executable mapping just after a call instruction) up to the first frame record (saved frame pointer, return
// address), whose chain is then followed strictly upward. Memory is only ever read with process_vm_readv, so a
// stale or unmapped address costs a failed read, never a fault. Watchdog thread only; never signal context.
#define _GNU_SOURCE
#include "stallcapture_blocked.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_CODE_RANGES 1024

typedef struct {
    uint32_t count;
    uint64_t start[MAX_CODE_RANGES];
    uint64_t end[MAX_CODE_RANGES];
} code_map;

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

// Parses "start-end perms ..." of one maps line. Returns 0, or -1.
static int parse_maps_line(const char *line, uint64_t *start, uint64_t *end, int *executable) {
    uint64_t v[2] = {0, 0};
    const char *p = line;
    for (int i = 0; i < 2; i++) {
        int digits = 0;
        for (int d; (d = hex_value(*p)) >= 0 && digits < 17; p++, digits++) v[i] = v[i] * 16 + (uint64_t)d;
        if (digits == 0 || *p != (i == 0 ? '-' : ' ')) return -1;
        p++;
    }
    if (strlen(p) < 4) return -1;
    *start = v[0];
    *end = v[1];
    *executable = p[0] == 'r' && p[2] == 'x';
    return 0;
}

// Reads /proc/self/maps once. Fills `map` with readable executable ranges (when not NULL) and returns the end of
// the mapping containing `address` (0 when none, or when `address` is 0).
static uint64_t read_maps(code_map *map, uint64_t address) {
    if (map) map->count = 0;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char buffer[4096];
    size_t used = 0;
    uint64_t found = 0;
    for (;;) {
        ssize_t n = read(fd, buffer + used, sizeof buffer - 1 - used);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        used += (size_t)n;
        buffer[used] = '\0';
        char *line = buffer;
        char *newline;
        while ((newline = strchr(line, '\n')) != NULL) {
            *newline = '\0';
            uint64_t start, end;
            int executable;
            if (parse_maps_line(line, &start, &end, &executable) == 0) {
                if (address != 0 && address >= start && address < end) found = end;
                if (map && executable && map->count < MAX_CODE_RANGES) {
                    map->start[map->count] = start;
                    map->end[map->count] = end;
                    map->count++;
                }
            }
            line = newline + 1;
        }
        used = (size_t)(buffer + used - line);
        memmove(buffer, line, used);
        if (used == sizeof buffer - 1) used = 0;  // a line longer than the buffer: drop it
    }
    close(fd);
    return found;
}

uint64_t stallcap_mapping_end(uint64_t address) { return read_maps(NULL, address); }

// Index of the range holding `address` (the kernel lists mappings in address order), or -1.
static int code_range(const code_map *map, uint64_t address) {
    int lo = 0, hi = (int)map->count - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (address < map->start[mid]) hi = mid - 1;
        else if (address >= map->end[mid]) lo = mid + 1;
        else return mid;
    }
    return -1;
}

#if defined(__x86_64__)
// Bytes taken by a ModR/M byte and what follows it (SIB, displacement), or -1 when `available` is too short.
static int modrm_length(const uint8_t *p, int available) {
    int mod = p[0] >> 6, rm = p[0] & 7, length = 1;
    if (mod == 3) return 1;
    if (rm == 4) {
        if (available < 2) return -1;
        length = 2;
        if (mod == 0 && (p[1] & 7) == 5) length += 4;
    } else if (mod == 0 && rm == 5) {
        length += 4;  // RIP-relative
    }
    if (mod == 1) length += 1;
    if (mod == 2) length += 4;
    return length;
}

// True when the 8 bytes before a return address end with a call: E8 rel32, or FF /2 (with REX or notrack).
static int ends_with_call(const uint8_t code[8], int available) {
    if (available >= 5 && code[3] == 0xE8) return 1;
    for (int start = 8 - available; start <= 6; start++) {
        int j = start;
        while (j < start + 2 && j < 7 && ((code[j] >= 0x40 && code[j] <= 0x4F) || code[j] == 0x3E)) j++;
        if (j > 6 || code[j] != 0xFF || ((code[j + 1] >> 3) & 7) != 2) continue;
        int length = modrm_length(&code[j + 1], 8 - (j + 1));
        if (length > 0 && j + 1 + length == 8) return 1;
    }
    return 0;
}
#elif defined(__aarch64__)
// True when the instruction before a return address is BL, BLR or one of the pointer-authenticating BLRA*.
static int ends_with_call(const uint8_t code[8], int available) {
    if (available < 4) return 0;
    uint32_t insn;
    memcpy(&insn, code + 4, 4);
    return (insn & 0xFC000000u) == 0x94000000u || (insn & 0xFFFFFC1Fu) == 0xD63F0000u ||
           (insn & 0xFEFFF800u) == 0xD63F0800u;
}
#else
#error "stallprof's capture supports x86_64 and aarch64 Linux"
#endif

static int plausible_return(const code_map *map, uint64_t address) {
    int index = code_range(map, address);
    if (index < 0) return 0;
    uint64_t from = address - 8 >= map->start[index] && address >= 8 ? address - 8 : map->start[index];
    int available = (int)(address - from);
    if (available < 2) return 0;
    uint8_t code[8] = {0};
    if (stallcap_read_memory(from, code + (8 - available), (size_t)available) != 0) return 0;
    return ends_with_call(code, available);
}

int stallcap_is_return_address(uint64_t address) {
    code_map map;
    read_maps(&map, 0);
    return plausible_return(&map, address);
}

typedef struct {
    const code_map *map;
    uint64_t stack_end;
    uintptr_t *frames;
    uint32_t max_frames;
    uint32_t count;
    uint32_t flags;
} walk;

static int add_frame(walk *w, uint64_t address, uint32_t flag) {
    if (w->count == w->max_frames) {
        w->flags |= STALLCAP_MEMSTACK_TRUNCATED;
        return 0;
    }
    w->frames[w->count++] = (uintptr_t)address;
    w->flags |= flag;
    return 1;
}

// True when `record` holds (saved fp, return address), the saved fp points higher up the stack, and the chain
// goes on one more step or ends there with 0.
static int confirmed_record(const walk *w, uint64_t record) {
    uint64_t pair[2], next[2];
    if (record % 16 != 0 || record + 16 > w->stack_end) return 0;
    if (stallcap_read_memory(record, pair, sizeof pair) != 0) return 0;
    if (!plausible_return(w->map, pair[1])) return 0;
    if (pair[0] <= record || pair[0] % 8 != 0 || pair[0] + 16 > w->stack_end) return 0;
    if (stallcap_read_memory(pair[0], next, sizeof next) != 0) return 0;
    return next[0] == 0 || (next[0] > pair[0] && plausible_return(w->map, next[1]));
}

// True when the call before `return_address` has a known target that contains `inner`.
static int known_call_reaches(uint64_t return_address, uint64_t inner) {
    uint64_t target = 0;
    return stallcap_call_target(return_address, &target) == 1 && inner >= target &&
           inner - target < STALLCAP_MAX_FUNCTION_BYTES;
}

// A scanned word is taken as a return address when it points after a call in executable code and that call
// can have led to the frame below (the last one added): stale words in a frame's locals mostly fail this.
// `strict` also refuses calls whose target is not known (indirect calls).
static int scanned_return(const walk *w, uint64_t word, int strict) {
    if (!plausible_return(w->map, word)) return 0;
    uint64_t inner = w->frames[w->count - 1];
    return strict ? known_call_reaches(word, inner) : stallcap_call_reaches(word, inner);
}

// Adds the return addresses among the words in [from, to), strictly checked.
static int scan_words(walk *w, uint64_t from, uint64_t to) {
    uint64_t chunk[512];
    for (uint64_t at = from; at < to;) {
        size_t bytes = (size_t)(to - at) < sizeof chunk ? (size_t)(to - at) : sizeof chunk;
        if (stallcap_read_memory(at, chunk, bytes) != 0) return 0;
        for (size_t i = 0; i < bytes / 8; i++) {
            if (scanned_return(w, chunk[i], 1) && !add_frame(w, chunk[i], STALLCAP_MEMSTACK_SCANNED)) return 0;
        }
        at += bytes;
    }
    return 1;
}

// The first frame record's return address `caller` calls a known function: when one of the scanned frames lies
// in it, that frame is the callee's and the scanned words found after it were stale words in its frame: drop them.
static void prune_to_caller(walk *w, uint64_t caller) {
    uint64_t target = 0;
    if (stallcap_call_target(caller, &target) != 1) return;
    for (uint32_t k = w->count; k-- > 1;) {
        if (w->frames[k] >= target && w->frames[k] - target < STALLCAP_MAX_FUNCTION_BYTES) {
            w->count = k + 1;
            return;
        }
    }
}

// Most bytes scanned above the last frame record of the chain for the outermost frames, which have no frame
// pointer (`__libc_start_main` and `_start` above `main`), so that a stack read from memory has the same root as
// one unwound by libunwind.
#define OUTERMOST_SCAN_BYTES 4096u

// Follows the frame-pointer chain from `record`, strictly upward, within the stack; where it ends, scans the
// words just above the last record (strictly checked) for the outermost frames.
static void follow_chain(walk *w, uint64_t record) {
    uint64_t last = 0;
    while (record != 0 && record % 8 == 0 && record + 16 <= w->stack_end) {
        uint64_t pair[2];
        if (stallcap_read_memory(record, pair, sizeof pair) != 0) break;
        if (!plausible_return(w->map, pair[1])) break;
        if (!add_frame(w, pair[1], STALLCAP_MEMSTACK_CHAIN)) return;
        last = record;
        if (pair[0] <= record) break;
        record = pair[0];
    }
    if (last == 0) return;
    uint64_t from = last + 16;
    uint64_t to = w->stack_end - from < OUTERMOST_SCAN_BYTES ? w->stack_end : from + OUTERMOST_SCAN_BYTES;
    if (from < to) scan_words(w, from, to);
}

uint32_t stallcap_stack_from_memory(uint64_t pc, uint64_t sp, uint64_t stack_end, uint32_t max_scan_bytes,
                                    uintptr_t *frames, uint32_t max_frames, uint32_t *flags) {
    code_map map;
    *flags = 0;
    if (max_frames == 0) return 0;
    uint64_t mapping_end = read_maps(&map, sp);
    if (stack_end == 0) stack_end = mapping_end;
    walk w = {.map = &map, .stack_end = stack_end, .frames = frames, .max_frames = max_frames};
    add_frame(&w, pc, 0);
    sp = (sp + 7) & ~(uint64_t)7;
    if (sp == 0 || stack_end <= sp) {
        *flags = w.flags;
        return w.count;
    }
    if (max_scan_bytes > STALLCAP_MAX_SCAN_BYTES) max_scan_bytes = STALLCAP_MAX_SCAN_BYTES;
    uint64_t scan_end = stack_end - sp < max_scan_bytes ? stack_end : sp + max_scan_bytes;
    uint64_t chunk[512];
    uint64_t previous = 0;  // the word before the current one: a frame record is (previous, current)
    for (uint64_t at = sp; at < scan_end;) {
        size_t bytes = (size_t)(scan_end - at) < sizeof chunk ? (size_t)(scan_end - at) : sizeof chunk;
        if (stallcap_read_memory(at, chunk, bytes) != 0) break;
        for (size_t i = 0; i < bytes / 8; i++) {
            uint64_t address = at + i * 8;
            if (plausible_return(&map, chunk[i])) {
                uint64_t record = address - 8;
                if (address > sp && confirmed_record(&w, record)) {
                    prune_to_caller(&w, chunk[i]);
                    // The first frame record. When the function it returns into keeps a frame pointer, the record
                    // it points to is that function's own (its return address's call leads into it) and the
                    // words between are its locals. Otherwise frames without frame pointers may lie between:
                    // that gap is scanned (strictly), then the chain is followed.
                    if (add_frame(&w, chunk[i], STALLCAP_MEMSTACK_CHAIN)) {
                        uint64_t next[2] = {0, 0};
                        int direct = stallcap_read_memory(previous, next, sizeof next) == 0 &&
                                     known_call_reaches(next[1], chunk[i]);
                        uint64_t gap_end = previous < scan_end ? previous : scan_end;
                        if (direct || scan_words(&w, address + 8, gap_end)) follow_chain(&w, previous);
                    }
                    *flags = w.flags;
                    return w.count;
                }
                if (scanned_return(&w, chunk[i], 0) && !add_frame(&w, chunk[i], STALLCAP_MEMSTACK_SCANNED)) break;
            }
            previous = chunk[i];
        }
        if (w.flags & STALLCAP_MEMSTACK_TRUNCATED) break;
        at += bytes;
    }
    *flags = w.flags;
    return w.count;
}
