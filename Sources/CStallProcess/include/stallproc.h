// CStallProcess: the few system calls the bisect process runner needs that Swift cannot make directly.
// Used only by StallBisect's process runner and reaper; no capture code here.
#ifndef STALLPROC_H
#define STALLPROC_H

/// Makes the calling process a child subreaper (prctl PR_SET_CHILD_SUBREAPER): a descendant whose parent exits
/// (a double fork, a `setsid cmd &` in a script) is reparented to it instead of to init, so it can be killed
/// and reaped. Returns 0, or the errno of the failure.
int stallproc_become_subreaper(void);

/// 1 when the calling process is a child subreaper, 0 when not, -1 when it cannot tell.
int stallproc_is_subreaper(void);

#endif
