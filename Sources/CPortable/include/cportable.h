// CPortable: codecs written for this package in portable C (no system libraries).
//
// - LZ4 *block* decoding with an external dictionary (docs: lz4 doc/lz4_Block_format.md),
//   safe on any input: never reads outside the source or dictionary, never writes outside
//   the destination. It refuses what liblz4 1.9.4's LZ4_decompress_safe_usingDict refuses;
//   docs/PORTABILITY.md lists the few blocks it refuses that liblz4 lets through.
// - A greedy LZ4 block encoder with an external dictionary (valid blocks, less dense than LZ4HC).
// - XXH3-64 (seed 0) and XXH64 (docs: xxHash doc/xxhash_spec.md).
//
// Written from the published format specifications; the package uses these on Apple
// platforms and whenever it is built with the `PortableCodecs` trait.
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

/// Decoding results below zero.
enum {
    /// The block is malformed (truncated, bad offset, lengths past the input, output overflow).
    CPORT_LZ4_MALFORMED = -1,
    /// The block breaks an end-of-block rule of the format (a match reaching into the last
    /// 5 bytes of output, or literals that leave too little input for the last sequence).
    CPORT_LZ4_END_RULE = -2,
    /// A match with offset 0 (invalid in the format).
    CPORT_LZ4_OFFSET_ZERO = -3,
};

/// Decodes one LZ4 block of `sourceSize` bytes into at most `capacity` bytes at `destination`,
/// with the `dictionarySize` bytes at `dictionary` as the history before the block (may be 0).
/// Returns the number of bytes produced, or a negative `CPORT_LZ4_*` value. The destination
/// must not overlap the source or the dictionary.
CPORT_API ptrdiff_t cport_lz4_decode(const void *source, size_t sourceSize, void *destination, size_t capacity,
                         const void *dictionary, size_t dictionarySize);

/// The largest block `cport_lz4_encode` can produce for `size` input bytes.
CPORT_API size_t cport_lz4_bound(size_t size);

/// A greedy LZ4 block encoder with a preloaded external dictionary (its last 64 KiB).
typedef struct cport_lz4_encoder cport_lz4_encoder;

/// Copies the dictionary and indexes it once. NULL when out of memory.
CPORT_API cport_lz4_encoder *cport_lz4_encoder_create(const void *dictionary, size_t dictionarySize);

/// Encodes `size` bytes as one independent block against the dictionary. Returns the block's
/// size, or 0 when it does not fit in `capacity` (or `size` is 0, or out of memory).
CPORT_API size_t cport_lz4_encode(cport_lz4_encoder *encoder, const void *source, size_t size,
                      void *destination, size_t capacity);

CPORT_API void cport_lz4_encoder_free(cport_lz4_encoder *encoder);

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

#ifdef __cplusplus
}
#endif
#endif
