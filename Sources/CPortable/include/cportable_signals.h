// CPortable signal shims: reads of memory-mapped files that survive the file being cut short,
// and a note written when an interrupt ends the process. Linux (glibc, musl) and Darwin; the
// Swift side calls them only from the `System/` layers.
#ifndef CPORTABLE_SIGNALS_H
#define CPORTABLE_SIGNALS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define CPORT_SIGNALS_API __attribute__((visibility("hidden")))
#else
#define CPORT_SIGNALS_API
#endif

// ── The mapping guard ───────────────────────────────────────────────────────────────────
//
// A file mapped with MAP_SHARED that is truncated (or hit by an I/O error) makes every read of
// a page past its new end raise SIGBUS, which kills the process. With the guard installed, a
// SIGBUS whose faulting address lies in a registered region is handled: anonymous zero pages
// are mapped over the region from the faulting page to its end (MAP_FIXED, read-only), the
// region's fault count is raised, and the handler returns, so the faulting read runs again and
// reads zeros. Zeros are bytes like any damaged file's: readers that check every offset read
// them without trapping, and the caller must discard what it read from the region once its
// count is not zero (`cport_guard_faults`). A SIGBUS anywhere else (another mapping, a
// signal sent with kill) goes to the handler installed before the guard, or kills the process
// as it would have without the guard.
//
// The registry is lock-free (the handler reads it while other threads register and
// unregister): regions live in slots of chunks that are never freed. A region must be
// unregistered before it is unmapped, and registered after it is mapped.

/// Registers `length` bytes at `base` (a mapping). Returns the region's handle, or NULL when
/// no memory could be had for the registry (the region is then not guarded). Any thread.
CPORT_SIGNALS_API void *cport_guard_register(const void *base, size_t length);

/// Unregisters a region (`handle` from `cport_guard_register`; NULL is ignored). Call it before
/// the region is unmapped; the handle must not be used afterwards.
CPORT_SIGNALS_API void cport_guard_unregister(void *handle);

/// How many faults the guard has handled in the region since it was registered (0: every
/// read of it read the file).
CPORT_SIGNALS_API uint64_t cport_guard_faults(const void *handle);

/// Faults handled in every region since the process started.
CPORT_SIGNALS_API uint64_t cport_guard_faults_total(void);

/// Installs the SIGBUS handler (once per process; later calls return the first's result).
/// Returns 0, or -1 with errno set.
CPORT_SIGNALS_API int cport_guard_install(void);

/// 1 once `cport_guard_install` succeeded, else 0.
CPORT_SIGNALS_API int cport_guard_installed(void);

// ── A note on interrupt ─────────────────────────────────────────────────────────────────
//
// For a command whose interruption leaves things worth explaining: on SIGINT or SIGTERM the
// handler writes the note of the current phase to stderr (one write(2)), restores the signal's
// default action and raises it again, so the process still ends by that signal (a shell shows
// 130 for SIGINT, 143 for SIGTERM, and a script that runs it stops as it would have).

/// Sets the note of phase `phase` (0 … 3) to a copy of `text` (NULL: none). Call before
/// `cport_interrupt_note_install` or while the phase is another one.
CPORT_SIGNALS_API void cport_interrupt_note_set(int phase, const char *text);

/// Makes `phase` the current one: its note is what an interrupt writes from now on.
CPORT_SIGNALS_API void cport_interrupt_note_phase(int phase);

/// Installs the handler on SIGINT and SIGTERM, except on one ignored when the process started
/// (nohup, a background job), and unblocks them in the calling thread (a mask inherited from
/// a parent's thread would hold them back). Returns 0, or -1 with errno set.
CPORT_SIGNALS_API int cport_interrupt_note_install(void);

#ifdef __cplusplus
}
#endif
#endif
