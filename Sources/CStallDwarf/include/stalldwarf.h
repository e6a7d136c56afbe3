// CStallDwarf: source lines and inlined frames from DWARF, for the offline symbolizer (StallAnalysis). It reads
// DWARF through elfutils' libdw (the library perf uses), loaded with dlopen when first needed: without libdw.so.1
// on the machine, lookups find nothing and the analyzer names functions only, as before. Not capture code: it
// allocates, and is never called from a signal handler.
#ifndef STALLDWARF_H
#define STALLDWARF_H

#include <stdint.h>

/// One ELF file's DWARF, opened by stalldw_open.
typedef struct stalldw_file stalldw_file;

/// One frame at an address: the innermost (the code at the address) first, then each function it was inlined
/// into, out to the function that has the machine code. Strings point into the file's DWARF, valid until
/// stalldw_close; any may be NULL (not recorded).
typedef struct {
    const char *function;  // the linkage (mangled) name, else the plain name
    const char *file;      // the source file, as recorded (often absolute)
    const char *directory; // the compile unit's directory, which a relative `file` is relative to
    int line;              // 0: not known
    int column;            // 0: not known
} stalldw_frame;

/// 1 when libdw could be loaded (once: later calls return the first answer).
int stalldw_available(void);

/// Opens `path` and indexes its compile units by address; NULL when libdw is not available, the file cannot be
/// read, or it has no DWARF with code addresses.
stalldw_file *stalldw_open(const char *path);

/// Closes a file opened by stalldw_open (NULL: nothing).
void stalldw_close(stalldw_file *file);

/// The frames at `address` (as the file's own symbols count it: an address minus its image's load bias), innermost
/// first, at most `max`; returns how many were written, 0 when the file has no line for the address.
int stalldw_lookup(stalldw_file *file, uint64_t address, stalldw_frame *frames, int max);

#endif
