// LZ4 block decoding and encoding, written from doc/lz4_Block_format.md (lz4 project).
//
// A block is a run of sequences: a token (high nibble: literal count, low nibble: match
// length - 4; 15 in either means "more length bytes follow, each added, until one is not
// 255"), the literals, then a 2-byte little-endian offset back into the history (the
// dictionary, then what has been decoded so far). The last sequence stops after its literals.
//
// The decoder works on indexes (`in`/`out` positions compared with the sizes), never on
// pointers past the buffers, so that every bound check is plain integer arithmetic.
// Where liblz4 1.9.4 (LZ4_decompress_safe_usingDict) refuses a block, so does this decoder:
// the position rules below are those of the format's "end of block conditions" as liblz4
// applies them (literals that end within 12 bytes of the output's end or 8 bytes of the
// input's end must be the last sequence and end exactly at the end of the input; a match
// must end at least 5 bytes before the output's end; a match length's extra bytes must end
// at least 4 bytes before the input's end).
#include "cportable.h"

#include <stdlib.h>
#include <string.h>

enum {
    MIN_MATCH = 4,
    LAST_LITERALS = 5,      // the last 5 output bytes are literals
    MATCH_START_LIMIT = 12, // the last match starts at least 12 bytes before the end
    INPUT_TAIL = 8,         // offset (2) + token (1) + last literals (5)
    MAX_OFFSET = 65535,
};

static inline uint16_t read_le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

// Adds the extra length bytes at `in[*at]` to `*length`. The bytes must end at or before
// `limit` (an input position). False when they do not or when the length overflows.
static inline int add_length_bytes(const uint8_t *in, size_t *at, size_t limit, size_t *length) {
    for (;;) {
        if (*at >= limit) return 0;
        uint8_t byte = in[(*at)++];
        if (*length > SIZE_MAX - 255) return 0;
        *length += byte;
        if (byte != 255) return 1;
    }
}

// Copies `count` bytes that start `distance` bytes back in `out` (distance ≥ 1), forwards,
// so that a distance shorter than the count repeats the pattern as the format requires.
// `room` is how many bytes may be written at `out` (≥ count); chunks may overshoot into it.
static inline void copy_back(uint8_t *out, size_t distance, size_t count, size_t room) {
    const uint8_t *from = out - distance;
    if (distance >= 16 && room >= count + 16) {
        for (size_t done = 0; done < count; done += 16) memcpy(out + done, from + done, 16);
    } else if (distance >= count) {
        memcpy(out, from, count);
    } else if (distance >= 8 && room >= count + 8) {
        for (size_t done = 0; done < count; done += 8) memcpy(out + done, from + done, 8);
    } else {
        for (size_t i = 0; i < count; i++) out[i] = from[i];
    }
}

