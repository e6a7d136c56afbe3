// altstack.h: internal to CStallCapture. The alternate signal stack the capture handler runs on (altstack.c).
#ifndef STALLCAPTURE_ALTSTACK_H
#define STALLCAPTURE_ALTSTACK_H

/// Gives the calling thread a 64 KiB alternate signal stack of stallprof's (mmap, guard page below, freed at
/// thread exit) unless it has one already: an app's own is never replaced. Called by `stallcap_warm_thread`.
__attribute__((visibility("hidden"))) void stallcap_install_alt_stack(void);

#endif
