// LZ4 block decoding with an external dictionary, written from doc/lz4_Block_format.md (LZ4
// project): the package's own decoder, so that no build (iOS in particular) needs liblz4.
// Same contract as liblz4's LZ4_decompress_safe_usingDict, and safe on untrusted input: every
// length is checked against what is left of the input and of the output before it is used, so
// no input makes it read outside the block or the dictionary or write outside dstCapacity.
//
// A block is a run of sequences: a token (high nibble: literal count, low nibble: match length
// - 4; 15 in either means "more length bytes follow, each added, until one is not 255"), the
// literals, a 2-byte little-endian offset (1...65535, back from the current output position,
// possibly into the dictionary that logically precedes the output), and the match. The last
// sequence is literals only: the block ends exactly where its literals end.
//
// Stricter and looser than liblz4 in two places (both allowed by the format):
// - offset 0 is rejected (liblz4 1.9.4 accepts it and writes zeros);
// - the end-of-block rules of the spec (the last 5 bytes are literals, the last match starts
//   at least 12 bytes before the end) are not enforced. liblz4 enforces them against the
//   capacity, not the decoded size, so it may refuse a block at its exact size that it decodes
//   with more room; here every block liblz4 decodes is decoded to the same bytes, and those
//   too.
//
// Speed: most sequences (fewer than 15 literals, a match of at most 18 bytes 8 or more bytes
// back in the output or wholly in the dictionary) take a fast path while at least 17 bytes of
// input and 40 of output are left: one 16-byte copy for the literals and one of 24 bytes for
// the match, whatever their lengths, with no other check. The bytes written past a run are
// overwritten later or lie beyond the result, always within dstCapacity. Longer runs go in
// 16-byte (8-byte for offsets 8...15) steps, offsets 1...7 repeat their pattern 8 bytes at a
// time, and near the end of the output every copy is exact.
#include "cportable.h"

#include <string.h>

// The result is an int: a larger capacity is used as this much, so the count always fits.
#define LZ4_MAX_OUTPUT ((size_t)((unsigned)-1 >> 1))

/// Adds the length bytes that follow a nibble of 15 to `*length`: each byte is added, and a
/// byte of 255 means another follows. Fails (returns 0) when the input ends first or when the
/// length passes `limit` (what can fit), which also keeps the sum from overflowing.
static inline int read_length(const uint8_t **ip, const uint8_t *iend, size_t *length, size_t limit) {
    const uint8_t *p = *ip;
    size_t n = *length;
    unsigned byte;
    do {
        if (p == iend) return 0;
        byte = *p++;
        n += byte;
        if (n > limit) return 0;
    } while (byte == 255);
    *ip = p;
    *length = n;
    return 1;
}

// For offsets 1...7: the smallest multiple of the offset that is >= 8. Once 8 bytes of such a
// match are out, the output repeats with this period too, and 8-byte copies from that far back
// do not overlap what they write.
static const uint8_t kPeriod[8] = {0, 8, 8, 9, 8, 10, 12, 14};

/// Copies `length` bytes from `match` to `op`, `offset` = op - match (>= 1) bytes behind, as a
/// byte-by-byte copy would: a match longer than its offset repeats the last `offset` bytes.
/// `room` >= length is how much of the output is left at `op`. Every byte read is before the
/// byte being written (already written, or in the dictionary).
static inline uint8_t *copy_match(uint8_t *op, const uint8_t *match, size_t length, size_t offset, size_t room) {
    uint8_t *const end = op + length;
    if (room - length >= 16) {
        // Room for whole steps: up to 15 bytes past `end` are written (within the capacity;
        // overwritten later or beyond the result).
        if (offset >= 16) {
            do { memcpy(op, match, 16); op += 16; match += 16; } while (op < end);
        } else if (offset >= 8) {
            do { memcpy(op, match, 8); op += 8; match += 8; } while (op < end);
        } else {
            for (int i = 0; i < 8; i++) op[i] = match[i];
            if (length > 8) {
                const uint8_t *from = op + 8 - kPeriod[offset];
                op += 8;
                do { memcpy(op, from, 8); op += 8; from += 8; } while (op < end);
            }
        }
        return end;
    }
    // Near the end of the output: exact copies.
    if (offset >= 8) {
        const size_t step = offset >= 16 ? 16 : 8;
        while (length >= step) {
            memcpy(op, match, step);
            op += step; match += step; length -= step;
        }
        memcpy(op, match, length);       // length < step <= offset: no overlap
        return end;
    }
    size_t head = length < 8 ? length : 8;
    for (size_t i = 0; i < head; i++) op[i] = match[i];
    op += head;
    length -= head;
    if (length == 0) return end;
    const uint8_t *from = op - kPeriod[offset];
    while (length >= 8) {
        memcpy(op, from, 8);
        op += 8; from += 8; length -= 8;
    }
    memcpy(op, from, length);
    return end;
}

