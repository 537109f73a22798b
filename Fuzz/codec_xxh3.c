// libFuzzer target: the portable XXH3-64 and XXH64 (Sources/CPortable) against libxxhash 0.8.1.
// Built by tools/fuzz.sh (codec-xxh3) with -fsanitize=fuzzer,address,undefined. Every input
// is hashed at its exact size (and from its second byte, to vary alignment, and as a 16× repeat
// to reach the long-input path); any difference aborts.
#include "cportable.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

static void check(const uint8_t *p, size_t n, uint64_t seed) {
    uint64_t a = cport_xxh3_64(p, n), b = XXH3_64bits(p, n);
    if (a != b) {
        fprintf(stderr, "codec-xxh3: XXH3-64 of %zu bytes: portable %016llx, libxxhash %016llx\n", n, (unsigned long long)a, (unsigned long long)b);
        abort();
    }
    a = cport_xxh64(p, n, seed); b = XXH64(p, n, seed);
    if (a != b) {
        fprintf(stderr, "codec-xxh3: XXH64 of %zu bytes, seed %llu: portable %016llx, libxxhash %016llx\n", n, (unsigned long long)seed, (unsigned long long)a, (unsigned long long)b);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint64_t seed = 0;
    for (size_t i = 0; i < size && i < 8; i++) seed |= (uint64_t)data[i] << (8 * i);
    check(data, size, seed);
    if (size > 0) check(data + 1, size - 1, ~seed);
    if (size > 0 && size <= 4096) {
        uint8_t *big = (uint8_t *)malloc(size * 16);
        for (int k = 0; k < 16; k++) memcpy(big + k * size, data, size);
        big[size * 8] ^= 1;
        check(big, size * 16, seed);
        free(big);
    }
    return 0;
}
