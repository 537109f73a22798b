/*
 * callerid-cabi-bench — the harness's measurement protocol for CallerID through its C ABI
 * (libcallerid.so, include/callerid.h), printing the same JSON object as
 * `callerid-bench engine NAME`. It measures the file the Swift engine built (the C ABI has
 * no builder).
 *
 *   callerid-cabi-bench --db FILE --probes FILE [--lookups N] [--scans N] [--colds N]
 *
 * The lookup timing is examples/c/bench.c's own (time_lookups: batches of 256 cid_lookup
 * calls, per-lookup ns per batch, sorted; percentile): that file is compiled into this one
 * with its main() renamed, so both measure a lookup the same way.
 */
#define _GNU_SOURCE
#define main callerid_example_bench_main
#include "bench.c"
#undef main

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static size_t heap_now(void) {
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

/* Drops the file from the page cache; returns the pages still resident (0 when it worked). */
static long evict(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    fsync(fd);
    off_t size = lseek(fd, 0, SEEK_END);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    long resident = 0;
    void *m = size > 0 ? mmap(NULL, (size_t)size, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (m != MAP_FAILED) {
        long page = sysconf(_SC_PAGESIZE);
        size_t pages = ((size_t)size + (size_t)page - 1) / (size_t)page;
        unsigned char *vec = malloc(pages);
        if (vec && mincore(m, (size_t)size, vec) == 0)
            for (size_t i = 0; i < pages; i++) resident += vec[i] & 1;
        free(vec);
        munmap(m, (size_t)size);
    }
    close(fd);
    return resident;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *xs, size_t n) {
    qsort(xs, n, sizeof *xs, cmp_d);
    return n ? xs[n / 2] : 0;
}

static void fail(const char *what, cid_status s) {
    fprintf(stderr, "error: %s: %s: %s\n", what, cid_status_name(s), cid_last_error_message());
    exit(65);
}

/* One scan of every entry with its label, 1,024 entries per call (cid_cursor_next_batch);
 * calls the heap sampler every 65,536 entries. */
static size_t scan(cid_db *db, size_t *sum, size_t *peak) {
    cid_cursor *c;
    cid_status s = cid_cursor_open(db, 0, NULL, &c);
    if (s != CID_OK) fail("cid_cursor_open", s);
    static cid_entry batch[1024];
    size_t seen = 0, n = 0, next_sample = 65536;
    while ((s = cid_cursor_next_batch(c, batch, 1024, &n)) == CID_OK) {
        for (size_t i = 0; i < n; i++) {
            const cid_entry *e = &batch[i];
            *sum += (size_t)e->number + e->label_len + (e->label_len ? (unsigned char)e->label[0] : 0) + e->action;
        }
        seen += n;
        if (seen >= next_sample && peak) {
            next_sample += 65536;
            size_t h = heap_now();
            if (h > *peak) *peak = h;
        }
    }
    if (s != CID_END) fail("cid_cursor_next_batch", s);
    cid_cursor_free(c);
    return seen;
}

int main(int argc, char **argv) {
    const char *path = NULL, *probes_path = NULL;
    size_t lookups = 1000000, scans = 5, colds = 5;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--db")) path = argv[i + 1];
        else if (!strcmp(argv[i], "--probes")) probes_path = argv[i + 1];
        else if (!strcmp(argv[i], "--lookups")) lookups = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--scans")) scans = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--colds")) colds = strtoull(argv[i + 1], NULL, 10);
        else { fprintf(stderr, "error: unknown option %s\n", argv[i]); return 64; }
    }
    if (!path || !probes_path || scans == 0 || colds == 0) {
        fprintf(stderr, "usage: callerid-cabi-bench --db FILE --probes FILE [--lookups N] [--scans N] [--colds N]\n");
        return 64;
    }

    /* Probes: u64 found count, u64 missing count, then the numbers (little-endian host); then,
     * optionally, u64 count of numbers whose label is cold and those numbers. */
    FILE *f = fopen(probes_path, "rb");
    uint64_t counts[2];
    if (!f || fread(counts, 8, 2, f) != 2) { fprintf(stderr, "error: %s: cannot read\n", probes_path); return 66; }
    uint64_t *found = malloc(counts[0] * 8), *missing = malloc(counts[1] * 8);
    if (fread(found, 8, counts[0], f) != counts[0] || fread(missing, 8, counts[1], f) != counts[1]) {
        fprintf(stderr, "error: %s: truncated\n", probes_path);
        return 65;
    }
    uint64_t ncold = 0, *cold = NULL;
    if (fread(&ncold, 8, 1, f) == 1 && ncold > 0) {
        cold = malloc(ncold * 8);
        if (!cold || fread(cold, 8, ncold, f) != ncold) { fprintf(stderr, "error: %s: truncated\n", probes_path); return 65; }
    }
    fclose(f);
    size_t nf = counts[0] < lookups ? counts[0] : lookups, nm = counts[1] < lookups ? counts[1] : lookups;
    size_t nc = ncold < lookups ? ncold : lookups;
    struct stat st;
    if (stat(path, &st) != 0) { fprintf(stderr, "error: %s: %s\n", path, strerror(errno)); return 66; }

    cid_db *db;
    cid_entry e;
    cid_status s;
    /* Cold: evicted file, open, one lookup. */
    double *open_cold = malloc(colds * sizeof(double)), *first_cold = malloc(colds * sizeof(double));
    double *both_cold = malloc(colds * sizeof(double));
    long resident = 0;
    for (size_t i = 0; i < colds; i++) {
        long r = evict(path);
        if (r > resident) resident = r;
        uint64_t t0 = now_ns();
        if ((s = cid_open(path, CID_OPEN_DEFAULT, &db)) != CID_OK) fail("cid_open", s);
        uint64_t t1 = now_ns();
        s = cid_lookup(db, found[(i * 7919) % nf], &e);
        uint64_t t2 = now_ns();
        if (s != CID_OK) fail("cold cid_lookup", s);
        open_cold[i] = (double)(t1 - t0) / 1e3;
        first_cold[i] = (double)(t2 - t1) / 1e3;
        both_cold[i] = (double)(t2 - t0) / 1e3;
        cid_close(db);
    }
    double first_cold_max = 0;
    for (size_t i = 0; i < colds; i++) if (first_cold[i] > first_cold_max) first_cold_max = first_cold[i];
    double open_hot[7];
    for (int i = 0; i < 7; i++) {
        uint64_t t0 = now_ns();
        if ((s = cid_open(path, CID_OPEN_DEFAULT, &db)) != CID_OK) fail("cid_open", s);
        open_hot[i] = (double)(now_ns() - t0) / 1e3;
        cid_close(db);
    }
    size_t heap0 = heap_now();
    if ((s = cid_open(path, CID_OPEN_DEFAULT, &db)) != CID_OK) fail("cid_open", s);
    long long open_heap = (long long)heap_now() - (long long)heap0;
    uint64_t count;
    cid_count(db, &count);

    /* Warm-up: a full scan (page cache), then lookups. */
    size_t sum = 0;
    if (scan(db, &sum, NULL) != count) { fprintf(stderr, "error: scan count mismatch\n"); return 65; }
    size_t heap1 = heap_now();
    size_t hits = 0;
    for (size_t i = 0; i < nf; i++) hits += cid_lookup(db, found[i], &e) == CID_OK;
    for (size_t i = 0; i < nm; i++) hits -= cid_lookup(db, missing[i], &e) == CID_OK;
    for (size_t i = 0; i < nc; i++) hits += cid_lookup(db, cold[i], &e) == CID_OK;
    if (hits != nf + nc) { fprintf(stderr, "error: probes not found / missing ones found\n"); return 65; }
    long long lookup_heap = (long long)heap_now() - (long long)heap1;

    double *samples = malloc((lookups / BATCH + 2) * sizeof *samples);
    time_lookups(db, found, nf < 200000 ? nf : 200000, samples); /* warm-up, bench.c's own */
    size_t k = time_lookups(db, found, nf, samples);
    double p50 = percentile(samples, k, 0.5), p99 = percentile(samples, k, 0.99), p999 = percentile(samples, k, 0.999);
    k = time_lookups(db, missing, nm, samples);
    double m50 = percentile(samples, k, 0.5), m99 = percentile(samples, k, 0.99), m999 = percentile(samples, k, 0.999);
    /* Present numbers whose label is cold (the harness's coldLabelCandidates). */
    char cold_json[200] = "";
    if (nc >= BATCH) {
        k = time_lookups(db, cold, nc, samples);
        snprintf(cold_json, sizeof cold_json, "\"cold_label_p50_ns\":%.1f,\"cold_label_p99_ns\":%.1f,\"cold_label_p999_ns\":%.1f,\"cold_lookups\":%zu,",
                 percentile(samples, k, 0.5), percentile(samples, k, 0.99), percentile(samples, k, 0.999), nc);
    }
    size_t ns = nf < 200000 ? nf : 200000;
    double *single = malloc(ns * sizeof *single);
    for (size_t i = 0; i < ns; i++) {
        uint64_t t0 = now_ns();
        if (cid_lookup(db, found[i], &e) == CID_OK) checksum += e.label_len;
        single[i] = (double)(now_ns() - t0);
    }
    qsort(single, ns, sizeof *single, cmp_d);
    cid_close(db);

    /* Scans on a freshly opened database. */
    if ((s = cid_open(path, CID_OPEN_DEFAULT, &db)) != CID_OK) fail("cid_open", s);
    double *scan_s = malloc(scans * sizeof *scan_s);
    size_t heap_peak = 0;
    for (size_t i = 0; i < scans; i++) {
        size_t base = heap_now(), peak = base;
        uint64_t t0 = now_ns();
        size_t n = scan(db, &sum, &peak);
        scan_s[i] = (double)(now_ns() - t0) / 1e9;
        size_t h = heap_now();
        if (h > peak) peak = h;
        if (peak - base > heap_peak) heap_peak = peak - base;
        if (n != count) { fprintf(stderr, "error: scan count mismatch\n"); return 65; }
    }
    double scan_med = median_of(scan_s, scans);
    cid_close(db);
    double clock[1000];
    for (int i = 0; i < 1000; i++) { uint64_t t0 = now_ns(); clock[i] = (double)(now_ns() - t0); }

    printf("{\"engine\":\"callerid-cabi\",\"entries\":%" PRIu64 ",\"bytes\":%lld,\"bytes_per_entry\":%.3f,\"build_s\":null,"
           "\"open_us\":%.1f,\"open_cold_us\":%.1f,\"cold_first_lookup_us\":%.1f,\"cold_first_lookup_max_us\":%.1f,"
           "\"cold_open_and_lookup_us\":%.1f,\"resident_pages_after_evict\":%ld,"
           "\"lookup_p50_ns\":%.1f,\"lookup_p99_ns\":%.1f,\"lookup_p999_ns\":%.1f,"
           "\"miss_p50_ns\":%.1f,\"miss_p99_ns\":%.1f,\"miss_p999_ns\":%.1f,%s"
           "\"single_p50_ns\":%.1f,\"single_p99_ns\":%.1f,\"single_p999_ns\":%.1f,\"lookups\":%zu,"
           "\"scan_entries_per_s\":%.0f,\"scan_ms\":%.2f,\"scan_heap_peak_bytes\":%zu,"
           "\"open_heap_bytes\":%lld,\"lookup_heap_bytes\":%lld,\"clock_overhead_ns\":%.1f}\n",
           count, (long long)st.st_size, (double)st.st_size / (double)count,
           median_of(open_hot, 7), median_of(open_cold, colds), median_of(first_cold, colds), first_cold_max, median_of(both_cold, colds), resident,
           p50, p99, p999, m50, m99, m999, cold_json,
           percentile(single, ns, 0.5), percentile(single, ns, 0.99), percentile(single, ns, 0.999), nf,
           (double)count / scan_med, scan_med * 1e3, heap_peak, open_heap, lookup_heap, median_of(clock, 1000));
    fprintf(stderr, "(checksum %zu %zu)\n", checksum, sum);
    free(found); free(missing); free(cold); free(samples); free(single); free(scan_s); free(open_cold); free(first_cold); free(both_cold);
    return 0;
}
