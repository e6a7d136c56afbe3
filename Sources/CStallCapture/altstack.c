// The alternate signal stack each sampled thread gives itself, so that the capture handler never needs the
// thread's own stack (a thread with little of it left would overflow into its guard page).
#include "altstack.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

// The alternate signal stack the handler runs on: sized for the unwinder (~3.5 KB on x86_64) plus the signal frame
// (up to ~3.5 KB with AVX-512 state), with room to spare (a libunwind walk needs ~9-10 KB, NOTES section 10), and a
// guard page below it.
#define ALT_STACK_SIZE (64 * 1024)

static pthread_key_t g_alt_key;
static pthread_once_t g_alt_once = PTHREAD_ONCE_INIT;

// At thread exit (never inside a handler): stop using our alternate stack if it is still the thread's, then free
// it. If it cannot be disabled it stays mapped.
static void alt_stack_release(void *mapping) {
    long page = sysconf(_SC_PAGESIZE);
    stack_t current;
    if (sigaltstack(NULL, &current) != 0) return;
    if (!(current.ss_flags & SS_DISABLE) && current.ss_sp == (char *)mapping + page) {
        if (current.ss_flags & SS_ONSTACK) return;
        stack_t off;
        memset(&off, 0, sizeof off);
        off.ss_flags = SS_DISABLE;
        if (sigaltstack(&off, NULL) != 0) return;
    }
    munmap(mapping, (size_t)page + ALT_STACK_SIZE);
}

static void alt_key_create(void) { (void)pthread_key_create(&g_alt_key, alt_stack_release); }

// Gives the calling thread an alternate signal stack of ours unless it has one (the app's own is never replaced).
void stallcap_install_alt_stack(void) {
    stack_t current;
    if (sigaltstack(NULL, &current) != 0 || !(current.ss_flags & SS_DISABLE)) return;
    if (pthread_once(&g_alt_once, alt_key_create) != 0) return;
    long page = sysconf(_SC_PAGESIZE);
    size_t total = (size_t)page + ALT_STACK_SIZE;
    char *mapping = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED) return;
    if (mprotect(mapping, (size_t)page, PROT_NONE) != 0) {
        munmap(mapping, total);
        return;
    }
    stack_t ours;
    memset(&ours, 0, sizeof ours);
    ours.ss_sp = mapping + page;
    ours.ss_size = ALT_STACK_SIZE;
    if (sigaltstack(&ours, NULL) != 0 || pthread_setspecific(g_alt_key, mapping) != 0) {
        stack_t off;
        memset(&off, 0, sizeof off);
        off.ss_flags = SS_DISABLE;
        if (sigaltstack(NULL, &current) == 0 && current.ss_sp == ours.ss_sp) sigaltstack(&off, NULL);
        munmap(mapping, total);
    }
}

