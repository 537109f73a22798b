// CLZ4Shim: the system codec module (Debian's libxxhash: XXH3-64 and XXH64), used on Linux
// with the default `SystemCodecs` trait. It wrapped liblz4 too while the file's labels were
// LZ4-coded; format 2.0 codes them with a symbol table, and LZ4 measured against it lost on
// lookups (BENCHMARKS.md, "LZ4 where it wins?"), so nothing links liblz4 any more.
// Thin `static inline` wrappers taking `const void *` so Swift can pass `UnsafeRawPointer`
// without rebinding; the `clz4_` prefix keeps them apart from the library's own names. The OS
// shims (atomics, rename exchange, heap statistics) live in Sources/CPortable/include/cportable_os.h.
#ifndef CLZ4SHIM_H
#define CLZ4SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <xxhash.h>

/// XXH3-64 of `length` bytes at `data`, seed 0.
static inline uint64_t clz4_xxh3_64(const void *data, size_t length) {
    return (uint64_t)XXH3_64bits(data, length);
}

/// XXH64 of `length` bytes at `data`, with `seed`.
static inline uint64_t clz4_xxh64(const void *data, size_t length, uint64_t seed) {
    return (uint64_t)XXH64(data, length, (XXH64_hash_t)seed);
}

#endif
