// Label codec prototype: how small, and how fast to read, are a directory's cold labels when
// stored in LZ4 groups against an external dictionary made of the hot labels?
//
//   clang -O2 tools/label_codec_bench.c -llz4 -o /tmp/label_codec_bench
//   /tmp/label_codec_bench /tmp/study-4000000.tsv [--hot-bytes 65536] [--level 12] [--lookups 1000000]
//
// It reads NUMBER<TAB>LABEL[<TAB>CATEGORY] rows (a repeated number keeps its last row), makes
// the values and their ids as the writer does (Huffman code lengths from the frequencies, ids
// ordered by code length then first occurrence in number order, hot = the first ids while
// their label bytes fit --hot-bytes), then for several group shapes (labels per group, or raw
// bytes per group; labels in id order or sorted by text inside each code length) it prints:
//   - the cold label bytes per entry (compressed groups + a u32 offset per group),
//   - the time of one cold lookup (decode of the label's group, the whole block or up to the
//     label's end with LZ4_decompress_safe_partial_usingDict, then the label found by its
//     terminator), averaged over random present numbers whose value is cold,
//   - the time of a full ascending scan's cold labels (every cold entry decoded from its
//     group, one decoded group kept per code length so that a run of ids in order costs one
//     decode per group).
// Labels hold no control characters, so inside a decoded group each label ends with a 0 byte.
//
// First it prints the tiered layout the figures in BENCHMARKS.md come from (cold values used more
// than once coded one by one, values used once in groups of 1…32), at LZ4HC levels --level, 9, 6
// and 3 (ONELEVEL=1 in the environment: --level only); SHAPES=1 adds the older group shapes.
#define _GNU_SOURCE
#include <lz4.h>
#include <lz4hc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct { uint64_t number; uint32_t row; uint32_t value; } Row;
typedef struct { const char *label; uint32_t length; uint8_t category; } Value;

static char *text;           // the whole TSV
static Row *rows;
static size_t rowCount;
static Value *values;
static size_t valueCount;
static uint32_t *hashSlots;  // value index + 1, 0 = empty
static size_t hashMask;

static uint64_t hashBytes(const char *s, size_t n, uint8_t c) {
    uint64_t h = 0xcbf29ce484222325ull ^ c;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
    return h;
}

static char categoryNames[256][65];
static int categoryCount;
static uint8_t categoryCode(const char *s, size_t n) {
    if (n == 0) { s = "identify"; n = 8; }
    for (int i = 0; i < categoryCount; i++)
        if (strlen(categoryNames[i]) == n && memcmp(categoryNames[i], s, n) == 0) return (uint8_t)i;
    memcpy(categoryNames[categoryCount], s, n);
    categoryNames[categoryCount][n] = 0;
    return (uint8_t)categoryCount++;
}

static uint32_t intern(const char *s, uint32_t n, uint8_t c) {
    size_t i = hashBytes(s, n, c) & hashMask;
    while (hashSlots[i]) {
        Value *v = &values[hashSlots[i] - 1];
        if (v->length == n && v->category == c && memcmp(v->label, s, n) == 0) return hashSlots[i] - 1;
        i = (i + 1) & hashMask;
    }
    values[valueCount] = (Value){s, n, c};
    hashSlots[i] = (uint32_t)++valueCount;
    return (uint32_t)(valueCount - 1);
}

static int byNumberThenRow(const void *a, const void *b) {
    const Row *x = a, *y = b;
    if (x->number != y->number) return x->number < y->number ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row;
}

static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);  // the machine is shared: CPU time, not wall time
    return t.tv_sec + t.tv_nsec * 1e-9;
}

// Ids as the writer makes them.
static uint32_t *idOf;         // value → id
static uint32_t *freq, *firstAt;

static int cmpFreq(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (freq[x] != freq[y]) return freq[x] > freq[y] ? -1 : 1;
    return firstAt[x] < firstAt[y] ? -1 : 1;
}
static uint8_t *lengthOfValue;
static int cmpLengthFirst(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (lengthOfValue[x] != lengthOfValue[y]) return lengthOfValue[x] < lengthOfValue[y] ? -1 : 1;
    return firstAt[x] < firstAt[y] ? -1 : 1;
}
static int cmpLengthText(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (lengthOfValue[x] != lengthOfValue[y]) return lengthOfValue[x] < lengthOfValue[y] ? -1 : 1;
    const Value *p = &values[x], *q = &values[y];
    uint32_t n = p->length < q->length ? p->length : q->length;
    int c = memcmp(p->label, q->label, n);
    if (c) return c;
    if (p->length != q->length) return p->length < q->length ? -1 : 1;
    return p->category < q->category ? -1 : p->category > q->category;
}

