// libFuzzer target: the portable LZ4 block codec (Sources/CPortable) against liblz4 1.9.4.
//
// Built by tools/fuzz.sh (codec-lz4) with -fsanitize=fuzzer,address,undefined. Each input
// is used three ways, every buffer allocated at its exact size so that AddressSanitizer sees
// any read or write outside it:
//   1. as an LZ4 block, decoded by both decoders with a capacity and a dictionary (size
//      0…65536, from a fixed label-like text, never adjacent to the output) taken from its
//      first bytes: both must accept with the same bytes, or both refuse. The portable decoder
//      may refuse what liblz4 accepts only for the documented reasons (offset 0, end-of-block
//      rules: docs/PORTABILITY.md); those are counted and printed at exit.
//   2. as plain data, compressed by liblz4 (fast or HC) against the dictionary: the portable
//      decoder must restore it exactly.
//   3. as plain data, compressed by the portable encoder: liblz4 and the portable decoder must
//      both restore it exactly.
// Any other outcome aborts (a crash artifact to turn into a regression test).
#include "cportable.h"

#include <lz4.h>
#include <lz4hc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t history[65536];
static unsigned long long documented_offset_zero, documented_end_rule, compared;

static void report(void) {
    fprintf(stderr, "codec-lz4: %llu blocks compared; documented differences: offset 0: %llu, end-of-block rules: %llu\n",
            compared, documented_offset_zero, documented_end_rule);
}

static void setup(void) {
    static const char *words[] = { "Pizza ", "Taxi ", "Bank ", "Dr. ", "Ltd ", "Call Center ", "Spam ", "Insurance ", "+7 913 " };
    uint64_t x = 0x9E3779B97F4A7C15ull;
    size_t at = 0;
    while (at < sizeof history) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        const char *w = words[x % 9];
        size_t n = strlen(w);
        for (size_t i = 0; i < n && at < sizeof history; i++) history[at++] = (uint8_t)w[i];
        if (x % 5 == 0 && at < sizeof history) history[at++] = (uint8_t)('0' + (x >> 8) % 10);
    }
    atexit(report);
}

static void fail(const char *what, size_t size, size_t capacity, size_t dictSize, long mine, long theirs) {
    fprintf(stderr, "codec-lz4: %s (size %zu, capacity %zu, dictionary %zu: portable %ld, liblz4 %ld)\n",
            what, size, capacity, dictSize, mine, theirs);
    abort();
}

static uint8_t *copy_exact(const uint8_t *p, size_t n) {
    uint8_t *c = (uint8_t *)malloc(n ? n : 1);
    if (n) memcpy(c, p, n);
    return c;
}

