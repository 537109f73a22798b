// The mapping guard and the interrupt note (cportable_signals.h). Everything a signal handler
// here calls is async-signal-safe: lock-free atomics, mmap(2) (a system call on Linux and
// Darwin, though POSIX does not list it), sigaction, raise, write.
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include "cportable_signals.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if !defined(MAP_ANONYMOUS) && defined(MAP_ANON)
#define MAP_ANONYMOUS MAP_ANON
#endif

// ── The registry ────────────────────────────────────────────────────────────────────────

/// One registered region. `base` is written last on registration and cleared first on
/// unregistration: the handler matches only a slot whose `base` is not 0.
typedef struct guard_slot {
    _Atomic(uintptr_t) base;
    _Atomic(size_t) length;
    _Atomic(uint64_t) faults;
    atomic_int taken;
} guard_slot;

enum { SLOTS_PER_CHUNK = 256 };

/// Slots in chunks linked from `first_chunk`; a chunk is added when every slot is taken and is
/// never freed, so the handler can walk the list while other threads change it.
typedef struct guard_chunk {
    guard_slot slots[SLOTS_PER_CHUNK];
    _Atomic(struct guard_chunk *) next;
} guard_chunk;

static guard_chunk first_chunk;
static _Atomic(uint64_t) total_faults;
static size_t page_size = 4096;

void *cport_guard_register(const void *base, size_t length) {
    if (base == NULL || length == 0) return NULL;
    guard_chunk *chunk = &first_chunk;
    for (;;) {
        for (int i = 0; i < SLOTS_PER_CHUNK; i++) {
            guard_slot *s = &chunk->slots[i];
            int free_slot = 0;
            if (atomic_load_explicit(&s->taken, memory_order_relaxed) == 0
                && atomic_compare_exchange_strong(&s->taken, &free_slot, 1)) {
                atomic_store_explicit(&s->faults, 0, memory_order_relaxed);
                atomic_store_explicit(&s->length, length, memory_order_relaxed);
                atomic_store_explicit(&s->base, (uintptr_t)base, memory_order_release);
                return s;
            }
        }
        guard_chunk *next = atomic_load_explicit(&chunk->next, memory_order_acquire);
        if (next == NULL) {
            guard_chunk *made = calloc(1, sizeof(guard_chunk));
            if (made == NULL) return NULL;
            guard_chunk *expected = NULL;
            if (atomic_compare_exchange_strong(&chunk->next, &expected, made)) {
                next = made;
            } else {
                free(made);  // another thread added one first
                next = expected;
            }
        }
        chunk = next;
    }
}

void cport_guard_unregister(void *handle) {
    if (handle == NULL) return;
    guard_slot *s = handle;
    atomic_store_explicit(&s->base, 0, memory_order_release);
    atomic_store_explicit(&s->length, 0, memory_order_relaxed);
    atomic_store_explicit(&s->taken, 0, memory_order_release);
}

uint64_t cport_guard_faults(const void *handle) {
    if (handle == NULL) return 0;
    return atomic_load_explicit(&((guard_slot *)handle)->faults, memory_order_acquire);
}

uint64_t cport_guard_faults_total(void) {
    return atomic_load_explicit(&total_faults, memory_order_acquire);
}

/// The registered region holding `address`, or NULL.
static guard_slot *guard_find(uintptr_t address, uintptr_t *base, size_t *length) {
    for (guard_chunk *c = &first_chunk; c != NULL; c = atomic_load_explicit(&c->next, memory_order_acquire)) {
        for (int i = 0; i < SLOTS_PER_CHUNK; i++) {
            guard_slot *s = &c->slots[i];
            uintptr_t b = atomic_load_explicit(&s->base, memory_order_acquire);
            if (b == 0 || address < b) continue;
            size_t n = atomic_load_explicit(&s->length, memory_order_relaxed);
            if (address - b < n) {
                *base = b;
                *length = n;
                return s;
            }
        }
    }
    return NULL;
}

// ── The SIGBUS handler ──────────────────────────────────────────────────────────────────

static struct sigaction previous_bus;
static pthread_once_t guard_once = PTHREAD_ONCE_INIT;
static int guard_result = -1;
static int guard_errno = 0;
static atomic_int guard_is_installed;

/// A fault the kernel raised for a bad address (not a signal another process sent).
static int is_address_fault(const siginfo_t *info) {
    return info->si_code == BUS_ADRERR || info->si_code == BUS_OBJERR;
}

