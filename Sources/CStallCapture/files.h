// files.h: internal to CStallCapture (not part of the module's headers): the one reader of small /proc files.
#ifndef STALLCAPTURE_FILES_H
#define STALLCAPTURE_FILES_H

#include <stddef.h>
#include <sys/types.h>

/// Reads at most `size - 1` bytes of the file at `path` into `text` and NUL-terminates it (one read, retried on
/// EINTR: /proc files of this size come whole). Returns the length, or -1 when the file cannot be read or is empty.
__attribute__((visibility("hidden"))) ssize_t stallcap_read_small_file(const char *path, char *text, size_t size);

/// Reads `/proc/self/task/<tid>/<name>` (a thread's `stat`, `status`, `syscall`...) as stallcap_read_small_file.
__attribute__((visibility("hidden"))) ssize_t stallcap_read_task_file(pid_t tid, const char *name, char *text,
                                                                      size_t size);

#endif
