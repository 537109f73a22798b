// CLZ4Shim: the system codecs (liblz4, libxxhash), used on Linux with the default
// `SystemCodecs` trait. Thin `static inline` wrappers taking `const void *` / `void *` so
// Swift can pass `UnsafeRawPointer` without rebinding; the `clz4_` prefix keeps them apart
// from the libraries' own names. The OS shims (atomics, rename exchange, heap statistics)
// live in Sources/CPortable/include/cportable_os.h.
#ifndef CLZ4SHIM_H
#define CLZ4SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <lz4.h>
#include <lz4hc.h>
#include <xxhash.h>

/// XXH3-64 of `length` bytes at `data`, seed 0.
static inline uint64_t clz4_xxh3_64(const void *data, size_t length) {
    return (uint64_t)XXH3_64bits(data, length);
}

/// XXH64 of `length` bytes at `data`, with `seed`.
static inline uint64_t clz4_xxh64(const void *data, size_t length, uint64_t seed) {
    return (uint64_t)XXH64(data, length, (XXH64_hash_t)seed);
}

/// Worst-case compressed size for `size` input bytes (0 when too large).
static inline int clz4_compress_bound(int size) { return LZ4_compressBound(size); }

/// LZ4HC compression. Returns the compressed size, or 0 when `capacity` is too small.
static inline int clz4_compress_hc(const void *src, void *dst, int srcSize, int capacity, int level) {
    return LZ4_compress_HC((const char *)src, (char *)dst, srcSize, capacity, level);
}

/// LZ4 safe decompression: never reads past `srcSize` nor writes past `capacity`.
/// Returns the decompressed size, or a negative value for malformed input.
static inline int clz4_decompress_safe(const void *src, void *dst, int srcSize, int capacity) {
    return LZ4_decompress_safe((const char *)src, (char *)dst, srcSize, capacity);
}

/// LZ4 safe decompression against an external dictionary (the 64 KiB before the block).
static inline int clz4_decompress_safe_dict(const void *src, void *dst, int srcSize, int capacity,
                                            const void *dict, int dictSize) {
    return LZ4_decompress_safe_usingDict((const char *)src, (char *)dst, srcSize, capacity,
                                         (const char *)dict, dictSize);
}

/// An LZ4HC compressor with a preloaded dictionary: the dictionary is hashed once into
/// `prepared`, and each block starts from a copy of that state (cheaper than reloading it).
typedef struct clz4_dict_compressor {
    LZ4_streamHC_t prepared;
    LZ4_streamHC_t work;
} clz4_dict_compressor;

/// Creates a compressor; `dict` (≤ 64 KiB used) must stay valid until it is freed. NULL on OOM.
static inline void *clz4_dict_compressor_create(const void *dict, int dictSize, int level) {
    clz4_dict_compressor *c = (clz4_dict_compressor *)malloc(sizeof *c);
    if (c == NULL) return NULL;
    LZ4_initStreamHC(&c->prepared, sizeof c->prepared);
    LZ4_resetStreamHC_fast(&c->prepared, level);
    if (dictSize > 0) LZ4_loadDictHC(&c->prepared, (const char *)dict, dictSize);
    return c;
}

/// Compresses one independent block against the dictionary. Returns its size, 0 if it does not fit.
static inline int clz4_dict_compress(void *compressor, const void *src, void *dst, int srcSize, int capacity) {
    clz4_dict_compressor *c = (clz4_dict_compressor *)compressor;
    memcpy(&c->work, &c->prepared, sizeof c->work);
    return LZ4_compress_HC_continue(&c->work, (const char *)src, (char *)dst, srcSize, capacity);
}

static inline void clz4_dict_compressor_free(void *compressor) { free(compressor); }

/// LZ4 (fast, not HC) compression of one block against a dictionary (tests compare codecs
/// with it). Returns the compressed size, 0 when it does not fit or on OOM.
static inline int clz4_compress_fast_dict(const void *src, void *dst, int srcSize, int capacity,
                                          const void *dict, int dictSize, int acceleration) {
    LZ4_stream_t *stream = LZ4_createStream();
    if (stream == NULL) return 0;
    if (dictSize > 0) LZ4_loadDict(stream, (const char *)dict, dictSize);
    int n = LZ4_compress_fast_continue(stream, (const char *)src, (char *)dst, srcSize, capacity, acceleration);
    LZ4_freeStream(stream);
    return n;
}

#endif