static void huffmanLengths(uint32_t *byFreq, size_t n) {
    // Two-queue Huffman over ascending frequencies (the writer's valueCodeLengthCounts).
    uint64_t *w = malloc(sizeof *w * 2 * n);
    int64_t *parent = malloc(sizeof *parent * 2 * n);
    for (size_t i = 0; i < n; i++) w[i] = freq[byFreq[n - 1 - i]] ? freq[byFreq[n - 1 - i]] : 1;
    size_t leaf = 0, node = n, count = n;
    for (size_t k = 0; k + 1 < n; k++) {
        size_t pick[2];
        for (int j = 0; j < 2; j++) {
            if (leaf < n && (node >= count || w[leaf] <= w[node])) pick[j] = leaf++;
            else pick[j] = node++;
        }
        w[count] = w[pick[0]] + w[pick[1]];
        parent[pick[0]] = parent[pick[1]] = (int64_t)count;
        count++;
    }
    uint32_t *depth = calloc(2 * n, sizeof *depth);
    for (int64_t i = (int64_t)(2 * n) - 3; i >= 0; i--) depth[i] = depth[parent[i]] + 1;
    // Leaf i is byFreq[n-1-i]; clamp to 26 (no repayment needed on these data; checked below).
    for (size_t i = 0; i < n; i++) lengthOfValue[byFreq[n - 1 - i]] = (uint8_t)(depth[i] > 26 ? 26 : depth[i]);
    free(w); free(parent); free(depth);
}

typedef struct {
    const char *name;
    int byText;          // cold ids sorted by text within a code length
    int groupLabels;     // labels per group (0: by bytes)
    int groupBytes;      // raw bytes per group (a group ends after the label that reaches it)
} Shape;

