// Source lines and inlined frames through libdw, loaded with dlopen (stalldwarf.h). Compile units are indexed by
// address here: Swift and clang emit no .debug_aranges, and libdw 0.188's dwarf_addrdie needs them.
#include "stalldwarf.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

// The libdw functions used, found by name in libdw.so.1 (whose interface has kept that name since 2009).
static struct {
    Dwarf *(*begin)(int, Dwarf_Cmd);
    int (*end)(Dwarf *);
    int (*get_units)(Dwarf *, Dwarf_CU *, Dwarf_CU **, Dwarf_Half *, uint8_t *, Dwarf_Die *, Dwarf_Die *);
    ptrdiff_t (*ranges)(Dwarf_Die *, ptrdiff_t, Dwarf_Addr *, Dwarf_Addr *, Dwarf_Addr *);
    Dwarf_Line *(*getsrc_die)(Dwarf_Die *, Dwarf_Addr);
    int (*lineno)(Dwarf_Line *, int *);
    int (*linecol)(Dwarf_Line *, int *);
    const char *(*linesrc)(Dwarf_Line *, Dwarf_Word *, Dwarf_Word *);
    int (*child)(Dwarf_Die *, Dwarf_Die *);
    int (*siblingof)(Dwarf_Die *, Dwarf_Die *);
    int (*haspc)(Dwarf_Die *, Dwarf_Addr);
    Dwarf_Die *(*addrdie)(Dwarf *, Dwarf_Addr, Dwarf_Die *);
    int (*tag)(Dwarf_Die *);
    Dwarf_Attribute *(*attr)(Dwarf_Die *, unsigned int, Dwarf_Attribute *);
    Dwarf_Attribute *(*attr_integrate)(Dwarf_Die *, unsigned int, Dwarf_Attribute *);
    const char *(*formstring)(Dwarf_Attribute *);
    int (*formudata)(Dwarf_Attribute *, Dwarf_Word *);
    int (*getsrcfiles)(Dwarf_Die *, Dwarf_Files **, size_t *);
    const char *(*filesrc)(Dwarf_Files *, size_t, Dwarf_Word *, Dwarf_Word *);
} dw;

static pthread_once_t g_load_once = PTHREAD_ONCE_INIT;
static int g_loaded;

#define FIND(field, symbol) ok = ok && (*(void **)&dw.field = dlsym(handle, symbol)) != NULL

static void load(void) {
    void *handle = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) return;
    int ok = 1;
    FIND(begin, "dwarf_begin");
    FIND(end, "dwarf_end");
    FIND(get_units, "dwarf_get_units");
    FIND(ranges, "dwarf_ranges");
    FIND(getsrc_die, "dwarf_getsrc_die");
    FIND(lineno, "dwarf_lineno");
    FIND(linecol, "dwarf_linecol");
    FIND(linesrc, "dwarf_linesrc");
    FIND(child, "dwarf_child");
    FIND(siblingof, "dwarf_siblingof");
    FIND(haspc, "dwarf_haspc");
    FIND(addrdie, "dwarf_addrdie");
    FIND(tag, "dwarf_tag");
    FIND(attr, "dwarf_attr");
    FIND(attr_integrate, "dwarf_attr_integrate");
    FIND(formstring, "dwarf_formstring");
    FIND(formudata, "dwarf_formudata");
    FIND(getsrcfiles, "dwarf_getsrcfiles");
    FIND(filesrc, "dwarf_filesrc");
    g_loaded = ok;
}

int stalldw_available(void) {
    pthread_once(&g_load_once, load);
    return g_loaded;
}

typedef struct {
    uint64_t start, end;  // [start, end)
    uint32_t unit;        // index into units
} unit_range;

struct stalldw_file {
    int fd;
    Dwarf *dwarf;
    int indexed;  // units and ranges built (only when .debug_aranges cannot tell)
    Dwarf_Die *units;
    uint32_t unit_count;
    unit_range *ranges;
    uint32_t range_count;
    Dwarf_Die found;  // the unit dwarf_addrdie found last
};

