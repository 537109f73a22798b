// CPortable OS shims: a prefetch hint, an atomic exchange of two paths, an asymmetric memory
// barrier, and the malloc heap in use. Each has a Linux (glibc, musl) and a Darwin branch; the Swift
// side calls them only from the `System/` layers.
#ifndef CPORTABLE_OS_H
#define CPORTABLE_OS_H

#include <stddef.h>
#include <stdint.h>
#include <errno.h>

/* A hint that the cache line at `p` will be read soon (no effect on correctness; any
 * address is allowed, nothing is dereferenced). */
static inline void cport_prefetch(const void *p) {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(p, 0, 3);
#else
    (void)p;
#endif
}

/// Swaps two paths in one atomic step (both must exist): Linux renameat2(RENAME_EXCHANGE),
/// Darwin renamex_np(RENAME_SWAP). Returns 0, or -1 with errno (EINVAL, ENOSYS, ENOTSUP when
/// the file system or kernel cannot; the caller then falls back to two renames).
#if defined(__linux__)
#include <fcntl.h>
#include <unistd.h>
#include <sys/syscall.h>
static inline int cport_rename_exchange(const char *a, const char *b) {
#if defined(SYS_renameat2)
    return (int)syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, 1u << 1 /* RENAME_EXCHANGE */);
#else
    (void)a; (void)b;
    errno = ENOSYS;
    return -1;
#endif
}
#elif defined(__APPLE__)
#include <stdio.h>
static inline int cport_rename_exchange(const char *a, const char *b) {
    return renamex_np(a, b, RENAME_SWAP);
}
#else
static inline int cport_rename_exchange(const char *a, const char *b) {
    (void)a; (void)b;
    errno = ENOSYS;
    return -1;
}
#endif

/// The two sides of an asymmetric memory barrier (the C ABI's handle pins): a rare heavy
/// side that makes every thread of the process execute a full barrier (Linux
/// membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), registered once), so that the frequent side
/// needs only a compiler barrier. cport_membarrier_register() returns 0 when the heavy side is
/// available, -1 (errno set) when it is not (other systems, old kernels, sandboxes): callers
/// then put a full fence on both sides.
#if defined(__linux__) && defined(SYS_membarrier)
static inline int cport_membarrier_register(void) {
    /* MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED */
    return syscall(SYS_membarrier, 1 << 4, 0, 0) == 0 ? 0 : -1;
}
static inline int cport_membarrier(void) {
    /* MEMBARRIER_CMD_PRIVATE_EXPEDITED */
    return syscall(SYS_membarrier, 1 << 3, 0, 0) == 0 ? 0 : -1;
}
#else
static inline int cport_membarrier_register(void) { errno = ENOSYS; return -1; }
static inline int cport_membarrier(void) { errno = ENOSYS; return -1; }
#endif

/// Keeps the compiler from moving memory accesses across it; no instruction is emitted.
static inline void cport_compiler_barrier(void) {
#if defined(__GNUC__) || defined(__clang__)
    __asm__ __volatile__("" ::: "memory");
#endif
}

/// Bytes currently allocated by malloc, or -1 where the C library cannot say.
/// glibc: mallinfo2 (in-use arena bytes plus mmap'd chunks); Darwin: the default zone's
/// statistics; musl and others: -1 (heap measurement is for tests and benchmarks only).
#if defined(__GLIBC__)
#include <malloc.h>
static inline long long cport_heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return (long long)(info.uordblks + info.hblkhd);
}
#elif defined(__APPLE__)
#include <malloc/malloc.h>
static inline long long cport_heap_in_use(void) {
    malloc_statistics_t stats;
    malloc_zone_statistics(NULL, &stats);
    return (long long)stats.size_in_use;
}
#else
static inline long long cport_heap_in_use(void) { return -1; }
#endif

#endif
