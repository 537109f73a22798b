// CPortable: the hashes and the decoder written for this package in portable C (no system
// libraries): XXH3-64 (seed 0) and XXH64 (docs: xxHash doc/xxhash_spec.md), and LZ4 block
// decoding with a dictionary (docs: LZ4 doc/lz4_Block_format.md).
//
// Written from the published format specification; the package uses them on Apple platforms
// and whenever it is built with the `PortableCodecs` trait.
#ifndef CPORTABLE_H
#define CPORTABLE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Internal to the package: hidden, so libcallerid.so exports only its own C ABI (cid_*).
#if defined(__GNUC__) || defined(__clang__)
#define CPORT_API __attribute__((visibility("hidden")))
#else
#define CPORT_API
#endif

/// XXH3-64 of `length` bytes at `data`, seed 0 (`data` may be NULL when `length` is 0).
CPORT_API uint64_t cport_xxh3_64(const void *data, size_t length);

/// XXH3-64 (seed 0) of a stream given in pieces: the same value as `cport_xxh3_64` of all the
/// pieces joined. Fixed size (no allocation): declare one, `cport_xxh3_reset` it, `update` it
/// with each piece, `digest` it (which leaves the state as it was, so more may follow).
typedef struct cport_xxh3_state {
    uint64_t acc[8];
    uint64_t total;
    uint64_t stripe;
    uint64_t buffered;
    uint8_t buffer[512];
    uint8_t last[64];
} cport_xxh3_state;

CPORT_API void cport_xxh3_reset(cport_xxh3_state *state);
CPORT_API void cport_xxh3_update(cport_xxh3_state *state, const void *data, size_t length);
CPORT_API uint64_t cport_xxh3_digest(const cport_xxh3_state *state);

/// XXH64 of `length` bytes at `data`, with `seed`.
CPORT_API uint64_t cport_xxh64(const void *data, size_t length, uint64_t seed);

/// Decodes the LZ4 block of `srcSize` bytes at `src` into `dst`, whose matches may reach back
/// past the start of `dst` into `dict` (`dictSize` bytes logically just before `dst`; only its
/// last 65,535 bytes can be reached). The contract of liblz4's `LZ4_decompress_safe_usingDict`:
/// returns the number of bytes written (at most `dstCapacity`), or a negative value when the
/// block is malformed (a run past the end of the input or of `dstCapacity`, offset 0, an offset
/// before the dictionary's start, a block not ending with a literals-only sequence, `srcSize`
/// 0). Never reads outside the block and the dictionary nor writes outside
/// `[dst, dst + dstCapacity)`, whatever the bytes; may write past the returned count within the
/// capacity. `dict` may be NULL when `dictSize` is 0, `dst` when `dstCapacity` is 0; `dict` must
/// not overlap `dst`'s capacity (it may end where `dst` starts). A capacity above INT_MAX is
/// used as INT_MAX.
CPORT_API int cport_lz4_decode_dict(const void *src, size_t srcSize, void *dst, size_t dstCapacity, const void *dict, size_t dictSize);

#ifdef __cplusplus
}
#endif
#endif
