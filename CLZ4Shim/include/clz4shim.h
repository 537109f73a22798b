// CLZ4Shim: the system codec module, used on Linux with the default `SystemCodecs` trait:
// Debian's libxxhash (XXH3-64, XXH64) and liblz4, whose LZ4HC writes the LZ4 groups of a
// version 3.1 file's cold labels (docs/FORMAT.md 5.13-5.14). Readers decode them with the
// package's own decoder (Sources/CPortable/lz4_block.c) on every platform; liblz4's decoder is
// wrapped here for the tests that compare the two. Thin `static inline` wrappers taking
// `const void *` so Swift can pass `UnsafeRawPointer` without rebinding; the `clz4_` prefix
// keeps them apart from the libraries' own names. The OS shims (atomics, rename exchange, heap
// statistics) live in Sources/CPortable/include/cportable_os.h.
#ifndef CLZ4SHIM_H
#define CLZ4SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <xxhash.h>
#include <lz4.h>
#include <lz4hc.h>

/// XXH3-64 of `length` bytes at `data`, seed 0.
static inline uint64_t clz4_xxh3_64(const void *data, size_t length) {
    return (uint64_t)XXH3_64bits(data, length);
}

/// XXH64 of `length` bytes at `data`, with `seed`.
static inline uint64_t clz4_xxh64(const void *data, size_t length, uint64_t seed) {
    return (uint64_t)XXH64(data, length, (XXH64_hash_t)seed);
}

/// Narrows a dictionary to its last 64 KiB, all that an LZ4 match offset can reach.
static inline void clz4_window(const void **dict, size_t *dictSize) {
    if (*dictSize > 65536) {
        *dict = (const char *)*dict + (*dictSize - 65536);
        *dictSize = 65536;
    }
}

/// Decodes one LZ4 block of `srcSize` bytes into at most `dstCapacity` bytes, its matches
/// reaching back into `dict` (the bytes just before the output): the length decoded, or a
/// negative value for a malformed block. Never reads or writes outside the three buffers.
static inline int clz4_decode_dict(const void *src, size_t srcSize, void *dst, size_t dstCapacity,
                                   const void *dict, size_t dictSize) {
    if (srcSize > INT_MAX || dstCapacity > INT_MAX) return -1;
    clz4_window(&dict, &dictSize);
    return LZ4_decompress_safe_usingDict((const char *)src, (char *)dst, (int)srcSize, (int)dstCapacity,
                                         (const char *)dict, (int)dictSize);
}

/// An LZ4HC encoder with a fixed external dictionary: each block is compressed alone against
/// the dictionary (the prepared state is copied, so the dictionary is hashed once).
typedef struct clz4_hc_encoder {
    LZ4_streamHC_t *prepared;
    LZ4_streamHC_t *working;
    char *dict;
    int dictSize;
} clz4_hc_encoder;

/// A new encoder at `level` (LZ4HC's 1 ... 12) over a copy of the last 64 KiB of `dict`; NULL
/// when memory runs out.
static inline clz4_hc_encoder *clz4_hc_encoder_new(const void *dict, size_t dictSize, int level) {
    clz4_hc_encoder *e = (clz4_hc_encoder *)calloc(1, sizeof *e);
    if (!e) return NULL;
    clz4_window(&dict, &dictSize);
    e->prepared = LZ4_createStreamHC();
    e->working = LZ4_createStreamHC();
    e->dict = (char *)malloc(dictSize ? dictSize : 1);
    if (!e->prepared || !e->working || !e->dict) {
        LZ4_freeStreamHC(e->prepared);
        LZ4_freeStreamHC(e->working);
        free(e->dict);
        free(e);
        return NULL;
    }
    if (dictSize) memcpy(e->dict, dict, dictSize);
    e->dictSize = (int)dictSize;
    LZ4_resetStreamHC_fast(e->prepared, level);
    LZ4_loadDictHC(e->prepared, e->dict, e->dictSize);
    return e;
}

static inline void clz4_hc_encoder_free(clz4_hc_encoder *e) {
    if (!e) return;
    LZ4_freeStreamHC(e->prepared);
    LZ4_freeStreamHC(e->working);
    free(e->dict);
    free(e);
}

/// The most bytes a block of `size` bytes compresses to.
static inline size_t clz4_compress_bound(size_t size) {
    return size > LZ4_MAX_INPUT_SIZE ? 0 : (size_t)LZ4_compressBound((int)size);
}

/// Compresses `srcSize` bytes as one block against the encoder's dictionary into `dst`
/// (room for `clz4_compress_bound(srcSize)`): its length, or 0 on failure.
static inline size_t clz4_hc_encode(clz4_hc_encoder *e, const void *src, size_t srcSize, void *dst, size_t dstCapacity) {
    if (srcSize > LZ4_MAX_INPUT_SIZE || dstCapacity > INT_MAX) return 0;
    memcpy(e->working, e->prepared, sizeof *e->working);
    int n = LZ4_compress_HC_continue(e->working, (const char *)src, (char *)dst, (int)srcSize, (int)dstCapacity);
    return n > 0 ? (size_t)n : 0;
}

#endif
