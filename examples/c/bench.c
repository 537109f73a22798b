/*
 * bench — point-lookup latency through the C ABI, measured like Benchmarks/callerid-bench
 * measures the Swift API: random keys of the database (hot page cache), batches of 256
 * lookups timed with clock_gettime(CLOCK_MONOTONIC), per-lookup nanoseconds per batch,
 * percentiles over the batches; a warm-up pass first. Also times cid_lookup_batch over the
 * same batches.
 *
 * Build against the release library (see docs/C-ABI.md):
 *   swift build -c release
 *   cc -std=c11 -O2 -Iinclude examples/c/bench.c -L.build/release \
 *      -Wl,-rpath,$PWD/.build/release -lcallerid -o /tmp/cid-bench
 *   /tmp/cid-bench /tmp/g1m.cid [--lookups N]
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime with -std=c11 */
#include "callerid.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH 256

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t splitmix(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile(const double *sorted, size_t n, double p) {
    if (n == 0) return 0;
    size_t i = (size_t)((double)n * p);
    return sorted[i < n ? i : n - 1];
}

static int contains(const uint64_t *keys, size_t n, uint64_t k) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < k) lo = mid + 1; else hi = mid;
    }
    return lo < n && keys[lo] == k;
}

static size_t checksum;

/* Per-lookup ns of each batch of 256 single cid_lookup calls, sorted; returns the count. */
static size_t time_lookups(cid_db *db, const uint64_t *numbers, size_t n, double *samples) {
    size_t batches = 0;
    cid_entry e;
    for (size_t i = 0; i + BATCH <= n; i += BATCH) {
        uint64_t t0 = now_ns();
        for (size_t j = i; j < i + BATCH; j++) {
            if (cid_lookup(db, numbers[j], &e) == CID_OK) checksum += e.label_len + e.action + 1;
        }
        samples[batches++] = (double)(now_ns() - t0) / BATCH;
    }
    qsort(samples, batches, sizeof *samples, cmp_double);
    return batches;
}

/* The same with one cid_lookup_batch call per 256 numbers. */
static size_t time_batches(cid_db *db, const uint64_t *numbers, size_t n, double *samples) {
    size_t batches = 0, found;
    static cid_entry results[BATCH];
    for (size_t i = 0; i + BATCH <= n; i += BATCH) {
        uint64_t t0 = now_ns();
        cid_lookup_batch(db, numbers + i, BATCH, results, &found);
        for (size_t j = 0; j < BATCH; j++)
            if (results[j].category) checksum += results[j].label_len + results[j].action + 1;
        samples[batches++] = (double)(now_ns() - t0) / BATCH;
    }
    qsort(samples, batches, sizeof *samples, cmp_double);
    return batches;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench DB [--lookups N]\n");
        return 64;
    }
    size_t lookups = 2000000;
    for (int i = 2; i + 1 < argc; i++)
        if (strcmp(argv[i], "--lookups") == 0) lookups = (size_t)strtoull(argv[i + 1], NULL, 10);

    cid_db *db;
    uint64_t t0 = now_ns();
    cid_status s = cid_open(argv[1], CID_OPEN_DEFAULT, &db);
    double open_us = (double)(now_ns() - t0) / 1e3;
    if (s != CID_OK) {
        fprintf(stderr, "error: %s: %s\n", cid_status_name(s), cid_last_error_message());
        return 65;
    }
    uint64_t count;
    cid_count(db, &count);

    /* Keys from one scan (not timed), then random probes and misses. */
    uint64_t *keys = malloc(count * sizeof *keys);
    size_t n = 0;
    cid_cursor *c;
    cid_cursor_open(db, 0, NULL, &c);
    cid_entry e;
    while (n < count && cid_cursor_next(c, &e) == CID_OK) keys[n++] = e.number;
    cid_cursor_free(c);
    uint64_t rng = 42;
    uint64_t *probes = malloc(lookups * sizeof *probes), *misses = malloc(lookups * sizeof *misses);
    for (size_t i = 0; i < lookups; i++) {
        probes[i] = keys[splitmix(&rng) % n];
        uint64_t m = probes[i] + 1;
        while (contains(keys, n, m)) m++;
        misses[i] = m;
    }
    for (size_t i = lookups; i > 1; i--) { /* shuffle the misses */
        size_t j = splitmix(&rng) % i;
        uint64_t t = misses[i - 1]; misses[i - 1] = misses[j]; misses[j] = t;
    }

    double *samples = malloc((lookups / BATCH + 1) * sizeof *samples);
    time_lookups(db, probes, lookups < 200000 ? lookups : 200000, samples); /* warm-up */
    size_t k = time_lookups(db, probes, lookups, samples);
    double p50 = percentile(samples, k, 0.5), p99 = percentile(samples, k, 0.99), p999 = percentile(samples, k, 0.999);
    k = time_lookups(db, misses, lookups, samples);
    double miss50 = percentile(samples, k, 0.5), miss99 = percentile(samples, k, 0.99);
    k = time_batches(db, probes, lookups, samples);
    double batch50 = percentile(samples, k, 0.5), batch99 = percentile(samples, k, 0.99);

    printf("engine                 \"callerid-c-abi\"\n");
    printf("entries                %" PRIu64 "\n", count);
    printf("open_us                %.1f\n", open_us);
    printf("lookup_p50_ns          %.1f\n", p50);
    printf("lookup_p99_ns          %.1f\n", p99);
    printf("lookup_p999_ns         %.1f\n", p999);
    printf("miss_p50_ns            %.1f\n", miss50);
    printf("miss_p99_ns            %.1f\n", miss99);
    printf("batch_lookup_p50_ns    %.1f\n", batch50);
    printf("batch_lookup_p99_ns    %.1f\n", batch99);
    fprintf(stderr, "(checksum %zu)\n", checksum);
    free(keys); free(probes); free(misses); free(samples);
    cid_close(db);
    return 0;
}
