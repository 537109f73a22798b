// The portable XXH3-64 (Sources/CPortable) against libxxhash's, side by side in one run
// (BENCHMARKS.md, "Portable hash vs libxxhash").
//
//   clang -O2 -I Sources/CPortable/include tools/hash_bench.c Sources/CPortable/*.c -lxxhash -o /tmp/hash_bench
//   /tmp/hash_bench DATABASE.cid
//
// XXH3-64 over a 64 MiB buffer (best of 15 trials) and over the whole of FILE, 5 times per
// trial (best of 40 trials: what verify's checksums cost), the two implementations alternating;
// GB/s and portable ÷ libxxhash. Exits 1 if the two ever disagree.
#include "cportable.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
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

/// Best time of `trials` for `repeat` hashes of `n` bytes at `p`, each implementation; 0 when they agree.
static int race(const uint8_t *p, size_t n, int trials, int repeat, double best[2]) {
    best[0] = best[1] = 1e9;
    for (int trial = 0; trial < trials; trial++) {
        uint64_t h[2] = { 0, 0 };
        for (int which = 0; which < 2; which++) {
            double t0 = now();
            for (int r = 0; r < repeat; r++) h[which] ^= which == 0 ? XXH3_64bits(p, n) : cport_xxh3_64(p, n);
            double t = now() - t0;
            if (t < best[which]) best[which] = t;
        }
        if (h[0] != h[1]) return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: hash_bench FILE\n"); return 64; }
    int fd = open(argv[1], O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) { perror(argv[1]); return 66; }
    size_t size = (size_t)st.st_size;
    const uint8_t *f = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (f == MAP_FAILED) { perror("mmap"); return 66; }

    size_t big = 64u << 20;
    uint8_t *buffer = malloc(big);
    if (!buffer) return 71;
    for (size_t i = 0; i < big; i++) buffer[i] = (uint8_t)(i * 2654435761u >> 13);
    double b[2], s[2];
    if (race(buffer, big, 15, 1, b) || race(f, size, 40, 5, s)) { fprintf(stderr, "the two XXH3-64 disagree\n"); return 1; }
    printf("XXH3-64, 64 MiB buffer:      libxxhash %6.2f GB/s   portable %6.2f GB/s   portable / libxxhash %.2f\n",
           big / b[0] / 1e9, big / b[1] / 1e9, b[0] / b[1]);
    printf("XXH3-64, %s (%zu bytes): libxxhash %6.2f GB/s   portable %6.2f GB/s   portable / libxxhash %.2f\n",
           argv[1], size, size * 5.0 / s[0] / 1e9, size * 5.0 / s[1] / 1e9, s[0] / s[1]);
    return 0;
}