static int by_start(const void *a, const void *b) {
    const unit_range *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

// Appends to a malloc'd array, doubling it; 0 when memory ran out.
static int grow(void **array, uint32_t count, uint32_t *capacity, size_t size) {
    if (count < *capacity) return 1;
    uint32_t more = *capacity ? *capacity * 2 : 64;
    void *bigger = realloc(*array, (size_t)more * size);
    if (bigger == NULL) return 0;
    *array = bigger;
    *capacity = more;
    return 1;
}

stalldw_file *stalldw_open(const char *path) {
    if (!stalldw_available()) return NULL;
    stalldw_file *file = calloc(1, sizeof *file);
    if (file == NULL) return NULL;
    // Paths come from capture files: a FIFO or a device there must not block the reader, and only a regular file
    // is read.
    struct stat info;
    file->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (file->fd < 0 || fstat(file->fd, &info) != 0 || !S_ISREG(info.st_mode)
        || (file->dwarf = dw.begin(file->fd, DWARF_C_READ)) == NULL) {
        stalldw_close(file);
        return NULL;
    }
    // A file with no unit at all has no DWARF to read.
    Dwarf_CU *first = NULL;
    Dwarf_Half version;
    uint8_t type;
    Dwarf_Die cudie, subdie;
    if (dw.get_units(file->dwarf, NULL, &first, &version, &type, &cudie, &subdie) != 0) {
        stalldw_close(file);
        return NULL;
    }
    return file;
}

// Indexes the file's compile units by the addresses of their code, once: for files without .debug_aranges (Swift's
// and clang's), where dwarf_addrdie finds nothing. Scanning every unit costs a read of all of .debug_info.
static void index_units(stalldw_file *file) {
    file->indexed = 1;
    uint32_t unit_capacity = 0, range_capacity = 0;
    Dwarf_CU *cu = NULL, *next = NULL;
    Dwarf_Half version;
    uint8_t type;
    Dwarf_Die cudie, subdie;
    while (dw.get_units(file->dwarf, cu, &next, &version, &type, &cudie, &subdie) == 0) {
        cu = next;
        if (!grow((void **)&file->units, file->unit_count, &unit_capacity, sizeof cudie)) break;
        uint32_t unit = file->unit_count++;
        file->units[unit] = cudie;
        Dwarf_Addr base, start, end;
        ptrdiff_t offset = 0;
        while ((offset = dw.ranges(&file->units[unit], offset, &base, &start, &end)) > 0) {
            if (end <= start) continue;
            if (!grow((void **)&file->ranges, file->range_count, &range_capacity, sizeof(unit_range))) break;
            file->ranges[file->range_count++] = (unit_range){start, end, unit};
        }
    }
    if (file->range_count > 0) qsort(file->ranges, file->range_count, sizeof(unit_range), by_start);
}

void stalldw_close(stalldw_file *file) {
    if (file == NULL) return;
    if (file->dwarf != NULL) dw.end(file->dwarf);
    if (file->fd >= 0) close(file->fd);
    free(file->units);
    free(file->ranges);
    free(file);
}

// The compile unit whose code holds `address`; NULL when none does. .debug_aranges first (gcc writes it: glibc's
// debug file), else the file's own index.
static Dwarf_Die *unit_of(stalldw_file *file, uint64_t address) {
    if (!file->indexed && dw.addrdie(file->dwarf, address, &file->found) != NULL) return &file->found;
    if (!file->indexed) index_units(file);
    uint32_t low = 0, high = file->range_count;
    while (low < high) {
        uint32_t mid = low + (high - low) / 2;
        if (file->ranges[mid].start <= address) low = mid + 1; else high = mid;
    }
    // Ranges rarely overlap; look at a few before the nearest start for one that still holds the address.
    for (uint32_t i = low, looked = 0; i > 0 && looked < 8; i--, looked++) {
        if (address < file->ranges[i - 1].end) return &file->units[file->ranges[i - 1].unit];
    }
    return NULL;
}

// A function's name: its linkage (mangled) name, else its plain name, through DW_AT_abstract_origin and
// DW_AT_specification (an inlined instance names nothing itself).
static const char *name_of(Dwarf_Die *die) {
    Dwarf_Attribute attribute;
    const unsigned int names[] = {DW_AT_linkage_name, DW_AT_MIPS_linkage_name, DW_AT_name};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (dw.attr_integrate(die, names[i], &attribute) == NULL) continue;
        const char *name = dw.formstring(&attribute);
        if (name != NULL) return name;
    }
    return NULL;
}

