// libFuzzer target: the portable LZ4 block decoder (Sources/CPortable/lz4_block.c) against
// liblz4's LZ4_decompress_safe_usingDict and a byte-at-a-time reference decoder written here.
// Built by tools/fuzz.sh (codec-lz4) with -fsanitize=fuzzer,address,undefined and linked with
// liblz4. Any difference, or a byte written past the capacity (a canary follows it), aborts.
//
// Input: byte 0 = flags, bytes 1-2 = the dictionary's length (little-endian, + 4096 with flag
// 0x01, so dictionaries past 64 KiB occur), then the dictionary, then the rest, which is
//   (a) decoded as a block: at a capacity large enough for any block of its size, then at the
//       exact size it decoded to, one byte short, and a little more;
//   (b) compressed with LZ4_compress_HC_continue after LZ4_loadDictHC (level: the flags' high
//       nibble; LZ4_compress_fast_continue after LZ4_loadDict with flag 0x04), decoded at its
//       exact size (both decoders must return it) and one byte short (both must fail), and
//       decoded again with one byte of the block changed.
// Flag 0x02 places the dictionary right before the output in one buffer (liblz4 then decodes
// it as a prefix, another code path) rather than in a buffer of its own.
//
// On arbitrary bytes the portable decoder must equal the reference (result and bytes); when
// liblz4 succeeds, it must succeed with the same bytes, except where the block has an offset of
// 0, which liblz4 1.9.4 accepts (writing zeros) and the portable decoder rejects as the format
// says: the reference, told to write zeros there, must then produce liblz4's bytes. The
// portable decoder may decode blocks liblz4 refuses (liblz4 also enforces the format's
// end-of-block rules, relative to the capacity).
#include "cportable.h"

#include <lz4.h>
#include <lz4hc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CANARY 64
#define CANARY_BYTE 0xA5
#define BIG_CAPACITY (1u << 20)

static void fail(const char *what, size_t srcSize, size_t capacity, size_t dictSize, long a, long b) {
    fprintf(stderr, "codec-lz4: %s (block %zu bytes, capacity %zu, dictionary %zu bytes): %ld vs %ld\n",
            what, srcSize, capacity, dictSize, a, b);
    abort();
}

/// The contract, one byte at a time. `zeros`: an offset of 0 writes zeros (liblz4) instead of
/// failing; `*sawZero` is set when one is met.
static long reference(const uint8_t *s, size_t n, uint8_t *d, size_t cap, const uint8_t *dict, size_t dictSize, int zeros, int *sawZero) {
    size_t i = 0, o = 0;
    if (n == 0) return -1;
    for (;;) {
        if (i == n) return -1;
        unsigned token = s[i++], b;
        size_t lit = token >> 4, ml = token & 15, off;
        if (lit == 15) do { if (i == n) return -1; b = s[i++]; lit += b; } while (b == 255);
        if (lit > n - i || lit > cap - o) return -1;
        memcpy(d + o, s + i, lit);
        i += lit; o += lit;
        if (i == n) return (long)o;
        if (n - i < 2) return -1;
        off = s[i] | ((size_t)s[i + 1] << 8);
        i += 2;
        if (ml == 15) do { if (i == n) return -1; b = s[i++]; ml += b; } while (b == 255);
        ml += 4;
        if (ml > cap - o) return -1;
        if (off == 0) {
            *sawZero = 1;
            if (!zeros) return -1;
            memset(d + o, 0, ml);
            o += ml;
            continue;
        }
        if (off > o + dictSize) return -1;
        for (size_t k = 0; k < ml; k++, o++) d[o] = off <= o ? d[o - off] : dict[dictSize - (off - o)];
    }
}

/// One decoder's run into a fresh buffer of `capacity` bytes and a canary (after the
/// dictionary when `contiguous`); the output is copied to `out`.
static long decode(int portable, const uint8_t *blk, size_t n, size_t capacity, const uint8_t *dict, size_t dictSize, int contiguous, uint8_t *out) {
    uint8_t *buffer = (uint8_t *)malloc(dictSize + capacity + CANARY);
    uint8_t *dst = contiguous ? buffer + dictSize : buffer;
    const uint8_t *d = contiguous ? buffer : dict;
    if (contiguous) memcpy(buffer, dict, dictSize);
    memset(dst, CANARY_BYTE, capacity + CANARY);
    long rc;
    if (portable) {
        rc = cport_lz4_decode_dict(blk, n, capacity ? dst : NULL, capacity, dictSize ? d : NULL, dictSize);
        for (size_t k = 0; k < CANARY; k++)
            if (dst[capacity + k] != CANARY_BYTE) fail("portable decoder wrote past the capacity", n, capacity, dictSize, (long)k, 0);
        if (contiguous && memcmp(buffer, dict, dictSize) != 0) fail("portable decoder changed the dictionary", n, capacity, dictSize, 0, 0);
        if (rc > (long)capacity) fail("portable decoder returned more than the capacity", n, capacity, dictSize, rc, (long)capacity);
    } else {
        rc = LZ4_decompress_safe_usingDict((const char *)blk, (char *)dst, (int)n, (int)capacity, (const char *)d, (int)dictSize);
    }
    if (rc > 0) memcpy(out, dst, (size_t)rc);
    free(buffer);
    return rc;
}

static uint8_t outPortable[BIG_CAPACITY + 256], outLZ4[BIG_CAPACITY + 256], outReference[BIG_CAPACITY + 256];

