#include "stallproc.h"

#include <errno.h>
#include <sys/prctl.h>

int stallproc_become_subreaper(void) {
    return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0 ? 0 : errno;
}

int stallproc_is_subreaper(void) {
    int value = 0;
    if (prctl(PR_GET_CHILD_SUBREAPER, &value, 0, 0, 0) != 0) return -1;
    return value != 0;
}
