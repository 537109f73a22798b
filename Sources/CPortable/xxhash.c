// XXH3-64 (seed 0) and XXH64, written from doc/xxhash_spec.md (xxHash project).
// Little-endian reads are spelled out byte by byte (compilers turn them into single loads),
// so the code is correct on any byte order.
#include "cportable.h"

#include <string.h>

#define P32_1 0x9E3779B1u
#define P32_2 0x85EBCA77u
#define P32_3 0xC2B2AE3Du
#define P64_1 0x9E3779B185EBCA87ull
#define P64_2 0xC2B2AE3D27D4EB4Full
#define P64_3 0x165667B19E3779F9ull
#define P64_4 0x85EBCA77C2B2AE63ull
#define P64_5 0x27D4EB2F165667C5ull
#define MX1 0x165667919E3779F9ull
#define MX2 0x9FB21C651E98DF25ull

static const uint8_t kSecret[192] = {
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
};

static inline uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | ((uint64_t)le32(p + 4) << 32); }
static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static inline uint32_t swap32(uint32_t x) {
    return (x >> 24) | ((x >> 8) & 0xFF00u) | ((x << 8) & 0xFF0000u) | (x << 24);
}
static inline uint64_t swap64(uint64_t x) { return ((uint64_t)swap32((uint32_t)x) << 32) | swap32((uint32_t)(x >> 32)); }

// 64 × 64 → 128-bit product, folded: low half xor high half.
static inline uint64_t fold_mul(uint64_t a, uint64_t b) {
#if defined(__SIZEOF_INT128__)
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
#else
    uint64_t al = (uint32_t)a, ah = a >> 32, bl = (uint32_t)b, bh = b >> 32;
    uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint64_t mid = (ll >> 32) + (uint32_t)lh + (uint32_t)hl;
    uint64_t lo = (mid << 32) | (uint32_t)ll;
    uint64_t hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
    return lo ^ hi;
#endif
}

static inline uint64_t mix_xxh64(uint64_t x) {
    x ^= x >> 33; x *= P64_2;
    x ^= x >> 29; x *= P64_3;
    x ^= x >> 32;
    return x;
}
static inline uint64_t mix_xxh3(uint64_t x) {
    x ^= x >> 37; x *= MX1;
    x ^= x >> 32;
    return x;
}

// mixStep: 16 input bytes against 16 secret bytes (seed 0).
static inline uint64_t mix16(const uint8_t *in, const uint8_t *secret) {
    return fold_mul(le64(in) ^ le64(secret), le64(in + 8) ^ le64(secret + 8));
}

static uint64_t xxh3_short(const uint8_t *p, size_t n) {
    if (n > 8) {
        uint64_t lo = (le64(kSecret + 24) ^ le64(kSecret + 32)) ^ le64(p);
        uint64_t hi = (le64(kSecret + 40) ^ le64(kSecret + 48)) ^ le64(p + n - 8);
        return mix_xxh3((uint64_t)n + swap64(lo) + hi + fold_mul(lo, hi));
    }
    if (n >= 4) {
        uint64_t both = (uint64_t)le32(p + n - 4) | ((uint64_t)le32(p) << 32);
        uint64_t v = (le64(kSecret + 8) ^ le64(kSecret + 16)) ^ both;
        v ^= rotl64(v, 49) ^ rotl64(v, 24);
        v *= MX2;
        v ^= (v >> 35) + n;
        v *= MX2;
        return v ^ (v >> 28);
    }
    if (n > 0) {
        uint32_t c = (uint32_t)p[n - 1] | ((uint32_t)n << 8) | ((uint32_t)p[0] << 16) | ((uint32_t)p[n >> 1] << 24);
        return mix_xxh64((uint64_t)(le32(kSecret) ^ le32(kSecret + 4)) ^ c);
    }
    return mix_xxh64(le64(kSecret + 56) ^ le64(kSecret + 64));
}

