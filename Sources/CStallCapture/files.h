// files.h: internal to CStallCapture (not part of the module's headers): one small-file reader for /proc.
#ifndef STALLCAPTURE_FILES_H
#define STALLCAPTURE_FILES_H

#include <stddef.h>
#include <sys/types.h>

// Reads at most `size - 1` bytes of the file at `path` into `text` and NUL-terminates it (one read, retried on
// EINTR: /proc files of this size come whole). Returns the length, or -1 when the file cannot be read or is empty.
ssize_t stallcap_read_small_file(const char *path, char *text, size_t size);

#endif