static uint64_t rng = 42;
static uint64_t nextRandom(void) {
    rng += 0x9E3779B97F4A7C15ull;
    uint64_t z = rng;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static size_t hot, hotUsed, used;
static uint32_t *ordered;
static char *dict;
static int cmpTier(const void *a, const void *b) {
    // Within a code length: values used more than once first (by first occurrence), then the
    // values used once (by their occurrence).
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (lengthOfValue[x] != lengthOfValue[y]) return lengthOfValue[x] < lengthOfValue[y] ? -1 : 1;
    int sx = freq[x] == 1, sy = freq[y] == 1;
    if (sx != sy) return sx - sy;
    return firstAt[x] < firstAt[y] ? -1 : 1;
}
static size_t varintBytes(uint32_t v) { size_t n = 1; while (v >= 128) { v >>= 7; n++; } return n; }

// Tiers: cold values from `split` on (all used once) in LZ4 groups of 2^shift labels, with the
// labels' lengths as varints before each group's LZ4 block; the cold values before `split`
// coded one by one (LZ4 against the dictionary here; the file's symbol code for comparison).
static void tiers(uint32_t *probes, size_t probeCount, int level) {
    size_t cold = used - hot;
    uint32_t *order = malloc(sizeof *order * cold);
    memcpy(order, ordered + hot, sizeof *order * cold);
    qsort(order, cold, sizeof *order, cmpTier);
    size_t split = cold;
    while (split > 0 && freq[order[split - 1]] == 1) split--;
    size_t singleBytes = 0, repeatBytes = 0, repeatEntries = 0;
    for (size_t k = 0; k < cold; k++) {
        if (k < split) { repeatBytes += values[order[k]].length; repeatEntries += freq[order[k]]; }
        else singleBytes += values[order[k]].length;
    }
    printf("\ntiers: %zu cold values used more than once first (%zu raw bytes, %zu entries, %.2f %%), then %zu used once (%zu raw bytes)\n",
           split, repeatBytes, repeatEntries, 100.0 * repeatEntries / rowCount, cold - split, singleBytes);
    uint32_t *pos = malloc(sizeof *pos * valueCount);
    for (size_t k = 0; k < cold; k++) pos[order[k]] = (uint32_t)k;
    char *raw = malloc(1 << 22), *z = malloc(LZ4_compressBound(1 << 22));
    LZ4_streamHC_t *stream = LZ4_createStreamHC(), *prepared = LZ4_createStreamHC();
    int levels[] = {level, 9, 6, 3};
    for (int li = 0; li < (getenv("ONELEVEL") ? 1 : 4); li++) {
        int lv = levels[li];
        LZ4_resetStreamHC_fast(prepared, lv);
        LZ4_loadDictHC(prepared, dict, (int)hotUsed);
        // Values used more than once, one by one.
        size_t oneByOne = 0;
        double t0 = seconds();
        for (size_t k = 0; k < split; k++) {
            Value *v = &values[order[k]];
            memcpy(stream, prepared, sizeof *stream);
            int n = v->length ? LZ4_compress_HC_continue(stream, v->label, z, (int)v->length, LZ4_compressBound((int)v->length)) : 0;
            oneByOne += (size_t)n + varintBytes(v->length) + 4;
        }
        double tOne = seconds() - t0;
        printf("level %2d: used more than once, one LZ4 block each (+ varint length + u32 offset): %.3f B/entry (%.3f of raw), %.0f ms\n",
               lv, (double)oneByOne / rowCount, (double)oneByOne / (repeatBytes ? repeatBytes : 1), tOne * 1e3);
        for (int shift = 0; shift <= 5; shift++) {
            size_t g = 1u << shift, total = 0, groups = 0;
            t0 = seconds();
            size_t *offsets = malloc(sizeof *offsets * ((cold - split) / g + 2));
            char *blob = malloc(2 * singleBytes + 64 * cold + 1024);
            for (size_t k = split; k < cold; k += g) {
                size_t len = 0, head = 0;
                for (size_t j = k; j < k + g && j < cold; j++) {
                    Value *v = &values[order[j]];
                    memcpy(raw + len, v->label, v->length);
                    len += v->length;
                    head += varintBytes(v->length);
                }
                memcpy(stream, prepared, sizeof *stream);
                int n = LZ4_compress_HC_continue(stream, raw, z, (int)len, LZ4_compressBound((int)len));
                offsets[groups++] = total;
                memcpy(blob + total, z, (size_t)n);
                total += (size_t)n + head;
            }
            offsets[groups] = total;
            double tCompress = seconds() - t0;
            // Lookups of used-once values: decode the whole group.
            char out[1 << 16];
            size_t hits = 0;
            uint64_t check = 0;
            t0 = seconds();
            for (size_t i = 0; i < probeCount; i++) {
                uint32_t v = ordered[probes[i]];
                size_t k = pos[v];
                if (k < split) continue;
                size_t gi = (k - split) >> shift;
                int made = LZ4_decompress_safe_usingDict(blob + offsets[gi], out, (int)(offsets[gi + 1] - offsets[gi]), (int)sizeof out, dict, (int)hotUsed);
                check += (uint32_t)made + (uint8_t)out[0];
                hits++;
            }
            double tLookup = hits ? (seconds() - t0) / hits * 1e9 : 0;
            // A scan decodes every group once.
            t0 = seconds();
            for (size_t gi = 0; gi < groups; gi++) {
                int made = LZ4_decompress_safe_usingDict(blob + offsets[gi], out, (int)(offsets[gi + 1] - offsets[gi]), (int)sizeof out, dict, (int)hotUsed);
                check += (uint32_t)made;
            }
            double tScan = seconds() - t0;
            printf("level %2d: used once, groups of %2zu: %.3f B/entry (%.3f of raw, index included), lookup %4.0f ns, every group once %.2f ms, compress %.0f ms%s\n",
                   lv, g, (double)(total + 4 * (groups + 1)) / rowCount, (double)(total + 4 * (groups + 1)) / (singleBytes ? singleBytes : 1),
                   tLookup, tScan * 1e3, tCompress * 1e3, check == 1 ? " " : "");
            free(offsets); free(blob);
        }
    }
    LZ4_freeStreamHC(stream);
    LZ4_freeStreamHC(prepared);
    free(order); free(pos); free(raw); free(z);
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s FILE.tsv [--hot-bytes N] [--level L] [--lookups N]\n", argv[0]); return 64; }
    size_t hotBytes = 65536, lookups = 1000000;
    int level = 12;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--hot-bytes")) hotBytes = strtoull(argv[i + 1], 0, 10);
        else if (!strcmp(argv[i], "--level")) level = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--lookups")) lookups = strtoull(argv[i + 1], 0, 10);
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) { perror(argv[1]); return 66; }
    fseek(f, 0, SEEK_END);
    size_t size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    text = malloc(size + 1);
    if (fread(text, 1, size, f) != size) return 74;
    fclose(f);
    text[size] = '\n';
    size_t lines = 0;
    for (size_t i = 0; i < size; i++) lines += text[i] == '\n';
    rows = malloc(sizeof *rows * (lines + 1));
    values = malloc(sizeof *values * (lines + 1));
    hashMask = 1;
    while (hashMask < 2 * lines) hashMask <<= 1;
    hashSlots = calloc(hashMask, sizeof *hashSlots);
    hashMask--;
    char *p = text, *end = text + size;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p) + 1);
        char *t1 = memchr(p, '\t', (size_t)(nl - p));
        if (!t1) { p = nl + 1; continue; }
        uint64_t number = strtoull(p, 0, 10);
        char *label = t1 + 1;
        char *t2 = memchr(label, '\t', (size_t)(nl - label));
        char *labelEnd = t2 ? t2 : nl;
        const char *cat = t2 ? t2 + 1 : "";
        char *t3 = t2 ? memchr(t2 + 1, '\t', (size_t)(nl - t2 - 1)) : 0;
        size_t catLen = t2 ? (size_t)((t3 ? t3 : nl) - (t2 + 1)) : 0;
        uint8_t c = categoryCode(cat, catLen);
        rows[rowCount] = (Row){number, (uint32_t)rowCount, intern(label, (uint32_t)(labelEnd - label), c)};
        rowCount++;
        p = nl + 1;
    }
    qsort(rows, rowCount, sizeof *rows, byNumberThenRow);
    size_t n = 0;
    for (size_t i = 0; i < rowCount; i++) {
        if (i + 1 < rowCount && rows[i + 1].number == rows[i].number) continue;  // the last row wins
        rows[n++] = rows[i];
    }
    rowCount = n;
    freq = calloc(valueCount, sizeof *freq);
    firstAt = malloc(sizeof *firstAt * valueCount);
    for (size_t v = 0; v < valueCount; v++) firstAt[v] = UINT32_MAX;
    for (size_t i = 0; i < rowCount; i++) {
        uint32_t v = rows[i].value;
        if (!freq[v]++) firstAt[v] = (uint32_t)i;
    }
    used = 0;
    uint32_t *byFreq = malloc(sizeof *byFreq * valueCount);
    for (size_t v = 0; v < valueCount; v++) if (freq[v]) byFreq[used++] = (uint32_t)v;
    qsort(byFreq, used, sizeof *byFreq, cmpFreq);
    lengthOfValue = calloc(valueCount, 1);
    huffmanLengths(byFreq, used);
    ordered = malloc(sizeof *ordered * used);
    memcpy(ordered, byFreq, sizeof *ordered * used);
    qsort(ordered, used, sizeof *ordered, cmpLengthFirst);
    while (hot < used && hotUsed + values[ordered[hot]].length <= hotBytes) hotUsed += values[ordered[hot++]].length;
    dict = malloc(hotUsed + 1);
    size_t at = 0;
    for (size_t i = 0; i < hot; i++) { memcpy(dict + at, values[ordered[i]].label, values[ordered[i]].length); at += values[ordered[i]].length; }
    size_t coldEntries = 0, coldFirst = 0, coldBytes = 0;
    idOf = malloc(sizeof *idOf * valueCount);
    for (size_t i = 0; i < used; i++) idOf[ordered[i]] = (uint32_t)i;
    for (size_t i = hot; i < used; i++) coldBytes += values[ordered[i]].length;
    for (size_t i = 0; i < rowCount; i++) {
        uint32_t id = idOf[rows[i].value];
        if (id >= hot) { coldEntries++; if (firstAt[rows[i].value] == i) coldFirst++; }
    }
    printf("%s: %zu entries, %zu values, %zu hot (%zu bytes), %zu cold values (%zu raw bytes, %.3f B/entry raw)\n",
           argv[1], rowCount, used, hot, hotUsed, used - hot, coldBytes, (double)coldBytes / rowCount);
    printf("entries with a cold value: %zu (%.2f %%), of which first occurrences: %zu (%.1f %%)\n",
           coldEntries, 100.0 * coldEntries / rowCount, coldFirst, 100.0 * coldFirst / coldEntries);

    {
        size_t singletons = 0, singletonBytes = 0, classCount[27] = {0}, classSingles[27] = {0};
        for (size_t i = hot; i < used; i++) {
            uint32_t v = ordered[i];
            classCount[lengthOfValue[v]]++;
            if (freq[v] == 1) { singletons++; singletonBytes += values[v].length; classSingles[lengthOfValue[v]]++; }
        }
        printf("cold values used once: %zu (%zu raw bytes); cold entries of values used more than once: %zu (%.2f %% of entries)\n",
               singletons, singletonBytes, coldEntries - singletons, 100.0 * (coldEntries - singletons) / rowCount);
        printf("cold values by code length (all / used once):");
        for (int l = 0; l < 27; l++) if (classCount[l]) printf(" %d:%zu/%zu", l, classCount[l], classSingles[l]);
        printf("\n");
    }
    // Random present numbers' cold ids, for the lookup timing.
    size_t probeCount = 0;
    uint32_t *probes = malloc(sizeof *probes * lookups);
    for (size_t i = 0; i < lookups; i++) {
        uint32_t id = idOf[rows[nextRandom() % rowCount].value];
        if (id >= hot) probes[probeCount++] = id;
    }
    printf("lookups of random present numbers that hit a cold value: %.2f %%\n", 100.0 * probeCount / lookups);

    tiers(probes, probeCount, level);
    if (getenv("SHAPES") == NULL) return 0;
    Shape shapes[] = {
        {"1 label, id order", 0, 1, 0},
        {"2 labels, id order", 0, 2, 0},
        {"4 labels, id order", 0, 4, 0},
        {"8 labels, id order", 0, 8, 0},
        {"16 labels, id order", 0, 16, 0},
        {"32 labels, id order", 0, 32, 0},
        {"256 B, id order", 0, 0, 256},
        {"512 B, id order", 0, 0, 512},
        {"1 KiB, id order", 0, 0, 1024},
        {"2 KiB, id order", 0, 0, 2048},
        {"8 labels, by text", 1, 8, 0},
        {"16 labels, by text", 1, 16, 0},
        {"32 labels, by text", 1, 32, 0},
        {"256 B, by text", 1, 0, 256},
        {"512 B, by text", 1, 0, 512},
        {"1 KiB, by text", 1, 0, 1024},
        {"2 KiB, by text", 1, 0, 2048},
    };
    printf("\nLZ4HC level %d against the %zu-byte hot text; B/entry = groups + 4 B index per group\n", level, hotUsed);
    printf("%-22s %8s %10s %9s %11s %12s %12s %11s\n", "shape", "groups", "bytes", "B/entry", "ratio",
           "lookup full", "lookup part", "scan cold");
    uint32_t *coldOrder = malloc(sizeof *coldOrder * used);
    uint32_t *groupOf = malloc(sizeof *groupOf * used);
    uint32_t *rankInGroup = malloc(sizeof *rankInGroup * used);
    uint32_t *endInGroup = malloc(sizeof *endInGroup * used);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        Shape sh = shapes[s];
        memcpy(coldOrder, ordered + hot, sizeof *coldOrder * (used - hot));
        if (sh.byText) qsort(coldOrder, used - hot, sizeof *coldOrder, cmpLengthText);
        // The position of each cold id: its group and its place in it.
        size_t cold = used - hot;
        uint32_t *groupStart = malloc(sizeof *groupStart * (cold + 1));
        size_t groups = 0, inGroup = 0, raw = 0;
        uint32_t *posOfValue = malloc(sizeof *posOfValue * valueCount);
        for (size_t k = 0; k < cold; k++) {
            if (inGroup == 0) groupStart[groups++] = (uint32_t)k;
            Value *v = &values[coldOrder[k]];
            posOfValue[coldOrder[k]] = (uint32_t)k;
            raw += v->length + 1;
            inGroup++;
            if ((sh.groupLabels && inGroup == (size_t)sh.groupLabels) || (!sh.groupLabels && raw >= (size_t)sh.groupBytes)) {
                inGroup = 0;
                raw = 0;
            }
        }
        groupStart[groups] = (uint32_t)cold;
        // Compress every group.
        char *buffer = malloc(1 << 20), *compressed = malloc(LZ4_compressBound(1 << 20));
        size_t total = 0;
        uint32_t *offset = malloc(sizeof *offset * (groups + 1));
        uint32_t *rawSize = malloc(sizeof *rawSize * groups);
        char *blob = malloc(coldBytes + cold + 64 * groups + 1024);
        LZ4_streamHC_t *stream = LZ4_createStreamHC(), *prepared = LZ4_createStreamHC();
        LZ4_resetStreamHC_fast(prepared, level);
        LZ4_loadDictHC(prepared, dict, (int)hotUsed);
        double t0 = seconds();
        for (size_t g = 0; g < groups; g++) {
            size_t len = 0;
            for (uint32_t k = groupStart[g]; k < groupStart[g + 1]; k++) {
                Value *v = &values[coldOrder[k]];
                groupOf[coldOrder[k]] = (uint32_t)g;
                rankInGroup[coldOrder[k]] = k - groupStart[g];
                memcpy(buffer + len, v->label, v->length);
                len += v->length;
                buffer[len++] = 0;
                endInGroup[coldOrder[k]] = (uint32_t)len;
            }
            memcpy(stream, prepared, sizeof *stream);
            int z = LZ4_compress_HC_continue(stream, buffer, compressed, (int)len, LZ4_compressBound((int)len));
            offset[g] = (uint32_t)total;
            rawSize[g] = (uint32_t)len;
            memcpy(blob + total, compressed, (size_t)z);
            total += (size_t)z;
        }
        offset[groups] = (uint32_t)total;
        double compressSeconds = seconds() - t0;
        // Lookups: decode the group of each probe (whole block, or up to the label's end).
        char out[1 << 16];
        double timeFull = 0, timePartial = 0;
        uint64_t check = 0;
        for (int pass = 0; pass < 2; pass++) {
            double t = seconds();
            for (size_t i = 0; i < probeCount; i++) {
                uint32_t v = ordered[probes[i]];
                uint32_t g = groupOf[v];
                int made;
                if (pass == 0) {
                    made = LZ4_decompress_safe_usingDict(blob + offset[g], out, (int)(offset[g + 1] - offset[g]), (int)sizeof out, dict, (int)hotUsed);
                } else {
                    made = LZ4_decompress_safe_partial_usingDict(blob + offset[g], out, (int)(offset[g + 1] - offset[g]), (int)endInGroup[v],
                                                                 (int)sizeof out, dict, (int)hotUsed);
                }
                if (made < (int)endInGroup[v]) { fprintf(stderr, "decode failed\n"); return 1; }
                // The label: after the rank-th terminator.
                const char *q = out;
                for (uint32_t r = rankInGroup[v]; r; r--) q = memchr(q, 0, (size_t)(out + made - q)) + 1;
                check += (uint8_t)q[0] + strlen(q);
            }
            double ns = (seconds() - t) / (probeCount ? probeCount : 1) * 1e9;
            if (pass == 0) timeFull = ns; else timePartial = ns;
        }
        // Scan: every cold entry in number order; one decoded group kept per code length.
        static char cache[27][1 << 16];
        int32_t cachedGroup[27];
        for (int l = 0; l < 27; l++) cachedGroup[l] = -1;
        size_t decodes = 0;
        double t = seconds();
        for (size_t i = 0; i < rowCount; i++) {
            uint32_t v = rows[i].value;
            if (idOf[v] < hot) continue;
            uint32_t g = groupOf[v];
            int l = lengthOfValue[v];
            if (cachedGroup[l] != (int32_t)g) {
                LZ4_decompress_safe_usingDict(blob + offset[g], cache[l], (int)(offset[g + 1] - offset[g]), 1 << 16, dict, (int)hotUsed);
                cachedGroup[l] = (int32_t)g;
                decodes++;
            }
            const char *q = cache[l];
            for (uint32_t r = rankInGroup[v]; r; r--) q = q + strlen(q) + 1;
            check += (uint8_t)q[0];
        }
        double scanSeconds = seconds() - t;
        double perEntry = (double)(total + 4 * (groups + 1)) / rowCount;
        printf("%-22s %8zu %10zu %9.3f %11.3f %9.0f ns %9.0f ns %8.1f ms  (%zu decodes, compress %.0f ms) %s\n", sh.name, groups, total,
               perEntry, (double)total / (coldBytes + cold), timeFull, timePartial, scanSeconds * 1e3, decodes, compressSeconds * 1e3,
               check == 42 ? "" : "");
        free(groupStart); free(posOfValue); free(buffer); free(compressed); free(offset); free(rawSize); free(blob);
        LZ4_freeStreamHC(stream);
        LZ4_freeStreamHC(prepared);
    }
    return 0;
}
