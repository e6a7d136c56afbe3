// waitfds.h: internal to CStallCapture. What the deep sleep (wddeep.c) needs of the run-loop wait readings
// (waitfds.c).
#ifndef STALLCAPTURE_WAITFDS_H
#define STALLCAPTURE_WAITFDS_H

/// True (1) when descriptor `fd` of this process is an epoll set (`anon_inode:[eventpoll]`).
__attribute__((visibility("hidden"))) int stallcap_fd_is_epoll(int fd);

#endif