/// What would have happened without the guard: the previous handler, or the default action
/// (restored here; the faulting instruction runs again on return and the process ends by
/// SIGBUS, a signal sent by kill is raised again and delivered on return).
static void guard_chain(int sig, siginfo_t *info, void *context) {
    if (previous_bus.sa_flags & SA_SIGINFO) {
        if (previous_bus.sa_sigaction != NULL) {
            previous_bus.sa_sigaction(sig, info, context);
            return;
        }
    } else if (previous_bus.sa_handler != SIG_DFL && previous_bus.sa_handler != SIG_IGN) {
        previous_bus.sa_handler(sig);
        return;
    }
    struct sigaction fallback;
    memset(&fallback, 0, sizeof fallback);
    fallback.sa_handler = SIG_DFL;
    sigemptyset(&fallback.sa_mask);
    sigaction(sig, &fallback, NULL);
    if (!is_address_fault(info)) raise(sig);
}

static void guard_handler(int sig, siginfo_t *info, void *context) {
    int saved = errno;
    uintptr_t address = (uintptr_t)info->si_addr, base = 0;
    size_t length = 0;
    guard_slot *slot = is_address_fault(info) ? guard_find(address, &base, &length) : NULL;
    if (slot != NULL) {
        uintptr_t page = address & ~(uintptr_t)(page_size - 1);
        uintptr_t end = (base + length + page_size - 1) & ~(uintptr_t)(page_size - 1);
        void *zeros = mmap((void *)page, end - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        if (zeros != MAP_FAILED) {
            atomic_fetch_add_explicit(&slot->faults, 1, memory_order_release);
            atomic_fetch_add_explicit(&total_faults, 1, memory_order_release);
            errno = saved;
            return;
        }
    }
    guard_chain(sig, info, context);
    errno = saved;
}

static void guard_install_once(void) {
    long size = sysconf(_SC_PAGESIZE);
    if (size > 0) page_size = (size_t)size;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_sigaction = guard_handler;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGBUS, &action, &previous_bus) == 0) {
        guard_result = 0;
        atomic_store(&guard_is_installed, 1);
    } else {
        guard_errno = errno;
    }
}

int cport_guard_install(void) {
    pthread_once(&guard_once, guard_install_once);
    if (guard_result != 0) errno = guard_errno;
    return guard_result;
}

int cport_guard_installed(void) {
    return atomic_load(&guard_is_installed);
}

// ── The interrupt note ──────────────────────────────────────────────────────────────────

enum { NOTE_PHASES = 4 };

/// Each phase's note (copies made by `cport_interrupt_note_set`, never freed while the handler
/// may read them: a note replaced leaks its old copy, a few hundred bytes at most per phase).
static _Atomic(const char *) notes[NOTE_PHASES];
static atomic_int note_phase;

void cport_interrupt_note_set(int phase, const char *text) {
    if (phase < 0 || phase >= NOTE_PHASES) return;
    const char *copy = text == NULL ? NULL : strdup(text);
    atomic_store(&notes[phase], copy);
}

void cport_interrupt_note_phase(int phase) {
    if (phase < 0 || phase >= NOTE_PHASES) return;
    atomic_store(&note_phase, phase);
}

static void note_handler(int sig) {
    const char *text = atomic_load(&notes[atomic_load(&note_phase)]);
    if (text != NULL) {
        size_t left = strlen(text);
        while (left > 0) {
            ssize_t n = write(STDERR_FILENO, text, left);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            text += n;
            left -= (size_t)n;
        }
    }
    struct sigaction fallback;
    memset(&fallback, 0, sizeof fallback);
    fallback.sa_handler = SIG_DFL;
    sigemptyset(&fallback.sa_mask);
    sigaction(sig, &fallback, NULL);
    raise(sig);  // delivered when the handler returns: the process ends by the signal
}

int cport_interrupt_note_install(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = note_handler;
    sigemptyset(&action.sa_mask);
    sigaddset(&action.sa_mask, SIGINT);
    sigaddset(&action.sa_mask, SIGTERM);
    sigset_t unblock;
    sigemptyset(&unblock);
    const int signals[2] = { SIGINT, SIGTERM };
    for (int i = 0; i < 2; i++) {
        struct sigaction old;
        if (sigaction(signals[i], NULL, &old) != 0) return -1;
        // A signal ignored from the start (nohup, a background job of a script) stays ignored.
        if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN) continue;
        if (sigaction(signals[i], &action, NULL) != 0) return -1;
        sigaddset(&unblock, signals[i]);
    }
    // A mask inherited blocked (from a parent's thread) would hold the signal back until exit.
    return pthread_sigmask(SIG_UNBLOCK, &unblock, NULL) == 0 ? 0 : -1;
}