static uint64_t xxh3_medium(const uint8_t *p, size_t n) {
    uint64_t acc = (uint64_t)n * P64_1;
    if (n <= 128) {
        size_t rounds = ((n - 1) >> 5) + 1;
        for (size_t k = rounds; k-- > 0;) {
            acc += mix16(p + k * 16, kSecret + k * 32);
            acc += mix16(p + n - k * 16 - 16, kSecret + k * 32 + 16);
        }
        return mix_xxh3(acc);
    }
    size_t chunks = n >> 4;
    for (size_t k = 0; k < 8; k++) acc += mix16(p + k * 16, kSecret + k * 16);
    acc = mix_xxh3(acc);
    for (size_t k = 8; k < chunks; k++) acc += mix16(p + k * 16, kSecret + (k - 8) * 16 + 3);
    acc += mix16(p + n - 16, kSecret + 119);
    return mix_xxh3(acc);
}

// Large inputs: 8 accumulators, 64-byte stripes, 16 stripes (1024 bytes) per block.
enum { STRIPE = 64, STRIPES_PER_BLOCK = (sizeof kSecret - 64) / 8, BLOCK = STRIPE * STRIPES_PER_BLOCK };

static inline void accumulate(uint64_t acc[8], const uint8_t *stripe, const uint8_t *secret) {
    uint64_t lane[8], key[8];
    for (int i = 0; i < 8; i++) { lane[i] = le64(stripe + 8 * i); key[i] = le64(secret + 8 * i); }
    for (int i = 0; i < 8; i++) {
        uint64_t v = lane[i] ^ key[i];
        acc[i ^ 1] += lane[i];
        acc[i] += (uint64_t)(uint32_t)v * (v >> 32);
    }
}

static inline void scramble(uint64_t acc[8]) {
    const uint8_t *secret = kSecret + sizeof kSecret - 64;
    for (int i = 0; i < 8; i++) {
        uint64_t a = acc[i];
        a ^= a >> 47;
        a ^= le64(secret + 8 * i);
        acc[i] = a * P32_1;
    }
}

static uint64_t xxh3_long(const uint8_t *p, size_t n) {
    uint64_t acc[8] = { P32_3, P64_1, P64_2, P64_3, P64_4, P32_2, P64_5, P32_1 };
    size_t done = 0;
    while (n - done > BLOCK) {
        for (size_t s = 0; s < STRIPES_PER_BLOCK; s++) accumulate(acc, p + done + s * STRIPE, kSecret + s * 8);
        scramble(acc);
        done += BLOCK;
    }
    size_t last = n - done;
    size_t full = (last - 1) / STRIPE;
    for (size_t s = 0; s < full; s++) accumulate(acc, p + done + s * STRIPE, kSecret + s * 8);
    accumulate(acc, p + n - STRIPE, kSecret + sizeof kSecret - 71);
    uint64_t result = (uint64_t)n * P64_1;
    for (int i = 0; i < 4; i++) {
        result += fold_mul(acc[2 * i] ^ le64(kSecret + 11 + 16 * i), acc[2 * i + 1] ^ le64(kSecret + 11 + 16 * i + 8));
    }
    return mix_xxh3(result);
}

uint64_t cport_xxh3_64(const void *data, size_t length) {
    static const uint8_t none[1] = { 0 };
    const uint8_t *p = data ? (const uint8_t *)data : none;
    if (data == NULL) length = 0;
    if (length <= 16) return xxh3_short(p, length);
    if (length <= 240) return xxh3_medium(p, length);
    return xxh3_long(p, length);
}

// Streaming XXH3: a stripe is taken into the accumulators as soon as at least one byte is
// known to follow it, exactly the stripes the one-shot `xxh3_long` takes before its last
// stripe; the last 64 bytes taken are kept, since the last stripe may overlap them. Inputs
// of at most 240 bytes stay in the buffer and are hashed in one go at the end.
void cport_xxh3_reset(cport_xxh3_state *s) {
    static const uint64_t init[8] = { P32_3, P64_1, P64_2, P64_3, P64_4, P32_2, P64_5, P32_1 };
    memcpy(s->acc, init, sizeof init);
    s->total = 0;
    s->stripe = 0;
    s->buffered = 0;
}

