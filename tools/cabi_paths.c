/* The C ABI's two hot paths, for instruction counts (tools/cabi_paths.sh): SCANS full scans
 * through cid_cursor_next_batch (1,024 entries per call), then ROUNDS passes of cid_lookup over
 * the numbers of NUMBERS_FILE (one per line, at most 2^20).
 *   cabi_paths DB SCANS NUMBERS_FILE ROUNDS */
#include "callerid.h"
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    if (argc < 5) return 64;
    cid_db *db = NULL;
    if (cid_open(argv[1], 0, &db) != CID_OK) return 66;
    int scans = atoi(argv[2]), rounds = atoi(argv[4]);
    static cid_entry out[1024];
    unsigned long long sum = 0, seen = 0;
    for (int r = 0; r < scans; r++) {
        cid_cursor *c = NULL;
        cid_cursor_open(db, 0, NULL, &c);
        size_t n = 0;
        while (cid_cursor_next_batch(c, out, 1024, &n) == CID_OK && n > 0) {
            for (size_t i = 0; i < n; i++) sum += out[i].number + out[i].label_len;
            seen += n;
        }
        cid_cursor_free(c);
    }
    FILE *f = fopen(argv[3], "r");
    static unsigned long long nums[1 << 20]; size_t k = 0;
    while (k < (1 << 20) && fscanf(f, "%llu", &nums[k]) == 1) k++;
    fclose(f);
    unsigned long long found = 0;
    for (int r = 0; r < rounds; r++)
        for (size_t i = 0; i < k; i++) { cid_entry e; if (cid_lookup(db, nums[i], &e) == CID_OK) { found++; sum += e.label_len; } }
    printf("seen %llu found %llu sum %llu\n", seen, found, sum);
    cid_close(db);
    return 0;
}