ptrdiff_t cport_lz4_decode(const void *source, size_t sourceSize, void *destination, size_t capacity,
                         const void *dictionary, size_t dictionarySize) {
    const uint8_t *in = (const uint8_t *)source;
    uint8_t *out = (uint8_t *)destination;
    const uint8_t *dict = (const uint8_t *)dictionary;
    if (in == NULL || (out == NULL && capacity > 0) || (dict == NULL && dictionarySize > 0)) return CPORT_LZ4_MALFORMED;
    if (capacity > (size_t)PTRDIFF_MAX) return CPORT_LZ4_MALFORMED;
    if (capacity == 0) return (sourceSize == 1 && in[0] == 0) ? 0 : CPORT_LZ4_MALFORMED;
    if (sourceSize == 0) return CPORT_LZ4_MALFORMED;

    size_t at = 0, made = 0;
    for (;;) {
        if (at >= sourceSize) return CPORT_LZ4_MALFORMED;
        unsigned token = in[at++];

        // Literals.
        size_t literals = token >> 4;
        if (literals == 15 && !add_length_bytes(in, &at, sourceSize, &literals)) return CPORT_LZ4_MALFORMED;
        size_t inputLeft = sourceSize - at, outputLeft = capacity - made;
        int nearOutputEnd = literals > outputLeft || outputLeft - literals < MATCH_START_LIMIT;
        int nearInputEnd = literals > inputLeft || inputLeft - literals < INPUT_TAIL;
        if (nearOutputEnd || nearInputEnd) {
            // Only the last sequence may come this close: it must use up the input exactly.
            if (literals == inputLeft && literals <= outputLeft) {
                memcpy(out + made, in + at, literals);
                return (ptrdiff_t)(made + literals);
            }
            // Literals and offset present, output far from its end: only the input tail rule
            // (which liblz4's short-sequence path does not apply) is broken.
            int tailOnly = !nearOutputEnd && (token >> 4) < 15 && inputLeft >= literals + 2;
            return tailOnly ? CPORT_LZ4_END_RULE : CPORT_LZ4_MALFORMED;
        }
        // Here at + literals + 8 <= sourceSize and made + literals + 12 <= capacity.
        if (literals <= 16 && inputLeft >= 16 && outputLeft >= 16) {
            memcpy(out + made, in + at, 16);
        } else {
            memcpy(out + made, in + at, literals);
        }
        at += literals;
        made += literals;

        // Match.
        size_t offset = read_le16(in + at);
        at += 2;
        size_t length = token & 15;
        if (length == 15) {
            if (sourceSize < LAST_LITERALS - 1 + at) return CPORT_LZ4_MALFORMED;
            if (!add_length_bytes(in, &at, sourceSize - (LAST_LITERALS - 1), &length)) return CPORT_LZ4_MALFORMED;
        }
        length += MIN_MATCH;
        if (offset == 0) return CPORT_LZ4_OFFSET_ZERO;
        if (offset > made && offset - made > dictionarySize) return CPORT_LZ4_MALFORMED;
        outputLeft = capacity - made;
        if (length > outputLeft || outputLeft - length < LAST_LITERALS) return CPORT_LZ4_END_RULE;

        if (offset > made) {
            // Starts in the dictionary, may run on into the output.
            size_t back = offset - made;
            const uint8_t *from = dict + dictionarySize - back;
            size_t room = capacity - made;
            if (length <= back) {
                size_t span = (length + 15) & ~(size_t)15;   // whole 16-byte chunks, when both sides have them
                if (span <= back && span <= room) {
                    for (size_t done = 0; done < length; done += 16) memcpy(out + made + done, from + done, 16);
                } else {
                    memcpy(out + made, from, length);
                }
                made += length;
                continue;
            }
            memcpy(out + made, from, back);
            made += back;
            // The rest continues from the block's first byte: `made` bytes back.
            copy_back(out + made, made, length - back, capacity - made);
            made += length - back;
            continue;
        }
        copy_back(out + made, offset, length, capacity - made);
        made += length;
    }
}

// ---- Encoder -------------------------------------------------------------------------

enum { HASH_BITS = 14, HASH_SIZE = 1 << HASH_BITS, WINDOW = 65535, DICT_KEEP = 65536 };

struct cport_lz4_encoder {
    uint8_t *dictionary;                 // the last ≤ 64 KiB of the dictionary
    size_t dictionarySize;
    uint32_t dictionaryTable[HASH_SIZE]; // position + 1 in the dictionary (0: empty)
};

static inline uint32_t read_le32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint32_t hash4(uint32_t v) { return (v * 2654435761u) >> (32 - HASH_BITS); }

cport_lz4_encoder *cport_lz4_encoder_create(const void *dictionary, size_t dictionarySize) {
    cport_lz4_encoder *e = (cport_lz4_encoder *)calloc(1, sizeof *e);
    if (e == NULL) return NULL;
    const uint8_t *d = (const uint8_t *)dictionary;
    if (dictionarySize > DICT_KEEP) {
        d += dictionarySize - DICT_KEEP;
        dictionarySize = DICT_KEEP;
    }
    e->dictionarySize = dictionarySize;
    if (dictionarySize > 0) {
        e->dictionary = (uint8_t *)malloc(dictionarySize);
        if (e->dictionary == NULL) { free(e); return NULL; }
        memcpy(e->dictionary, d, dictionarySize);
        for (size_t i = 0; i + 4 <= dictionarySize; i++) {
            e->dictionaryTable[hash4(read_le32(e->dictionary + i))] = (uint32_t)(i + 1);
        }
    }
    return e;
}

void cport_lz4_encoder_free(cport_lz4_encoder *e) {
    if (e == NULL) return;
    free(e->dictionary);
    free(e);
}

size_t cport_lz4_bound(size_t size) {
    if (size > (SIZE_MAX - 16) / 2) return 0;
    return size + size / 255 + 16;
}

// Appends a length's extra bytes (after the token's 15). False when out of room.
static inline int put_length(uint8_t *dst, size_t *w, size_t capacity, size_t extra) {
    while (extra >= 255) {
        if (*w >= capacity) return 0;
        dst[(*w)++] = 255;
        extra -= 255;
    }
    if (*w >= capacity) return 0;
    dst[(*w)++] = (uint8_t)extra;
    return 1;
}