// The unsigned value of `die`'s attribute `name` (not through its origin: a call site is the instance's own).
static int unsigned_of(Dwarf_Die *die, unsigned int name, Dwarf_Word *value) {
    Dwarf_Attribute attribute;
    return dw.attr(die, name, &attribute) != NULL && dw.formudata(&attribute, value) == 0;
}

// The scopes with code that hold `address` below `parent`, outermost first, appended to `chain` from `depth`;
// returns the depth reached. Not dwarf_getscopes: it never looks inside a DIE without addresses, and Swift puts
// every function inside its module's DW_TAG_module (and methods' declarations inside their types). So DIEs that
// only hold declarations (a module, a namespace, a type) are searched through; a DIE with addresses only when it
// holds `address`.
#define MAX_SCOPES 64
// How deep declarations may nest (modules in namespaces in types...): a crafted file nesting more would otherwise
// exhaust the stack; compilers nest a few levels.
#define MAX_NESTING 256
static int scopes_at(Dwarf_Die *parent, uint64_t address, Dwarf_Die *chain, int depth, int nesting) {
    Dwarf_Die child;
    if (depth >= MAX_SCOPES || nesting >= MAX_NESTING || dw.child(parent, &child) != 0) return depth;
    do {
        switch (dw.tag(&child)) {
        case DW_TAG_subprogram:
        case DW_TAG_inlined_subroutine:
        case DW_TAG_lexical_block:
        case DW_TAG_entry_point:
        case DW_TAG_try_block:
        case DW_TAG_catch_block:
            if (dw.haspc(&child, address) == 1) {
                chain[depth] = child;
                return scopes_at(&chain[depth], address, chain, depth + 1, nesting + 1);
            }
            break;
        case DW_TAG_module:
        case DW_TAG_namespace:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
        case DW_TAG_enumeration_type:
        case DW_TAG_interface_type: {
            int reached = scopes_at(&child, address, chain, depth, nesting + 1);
            if (reached > depth) return reached;
            break;
        }
        default:
            break;
        }
    } while (dw.siblingof(&child, &child) == 0);
    return depth;
}

int stalldw_lookup(stalldw_file *file, uint64_t address, stalldw_frame *frames, int max) {
    if (file == NULL || max <= 0) return 0;
    Dwarf_Die *cudie = unit_of(file, address);
    Dwarf_Line *line = cudie != NULL ? dw.getsrc_die(cudie, address) : NULL;
    if (line == NULL) return 0;
    Dwarf_Attribute attribute;
    const char *directory = dw.attr(cudie, DW_AT_comp_dir, &attribute) != NULL ? dw.formstring(&attribute) : NULL;
    frames[0] = (stalldw_frame){NULL, dw.linesrc(line, NULL, NULL), directory, 0, 0};
    dw.lineno(line, &frames[0].line);
    dw.linecol(line, &frames[0].column);
    Dwarf_Die chain[MAX_SCOPES];
    int depth = scopes_at(cudie, address, chain, 0, 0);
    int named = 0;  // frames[named] is the next to name; its position is known
    Dwarf_Files *files = NULL;
    size_t file_count = 0;
    // Innermost first: each inlined instance, then the function it was inlined into, at the call's place.
    for (int i = depth - 1; i >= 0 && named < max; i--) {
        int tag = dw.tag(&chain[i]);
        if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram) continue;
        frames[named++].function = name_of(&chain[i]);
        if (tag == DW_TAG_subprogram || named == max) break;
        Dwarf_Word index = 0, call_line = 0, call_column = 0;
        const char *call_file = NULL;
        if (unsigned_of(&chain[i], DW_AT_call_file, &index) && (files != NULL || dw.getsrcfiles(cudie, &files, &file_count) == 0)
            && index < file_count) {
            call_file = dw.filesrc(files, index, NULL, NULL);
        }
        unsigned_of(&chain[i], DW_AT_call_line, &call_line);
        unsigned_of(&chain[i], DW_AT_call_column, &call_column);
        frames[named] = (stalldw_frame){NULL, call_file, directory, (int)call_line, (int)call_column};
    }
    return named > 0 ? named : 1;  // no function scope: the line alone
}