/// Both decoders and the reference on one block at one capacity; returns the portable result.
static long compare(const uint8_t *blk, size_t n, size_t capacity, const uint8_t *dict, size_t dictSize, int contiguous, long *lz4Result) {
    long a = decode(1, blk, n, capacity, dict, dictSize, contiguous, outPortable);
    int sawZero = 0;
    long r = reference(blk, n, outReference, capacity, dict, dictSize, 0, &sawZero);
    if (a != r) fail("portable decoder and reference: results differ", n, capacity, dictSize, a, r);
    if (a > 0 && memcmp(outPortable, outReference, (size_t)a) != 0) fail("portable decoder and reference: bytes differ", n, capacity, dictSize, a, r);
    long l = decode(0, blk, n, capacity, dict, dictSize, contiguous, outLZ4);
    if (lz4Result) *lz4Result = l;
    if (l >= 0) {
        if (a >= 0) {
            if (a != l || memcmp(outPortable, outLZ4, (size_t)a) != 0) fail("liblz4 decoded the block, the portable decoder differs", n, capacity, dictSize, a, l);
        } else {
            long z = sawZero ? reference(blk, n, outReference, capacity, dict, dictSize, 1, &sawZero) : -1;
            if (z != l || memcmp(outReference, outLZ4, (size_t)l) != 0) fail("liblz4 decoded the block, the portable decoder failed", n, capacity, dictSize, a, l);
        }
    }
    return a;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static LZ4_streamHC_t *hc;
    static LZ4_stream_t *fast;
    if (!hc) { hc = LZ4_createStreamHC(); fast = LZ4_createStream(); }
    if (size < 3) {
        uint8_t *blk = (uint8_t *)malloc(size + 1);
        memcpy(blk, data, size);
        compare(blk, size, 64, NULL, 0, 0, NULL);
        free(blk);
        return 0;
    }
    const unsigned flags = data[0];
    size_t dictSize = (size_t)data[1] | ((size_t)data[2] << 8);
    if (flags & 1) dictSize += 4096;
    if (dictSize > size - 3) dictSize = size - 3;
    const int contiguous = (flags & 2) != 0;
    // Exact-size copies: ASan sees any read past the dictionary or the block.
    uint8_t *dict = (uint8_t *)malloc(dictSize + 1);
    memcpy(dict, data + 3, dictSize);
    const size_t n = size - 3 - dictSize;
    uint8_t *rest = (uint8_t *)malloc(n + 1);
    memcpy(rest, data + 3 + dictSize, n);

    // (a) The rest as a block.
    size_t big = 256 * n + 64;           // more than any block of n bytes decodes to
    if (big > BIG_CAPACITY) big = BIG_CAPACITY;
    long a = compare(rest, n, big, dict, dictSize, contiguous, NULL);
    if (a >= 0) {
        size_t exact = (size_t)a;
        if (compare(rest, n, exact, dict, dictSize, contiguous, NULL) != a) fail("block: not decoded at its exact size", n, exact, dictSize, a, 0);
        if (exact > 0 && compare(rest, n, exact - 1, dict, dictSize, contiguous, NULL) >= 0) fail("block: decoded one byte short", n, exact - 1, dictSize, a, 0);
        compare(rest, n, exact + 1 + (flags >> 4), dict, dictSize, contiguous, NULL);
    }

    // (b) The rest compressed with the dictionary.
    if (n <= 65536) {
        const int bound = LZ4_compressBound((int)n);
        uint8_t *scratch = (uint8_t *)malloc((size_t)bound + 1);
        int cn;
        if (flags & 4) {
            LZ4_initStream(fast, sizeof *fast);
            LZ4_loadDict(fast, (const char *)dict, (int)dictSize);
            cn = LZ4_compress_fast_continue(fast, (const char *)rest, (char *)scratch, (int)n, bound, 1 + (int)(flags >> 4));
        } else {
            LZ4_resetStreamHC_fast(hc, (int)(flags >> 4));
            LZ4_loadDictHC(hc, (const char *)dict, (int)dictSize);
            cn = LZ4_compress_HC_continue(hc, (const char *)rest, (char *)scratch, (int)n, bound);
        }
        if (cn <= 0) fail("liblz4 could not compress", n, (size_t)bound, dictSize, cn, 0);
        uint8_t *blk = (uint8_t *)malloc((size_t)cn);
        memcpy(blk, scratch, (size_t)cn);
        free(scratch);
        long l;
        a = compare(blk, (size_t)cn, n, dict, dictSize, contiguous, &l);
        if (a != (long)n || memcmp(outPortable, rest, n) != 0) fail("compressed: the portable decoder did not restore the data", (size_t)cn, n, dictSize, a, (long)n);
        if (l != (long)n) fail("compressed: liblz4 did not restore the data", (size_t)cn, n, dictSize, l, (long)n);
        if (n > 0) {
            a = compare(blk, (size_t)cn, n - 1, dict, dictSize, contiguous, &l);
            if (a >= 0 || l >= 0) fail("compressed: decoded one byte short", (size_t)cn, n - 1, dictSize, a, l);
        }
        // One byte changed, where and how the input says.
        size_t at = 0;
        for (size_t k = 0; k < size && k < 16; k++) at = at * 31 + data[size - 1 - k];
        blk[at % (size_t)cn] ^= (uint8_t)(flags | 1);
        compare(blk, (size_t)cn, n + (flags & 0x80 ? 0 : 100), dict, dictSize, contiguous, NULL);
        free(blk);
    }
    free(rest);
    free(dict);
    return 0;
}
