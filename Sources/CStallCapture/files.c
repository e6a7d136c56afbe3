// The reader of small /proc files (a thread's stat, status, syscall; a descriptor's fdinfo). Watchdog thread.
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

ssize_t stallcap_read_small_file(const char *path, char *text, size_t size) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n;
    do {
        n = read(fd, text, size - 1);
    } while (n < 0 && errno == EINTR);
    close(fd);
    if (n <= 0) return -1;
    text[n] = '\0';
    return n;
}

ssize_t stallcap_read_task_file(pid_t tid, const char *name, char *text, size_t size) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/%s", (int)tid, name);
    return stallcap_read_small_file(path, text, size);
}