/// Writes the match of `length` bytes `offset` back at `op`: in the output (`base` is its
/// start) or starting in the dictionary (ending at `dictEnd`) and running on into the output.
/// Returns the new output position, or NULL when the match does not fit before `oend`, its
/// offset is 0, or it starts before the dictionary.
static inline uint8_t *put_match(uint8_t *op, uint8_t *base, uint8_t *oend, size_t offset, size_t length,
                                 const uint8_t *dictEnd, size_t dictSize) {
    const size_t room = (size_t)(oend - op);
    if (length > room) return NULL;
    const size_t produced = (size_t)(op - base);
    if (offset - 1 < produced) {         // 1...produced (offset 0 wraps around): in the output
        return copy_match(op, op - offset, length, offset, room);
    }
    if (offset == 0) return NULL;
    const size_t back = offset - produced;   // starts this far before the dictionary's end
    if (back > dictSize) return NULL;
    const uint8_t *const match = dictEnd - back;
    if (length <= back) {
        memcpy(op, match, length);
        return op + length;
    }
    // The dictionary's tail, then on from the start of the output (at the same offset).
    memcpy(op, match, back);
    return copy_match(op + back, base, length - back, offset, room - back);
}

int cport_lz4_decode_dict(const void *src, size_t srcSize, void *dst, size_t dstCapacity, const void *dict, size_t dictSize) {
    static const uint8_t kNothing[1] = {0};
    uint8_t sink[1];
    if (src == NULL || srcSize == 0) return -1;
    if (dstCapacity > LZ4_MAX_OUTPUT) dstCapacity = LZ4_MAX_OUTPUT;
    if (dst == NULL) {
        if (dstCapacity != 0) return -1;
        dst = sink;                      // never written: the capacity is 0
    }
    if (dict == NULL) {
        dict = kNothing;
        dictSize = 0;
    }
    const uint8_t *dictBase = (const uint8_t *)dict;
    if (dictSize > 65536) {              // offsets reach back 65535 bytes at most
        dictBase += dictSize - 65536;
        dictSize = 65536;
    }
    const uint8_t *const dictEnd = dictBase + dictSize;

    const uint8_t *ip = (const uint8_t *)src;
    const uint8_t *const iend = ip + srcSize;
    uint8_t *const base = (uint8_t *)dst;
    uint8_t *op = base;
    uint8_t *const oend = base + dstCapacity;

    // Dictionary matches the fast path takes: 24 to dictSize bytes back (`back - 24 < fastDict`).
    const size_t fastDict = dictSize >= 24 ? dictSize - 23 : 0;

    for (;;) {
        unsigned token;
        size_t length, offset;

        // The fast path: a sequence with fewer than 15 literals and a match of at most 18 bytes
        // that is 8 or more bytes back in the output, or wholly in the dictionary 24 or more
        // bytes back, with room to spare. 17 bytes of input: token, literals (a 16-byte copy)
        // and the offset; 40 of output: 16 for the literals, then 24 for the match copy.
        if ((size_t)(iend - ip) > 16 && (size_t)(oend - op) >= 40) {
            token = *ip;
            if (((token >> 4) != 15) & ((token & 15) != 15)) {
                length = token >> 4;
                memcpy(op, ip + 1, 16);
                ip += 1 + length;
                op += length;
                offset = (size_t)ip[0] | ((size_t)ip[1] << 8);
                ip += 2;
                length = (token & 15) + 4;
                const size_t produced = (size_t)(op - base);
                if ((offset - 1 < produced) & (offset >= 8)) {
                    const uint8_t *const match = op - offset;
                    memcpy(op, match, 8);            // 8-byte steps: each may read what
                    memcpy(op + 8, match + 8, 8);    // the one before wrote
                    memcpy(op + 16, match + 16, 8);
                    op += length;
                    continue;
                }
                if (offset > produced && offset - produced - 24 < fastDict) {
                    memcpy(op, dictEnd - (offset - produced), 24);
                    op += length;
                    continue;
                }
                op = put_match(op, base, oend, offset, length, dictEnd, dictSize);
                if (op == NULL) return -1;
                continue;
            }
        }

        // Literals, any length, checked one by one.
        if (ip == iend) return -1;       // a block ends with literals, never with a match
        token = *ip++;
        length = token >> 4;
        if (length == 15 && !read_length(&ip, iend, &length, (size_t)(iend - ip))) return -1;
        if (length > (size_t)(iend - ip) || length > (size_t)(oend - op)) return -1;
        memcpy(op, ip, length);
        ip += length;
        op += length;
        if (ip == iend) return (int)(op - base);   // the last sequence: literals only

        // The match: offset, then length.
        if ((size_t)(iend - ip) < 2) return -1;
        offset = (size_t)ip[0] | ((size_t)ip[1] << 8);
        ip += 2;
        length = token & 15;
        if (length == 15 && !read_length(&ip, iend, &length, (size_t)(oend - op))) return -1;
        length += 4;

        op = put_match(op, base, oend, offset, length, dictEnd, dictSize);
        if (op == NULL) return -1;
    }
}