// Decodes `block` with both decoders; aborts unless they agree (or differ as documented).
static void compare(const uint8_t *blockIn, size_t size, size_t capacity, const uint8_t *dict, size_t dictSize) {
    uint8_t *block = copy_exact(blockIn, size);
    uint8_t *a = (uint8_t *)malloc(capacity ? capacity : 1), *b = (uint8_t *)malloc(capacity ? capacity : 1);
    ptrdiff_t mine = cport_lz4_decode(block, size, a, capacity, dictSize ? dict : NULL, dictSize);
    int theirs = dictSize ? LZ4_decompress_safe_usingDict((const char *)block, (char *)b, (int)size, (int)capacity, (const char *)dict, (int)dictSize)
                          : LZ4_decompress_safe((const char *)block, (char *)b, (int)size, (int)capacity);
    compared++;
    if (mine >= 0 && theirs >= 0) {
        if (mine != theirs || memcmp(a, b, (size_t)mine) != 0) fail("different output", size, capacity, dictSize, (long)mine, theirs);
    } else if (mine >= 0) {
        fail("portable accepts a block liblz4 refuses", size, capacity, dictSize, (long)mine, theirs);
    } else if (theirs >= 0) {
        if (mine == CPORT_LZ4_OFFSET_ZERO) documented_offset_zero++;
        else if (mine == CPORT_LZ4_END_RULE) documented_end_rule++;
        else fail("portable refuses a block liblz4 accepts", size, capacity, dictSize, (long)mine, theirs);
    }
    free(block); free(a); free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready;
    if (!ready) { setup(); ready = 1; }
    if (size < 4) return 0;
    unsigned flags = data[0];
    size_t dictSize = flags & 1 ? 0 : ((size_t)data[1] << 8 | data[2]) + (flags & 2 ? 1 : 0);
    if (dictSize > sizeof history) dictSize = sizeof history;
    uint8_t *dict = copy_exact(history + sizeof history - dictSize, dictSize);
    const uint8_t *body = data + 4;
    size_t n = size - 4;

    // 1. The body as a block, with capacities around what it might produce.
    size_t capacities[3] = { (size_t)data[3] * 16 + (flags >> 4), n * 4 + 64, n > 0 ? n - 1 : 0 };
    for (int i = 0; i < 3; i++) compare(body, n, capacities[i], dict, dictSize);

    if (n > 0) {
        // 2. liblz4's blocks decoded by the portable decoder.
        int bound = LZ4_compressBound((int)n);
        uint8_t *packed = (uint8_t *)malloc((size_t)bound), *out = (uint8_t *)malloc(n);
        int packedSize;
        if (flags & 4) {
            LZ4_streamHC_t *hc = LZ4_createStreamHC();
            LZ4_resetStreamHC_fast(hc, 1 + (flags >> 4) % 12);
            if (dictSize) LZ4_loadDictHC(hc, (const char *)dict, (int)dictSize);
            packedSize = LZ4_compress_HC_continue(hc, (const char *)body, (char *)packed, (int)n, bound);
            LZ4_freeStreamHC(hc);
        } else {
            LZ4_stream_t *s = LZ4_createStream();
            if (dictSize) LZ4_loadDict(s, (const char *)dict, (int)dictSize);
            packedSize = LZ4_compress_fast_continue(s, (const char *)body, (char *)packed, (int)n, bound, 1 + (flags >> 4));
            LZ4_freeStream(s);
        }
        if (packedSize <= 0) fail("liblz4 cannot compress", n, n, dictSize, 0, packedSize);
        uint8_t *exact = copy_exact(packed, (size_t)packedSize);
        ptrdiff_t r = cport_lz4_decode(exact, (size_t)packedSize, out, n, dictSize ? dict : NULL, dictSize);
        if (r != (ptrdiff_t)n || memcmp(out, body, n) != 0) fail("liblz4 block not restored", n, n, dictSize, (long)r, packedSize);
        free(exact);

        // 3. The portable encoder's blocks decoded by both.
        cport_lz4_encoder *e = cport_lz4_encoder_create(dict, dictSize);
        size_t cap = cport_lz4_bound(n);
        uint8_t *mine = (uint8_t *)malloc(cap);
        size_t m = cport_lz4_encode(e, body, n, mine, cap);
        cport_lz4_encoder_free(e);
        if (m == 0) fail("portable encoder failed", n, cap, dictSize, 0, 0);
        uint8_t *mineExact = copy_exact(mine, m);
        int t = dictSize ? LZ4_decompress_safe_usingDict((const char *)mineExact, (char *)out, (int)m, (int)n, (const char *)dict, (int)dictSize)
                         : LZ4_decompress_safe((const char *)mineExact, (char *)out, (int)m, (int)n);
        if (t != (int)n || memcmp(out, body, n) != 0) fail("portable block not restored by liblz4", n, n, dictSize, (long)m, t);
        r = cport_lz4_decode(mineExact, m, out, n, dictSize ? dict : NULL, dictSize);
        if (r != (ptrdiff_t)n || memcmp(out, body, n) != 0) fail("portable block not restored", n, n, dictSize, (long)r, t);
        // Its corruptions must get the same verdict too.
        if (m > 1) {
            mineExact[data[3] % m] ^= (uint8_t)(1u << (flags % 8));
            compare(mineExact, m, n, dict, dictSize);
            compare(mineExact, m - 1, n, dict, dictSize);
        }
        free(mineExact); free(mine); free(packed); free(out);
    }
    free(dict);
    return 0;
}