static void xxh3_take_stripes(cport_xxh3_state *s) {
    size_t off = 0;
    while (s->buffered - off > STRIPE) {
        accumulate(s->acc, s->buffer + off, kSecret + s->stripe * 8);
        if (++s->stripe == STRIPES_PER_BLOCK) { scramble(s->acc); s->stripe = 0; }
        off += STRIPE;
    }
    if (off == 0) return;
    memcpy(s->last, s->buffer + off - STRIPE, STRIPE);
    memmove(s->buffer, s->buffer + off, s->buffered - off);
    s->buffered -= off;
}

void cport_xxh3_update(cport_xxh3_state *s, const void *data, size_t length) {
    const uint8_t *p = data;
    if (p == NULL) return;
    s->total += length;
    while (length > 0) {
        size_t room = sizeof s->buffer - s->buffered;
        size_t take = length < room ? length : room;
        memcpy(s->buffer + s->buffered, p, take);
        s->buffered += take;
        p += take;
        length -= take;
        if (s->total > 240) xxh3_take_stripes(s);
    }
}

uint64_t cport_xxh3_digest(const cport_xxh3_state *state) {
    if (state->total <= 240) return cport_xxh3_64(state->buffer, state->total);
    cport_xxh3_state s = *state;
    xxh3_take_stripes(&s);
    uint8_t tail[STRIPE];
    size_t fromLast = STRIPE - s.buffered;
    memcpy(tail, s.last + s.buffered, fromLast);
    memcpy(tail + fromLast, s.buffer, s.buffered);
    accumulate(s.acc, tail, kSecret + sizeof kSecret - 71);
    uint64_t result = s.total * P64_1;
    for (int i = 0; i < 4; i++) {
        result += fold_mul(s.acc[2 * i] ^ le64(kSecret + 11 + 16 * i), s.acc[2 * i + 1] ^ le64(kSecret + 11 + 16 * i + 8));
    }
    return mix_xxh3(result);
}

static inline uint64_t xxh64_round(uint64_t acc, uint64_t lane) {
    acc += lane * P64_2;
    return rotl64(acc, 31) * P64_1;
}

uint64_t cport_xxh64(const void *data, size_t length, uint64_t seed) {
    static const uint8_t none[1] = { 0 };
    const uint8_t *p = data ? (const uint8_t *)data : none;
    if (data == NULL) length = 0;
    size_t at = 0;
    uint64_t acc;
    if (length >= 32) {
        uint64_t v1 = seed + P64_1 + P64_2, v2 = seed + P64_2, v3 = seed, v4 = seed - P64_1;
        for (; length - at >= 32; at += 32) {
            v1 = xxh64_round(v1, le64(p + at));
            v2 = xxh64_round(v2, le64(p + at + 8));
            v3 = xxh64_round(v3, le64(p + at + 16));
            v4 = xxh64_round(v4, le64(p + at + 24));
        }
        acc = rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18);
        uint64_t v[4] = { v1, v2, v3, v4 };
        for (int i = 0; i < 4; i++) {
            acc ^= xxh64_round(0, v[i]);
            acc = acc * P64_1 + P64_4;
        }
    } else {
        acc = seed + P64_5;
    }
    acc += (uint64_t)length;
    for (; length - at >= 8; at += 8) {
        acc ^= xxh64_round(0, le64(p + at));
        acc = rotl64(acc, 27) * P64_1 + P64_4;
    }
    if (length - at >= 4) {
        acc ^= (uint64_t)le32(p + at) * P64_1;
        acc = rotl64(acc, 23) * P64_2 + P64_3;
        at += 4;
    }
    for (; at < length; at++) {
        acc ^= (uint64_t)p[at] * P64_5;
        acc = rotl64(acc, 11) * P64_1;
    }
    return mix_xxh64(acc);
}
