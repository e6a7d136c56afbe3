// CStallOutput: `stallprof -o`'s temporary file, removed when SIGINT, SIGTERM or SIGHUP interrupts the command.
// The signal handler is C and async-signal-safe: it calls unlink() on a path copied in beforehand, puts the
// signal's default action back and raises it again (sigaction, raise); nothing else. Used only by the stallprof
// CLI; no capture code here.
#ifndef STALLOUTPUT_H
#define STALLOUTPUT_H

/// Creates a temporary file from `template` (mkstemp: its trailing XXXXXX replaced, in place) and guards it: until
/// stalloutput_commit() or stalloutput_abandon(), SIGINT, SIGTERM or SIGHUP removes the file, then ends the process
/// as the signal would have (a shell reports 130, 143, 129). A signal the process ignores stays ignored. The three
/// signals are blocked from before the file exists until the guard holds, so no signal leaves the file behind.
/// One file is guarded at a time. Returns the descriptor (O_CLOEXEC), or -1 with errno: EBUSY when a file is
/// already guarded, ENAMETOOLONG for a template of PATH_MAX bytes or more, else mkstemp's.
int stalloutput_create(char *template);

/// Renames the guarded file to `target` and stops guarding it, with the signals blocked: a signal either comes
/// before (the file is removed, `target` untouched) or after (the process ends with `target` complete). Returns 0,
/// or -1 with rename's errno (the file is then still guarded: stalloutput_abandon() removes it).
int stalloutput_commit(const char *target);

/// Removes the guarded file, if any, and stops guarding it (a failed or abandoned output).
void stalloutput_abandon(void);

#endif
