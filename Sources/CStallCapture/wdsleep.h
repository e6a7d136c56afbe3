// wdsleep.h: internal to CStallCapture. The futex word of the watchdog's sleep between checks (wdsleep.c), below
// the deep sleep (wddeep.c), which reads the word before it sleeps and wakes both sleeps in stallcap_wd_wake.
#ifndef STALLCAPTURE_WDSLEEP_H
#define STALLCAPTURE_WDSLEEP_H

/// Changes the word and wakes a thread sleeping on it (stallcap_wd_sleep), if any. Any thread.
__attribute__((visibility("hidden"))) void stallcap_wd_word_wake(void);

#endif
