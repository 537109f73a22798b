// CBenchSupport: liblz4 (for the compressed-TSV peer) and the few libc calls the harness
// needs (monotonic clock, page-cache eviction and residency), as `static inline` wrappers
// taking `void *` so Swift passes raw pointers without rebinding. Prefix `cb_`.
#ifndef CBENCH_H
#define CBENCH_H
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memrchr */
#endif
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>
#include <string.h>
#include <sys/mman.h>
#include <lz4.h>
#include <lz4hc.h>

static inline uint64_t cb_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/// The last byte `c` in [p, p + n), or NULL.
static inline const void *cb_memrchr(const void *p, int c, size_t n) { return memrchr(p, c, n); }

static inline int cb_lz4_bound(int n) { return LZ4_compressBound(n); }
static inline int cb_lz4_compress(const void *src, void *dst, int n, int cap) {
    return LZ4_compress_default((const char *)src, (char *)dst, n, cap);
}
static inline int cb_lz4_compress_hc(const void *src, void *dst, int n, int cap, int level) {
    return LZ4_compress_HC((const char *)src, (char *)dst, n, cap, level);
}
static inline int cb_lz4_decompress(const void *src, void *dst, int n, int cap) {
    return LZ4_decompress_safe((const char *)src, (char *)dst, n, cap);
}
static inline const char *cb_lz4_version(void) { return LZ4_versionString(); }

/// Drops the file's pages from the page cache (after writing back dirty ones). Returns the
/// number of its pages still resident afterwards (0 when the eviction worked), -1 on error.
static inline long cb_evict(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    fsync(fd);
    off_t size = lseek(fd, 0, SEEK_END);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    long resident = 0;
    if (size > 0) {
        void *m = mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0);
        if (m != MAP_FAILED) {
            long page = sysconf(_SC_PAGESIZE);
            size_t pages = ((size_t)size + (size_t)page - 1) / (size_t)page;
            unsigned char vec[4096];
            for (size_t at = 0; at < pages; at += sizeof vec) {
                size_t n = pages - at < sizeof vec ? pages - at : sizeof vec;
                if (mincore((char *)m + at * (size_t)page, n * (size_t)page, vec) == 0)
                    for (size_t i = 0; i < n; i++) resident += vec[i] & 1;
            }
            munmap(m, (size_t)size);
        }
    }
    close(fd);
    return resident;
}

/// fsync a file by path (a build is complete once its bytes are durable). 0 on success.
static inline int cb_fsync_path(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    int r = fsync(fd);
    close(fd);
    return r;
}
#endif
