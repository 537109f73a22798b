// CPortable: the hashes written for this package in portable C (no system libraries):
// XXH3-64 (seed 0) and XXH64 (docs: xxHash doc/xxhash_spec.md).
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

#ifdef __cplusplus
}
#endif
#endif