// One sequence: literals src[from, from+count), then a match (length ≥ 4) unless `last`.
static int put_sequence(uint8_t *dst, size_t *w, size_t capacity, const uint8_t *literals, size_t count,
                        size_t offset, size_t matchLength, int last) {
    if (*w >= capacity) return 0;
    size_t tokenAt = (*w)++;
    unsigned lit = count >= 15 ? 15 : (unsigned)count;
    unsigned mat = 0;
    if (lit == 15 && !put_length(dst, w, capacity, count - 15)) return 0;
    if (capacity - *w < count) return 0;
    memcpy(dst + *w, literals, count);
    *w += count;
    if (!last) {
        size_t m = matchLength - MIN_MATCH;
        mat = m >= 15 ? 15 : (unsigned)m;
        if (capacity - *w < 2) return 0;
        dst[(*w)++] = (uint8_t)(offset & 0xFF);
        dst[(*w)++] = (uint8_t)(offset >> 8);
        if (mat == 15 && !put_length(dst, w, capacity, m - 15)) return 0;
    }
    dst[tokenAt] = (uint8_t)((lit << 4) | mat);
    return 1;
}

size_t cport_lz4_encode(cport_lz4_encoder *e, const void *source, size_t size, void *destination, size_t capacity) {
    if (e == NULL || source == NULL || destination == NULL || size == 0 || size > 0x7E000000u) return 0;
    const uint8_t *src = (const uint8_t *)source;
    uint8_t *dst = (uint8_t *)destination;
    size_t w = 0;
    size_t anchor = 0;
    // Matches may start up to size - 12 and must end by size - 5 (end-of-block rules).
    if (size > MATCH_START_LIMIT) {
        uint32_t *table = (uint32_t *)malloc(sizeof(uint32_t) * HASH_SIZE); // position + 1 in src
        if (table == NULL) return 0;
        memset(table, 0, sizeof(uint32_t) * HASH_SIZE);
        const size_t matchStartEnd = size - MATCH_START_LIMIT; // exclusive
        const size_t matchEndLimit = size - LAST_LITERALS;
        const size_t dsize = e->dictionarySize;
        size_t i = 0;
        size_t step = 1 << 6; // skip faster through data that does not match
        while (i < matchStartEnd) {
            uint32_t v = read_le32(src + i);
            uint32_t h = hash4(v);
            size_t candidate = table[h];
            table[h] = (uint32_t)(i + 1);
            size_t offset = 0, length = 0;
            if (candidate != 0 && i - (candidate - 1) <= WINDOW && read_le32(src + candidate - 1) == v) {
                size_t from = candidate - 1;
                offset = i - from;
                length = MIN_MATCH;
                while (i + length < matchEndLimit && src[from + length] == src[i + length]) length++;
            } else if (dsize > 0 && e->dictionaryTable[h] != 0) {
                size_t from = e->dictionaryTable[h] - 1;  // dictionary position
                size_t distance = dsize - from + i;
                if (distance <= WINDOW && from + 4 <= dsize && read_le32(e->dictionary + from) == v) {
                    offset = distance;
                    length = MIN_MATCH;
                    // Through the dictionary, then on into the block itself.
                    while (i + length < matchEndLimit) {
                        size_t p = from + length;
                        uint8_t have = p < dsize ? e->dictionary[p] : src[p - dsize];
                        if (have != src[i + length]) break;
                        length++;
                    }
                }
            }
            if (length == 0) {
                i += step >> 6;
                step++;
                continue;
            }
            step = 1 << 6;
            // Extend backwards over pending literals.
            while (i > anchor) {
                size_t back = i - 1;
                uint8_t prev;
                if (offset <= back) prev = src[back - offset];
                else if (offset - back <= dsize) prev = e->dictionary[dsize - (offset - back)];
                else break;
                if (prev != src[back]) break;
                i--;
                length++;
            }
            if (!put_sequence(dst, &w, capacity, src + anchor, i - anchor, offset, length, 0)) { free(table); return 0; }
            size_t end = i + length;
            // Index a couple of positions inside the match for the next searches.
            if (end - 2 < matchStartEnd && end >= 2) table[hash4(read_le32(src + end - 2))] = (uint32_t)(end - 2 + 1);
            i = end;
            anchor = end;
        }
        free(table);
    }
    if (!put_sequence(dst, &w, capacity, src + anchor, size - anchor, 0, 0, 1)) return 0;
    return w;
}
