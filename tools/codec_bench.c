// Portable codecs vs liblz4/libxxhash, side by side in one run (BENCHMARKS.md, "Portable codecs").
//
//   clang -O2 -I Sources/CPortable/include tools/codec_bench.c Sources/CPortable/*.c -llz4 -lxxhash -o /tmp/codec_bench
//   /tmp/codec_bench DATABASE.cid
//
// Decoding: every compressed label chunk of the database (against its label dictionary), decoded
// by LZ4_decompress_safe_usingDict and by cport_lz4_decode, many rounds, alternating; MB/s of
// decoded bytes, best of 5. Hashing: XXH3-64 over a 64 MiB buffer and over the database's
// sections, both implementations, alternating; GB/s, best of 15 / 40 trials. Sizes: the label chunks re-encoded with
// LZ4HC level 12 (what the writer uses with the system codecs) and with the portable encoder.
#include "cportable.h"

#include <fcntl.h>
#include <lz4.h>
#include <lz4hc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
static uint32_t u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t u64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: codec_bench DATABASE.cid\n"); return 64; }
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) { perror(argv[1]); return 66; }
    const uint8_t *f = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    uint64_t tableOffset = u64(f + 40);
    uint32_t sections = u32(f + 48), dictChunks = u32(f + 52);
    const uint8_t *chunkTable = NULL, *labels = NULL;
    size_t chunkTableLength = 0;
    for (uint32_t i = 0; i < sections; i++) {
        const uint8_t *e = f + tableOffset + 32 * i;
        if (u32(e) == 7) { chunkTable = f + u64(e + 8); chunkTableLength = u64(e + 16); }
        if (u32(e) == 8) labels = f + u64(e + 8);
    }
    size_t chunks = chunkTableLength / 16, dictSize = 0;
    for (uint32_t c = 0; c < dictChunks; c++) dictSize += u32(chunkTable + 16 * c + 8);
    const uint8_t *dict = labels;   // the dictionary chunks: raw, contiguous from offset 0
    size_t compressed = 0, rawTotal = 0, stored = 0, maxRaw = 0;
    for (size_t c = 0; c < chunks; c++) {
        const uint8_t *e = chunkTable + 16 * c;
        if (!(u32(e + 12) & 0x80000000u)) continue;
        compressed++; rawTotal += u32(e + 8); stored += u32(e + 4);
        if (u32(e + 8) > maxRaw) maxRaw = u32(e + 8);
    }
    printf("%s: %zu label chunks, %zu LZ4-compressed (%zu bytes -> %zu raw), dictionary %zu bytes\n",
           argv[1], chunks, compressed, stored, rawTotal, dictSize);
    uint8_t *out = malloc(maxRaw + 64);
    double best[2] = { 1e9, 1e9 };
    int rounds = 10;
    for (int trial = 0; trial < 60; trial++) {
        for (int which = 0; which < 2; which++) {
            double t0 = now();
            for (int r = 0; r < rounds; r++) {
                for (size_t c = 0; c < chunks; c++) {
                    const uint8_t *e = chunkTable + 16 * c;
                    if (!(u32(e + 12) & 0x80000000u)) continue;
                    const uint8_t *src = labels + u32(e);
                    size_t n = u32(e + 4), raw = u32(e + 8);
                    long got = which == 0
                        ? LZ4_decompress_safe_usingDict((const char *)src, (char *)out, (int)n, (int)raw, (const char *)dict, (int)dictSize)
                        : (long)cport_lz4_decode(src, n, out, raw, dict, dictSize);
                    if (got != (long)raw) { fprintf(stderr, "chunk %zu: decode failed (%ld)\n", c, got); return 1; }
                }
            }
            double t = now() - t0;
            if (t < best[which]) best[which] = t;
        }
    }
    double mbLib = rawTotal * (double)rounds / best[0] / 1e6, mbMine = rawTotal * (double)rounds / best[1] / 1e6;
    printf("LZ4 decode, label chunks:  liblz4 %8.0f MB/s   portable %8.0f MB/s   ratio %.2f\n", mbLib, mbMine, mbMine / mbLib);

    size_t big = 64u << 20;
    uint8_t *buffer = malloc(big);
    for (size_t i = 0; i < big; i++) buffer[i] = (uint8_t)(i * 2654435761u >> 13);
    double hb[2] = { 1e9, 1e9 };
    uint64_t sink = 0;
    for (int trial = 0; trial < 15; trial++) {
        double t0 = now(); sink ^= XXH3_64bits(buffer, big); double t = now() - t0; if (t < hb[0]) hb[0] = t;
        t0 = now(); sink ^= cport_xxh3_64(buffer, big); t = now() - t0; if (t < hb[1]) hb[1] = t;
    }
    printf("XXH3-64, 64 MiB buffer:    libxxhash %6.2f GB/s   portable %6.2f GB/s   ratio %.2f\n",
           big / hb[0] / 1e9, big / hb[1] / 1e9, hb[0] / hb[1]);
    // The reader's verify(): every section of the file.
    double sb[2] = { 1e9, 1e9 };
    size_t sectionBytes = 0;
    for (uint32_t i = 0; i < sections; i++) sectionBytes += u64(f + tableOffset + 32 * i + 16);
    for (int trial = 0; trial < 40; trial++) {
        for (int which = 0; which < 2; which++) {
            double t0 = now();
            for (int r = 0; r < 5; r++)
                for (uint32_t i = 0; i < sections; i++) {
                    const uint8_t *e = f + tableOffset + 32 * i;
                    sink ^= which == 0 ? XXH3_64bits(f + u64(e + 8), u64(e + 16)) : cport_xxh3_64(f + u64(e + 8), u64(e + 16));
                }
            double t = now() - t0;
            if (t < sb[which]) sb[which] = t;
        }
    }
    printf("XXH3-64, the file's sections (%zu bytes): libxxhash %6.2f GB/s   portable %6.2f GB/s   ratio %.2f\n",
           sectionBytes, sectionBytes * 5.0 / sb[0] / 1e9, sectionBytes * 5.0 / sb[1] / 1e9, sb[0] / sb[1]);

    // Sizes: re-encode each compressed chunk with LZ4HC-12 and with the portable encoder.
    size_t hcTotal = 0, mineTotal = 0;
    double encodeTime[2] = { 0, 0 };
    LZ4_streamHC_t *prepared = LZ4_createStreamHC(), *work = LZ4_createStreamHC();
    LZ4_resetStreamHC_fast(prepared, 12);
    LZ4_loadDictHC(prepared, (const char *)dict, (int)dictSize);
    cport_lz4_encoder *enc = cport_lz4_encoder_create(dict, dictSize);
    uint8_t *packed = malloc(LZ4_compressBound((int)maxRaw) + 64);
    for (size_t c = 0; c < chunks; c++) {
        const uint8_t *e = chunkTable + 16 * c;
        if (!(u32(e + 12) & 0x80000000u)) continue;
        size_t raw = u32(e + 8);
        LZ4_decompress_safe_usingDict((const char *)labels + u32(e), (char *)out, (int)u32(e + 4), (int)raw, (const char *)dict, (int)dictSize);
        double t0 = now();
        memcpy(work, prepared, sizeof *work);
        hcTotal += (size_t)LZ4_compress_HC_continue(work, (const char *)out, (char *)packed, (int)raw, LZ4_compressBound((int)raw));
        double t1 = now();
        mineTotal += cport_lz4_encode(enc, out, raw, packed, cport_lz4_bound(raw));
        encodeTime[0] += t1 - t0; encodeTime[1] += now() - t1;
    }
    printf("label chunks re-encoded:   LZ4HC-12 %zu bytes (%.1f MB/s)   portable %zu bytes (%.0f MB/s), %+.0f%%\n",
           hcTotal, rawTotal / encodeTime[0] / 1e6, mineTotal, rawTotal / encodeTime[1] / 1e6,
           100.0 * ((double)mineTotal / (double)hcTotal - 1));
    return (int)(sink & 0);
}
