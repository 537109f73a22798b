/*
 * cidquery — a small C program over libcallerid.so (include/callerid.h).
 *
 * Build (from the package root, after `swift build`):
 *   cc -std=c11 -Wall -Wextra -O2 -Iinclude examples/c/cidquery.c \
 *      -L.build/debug -Wl,-rpath,$PWD/.build/debug -lcallerid -lpthread -o cidquery
 * or, installed:  cc examples/c/cidquery.c $(pkg-config --cflags --libs callerid) -lpthread
 *
 * Usage: cidquery [--verify] DB COMMAND [ARGS...]
 *   info                          versions, entry count, categories
 *   verify                        full check (every checksum)
 *   lookup NUMBER...              zero-copy lookups ("+7 913 123-45-67" forms accepted)
 *   match NUMBER...               cid_lookup_match: entries, else the range holding the number
 *   copy SIZE NUMBER...           lookups copying the label into a SIZE-byte buffer
 *   batch NUMBER...               one cid_lookup_batch call
 *   dump [FILTER]                 ascending entries; FILTER: --from N, --action identify|block,
 *                                 --category NAME (repeatable), --limit K
 *   merge DB2... [FILTER]         merged cursor over DB, DB2, ... (earlier database wins)
 *   threads T M FILE              T threads x M lookups of the numbers in FILE (one per line)
 *                                 on one shared handle, plus one full cursor scan per thread
 *   selftest                      misuse checks: NULLs, double close/free, wrong handle kinds
 *
 * Output lines (tab-separated, for people and for tests):
 *   found<TAB>NUMBER<TAB>LABEL<TAB>CATEGORY<TAB>ACTION     not-found<TAB>NUMBER
 *   invalid<TAB>TEXT<TAB>MESSAGE      error<TAB>NUMBER<TAB>STATUS<TAB>MESSAGE (damaged part)
 *   STATUS<TAB>NUMBER<TAB>FULL_LENGTH<TAB>COPIED            (copy)
 *   entry<TAB>NUMBER<TAB>LABEL<TAB>CATEGORY   range<TAB>NUMBER<TAB>LABEL<TAB>CATEGORY<TAB>FIRST<TAB>LAST
 *                                                           (match; not-found as above)
 *   NUMBER<TAB>LABEL<TAB>CATEGORY[<TAB>SOURCE]              (dump, merge)
 * Errors: "error: STATUS-NAME: MESSAGE" on stderr; exit 66 missing file, 65 damaged or
 * unsupported file, 74 I/O, 64 usage, 1 other.
 */
#include "callerid.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int exit_code(cid_status s) {
    switch (s) {
    case CID_ERR_FILE_NOT_FOUND: return 66;
    case CID_ERR_CORRUPT:
    case CID_ERR_UNSUPPORTED_VERSION: return 65;
    case CID_ERR_IO: return 74;
    case CID_ERR_INVALID_ARGUMENT: return 64;
    default: return 1;
    }
}

/* Prints the failure of the last call and returns an exit code for it. */
static int report(cid_status s) {
    fprintf(stderr, "error: %s: %s\n", cid_status_name(s), cid_last_error_message());
    return exit_code(s);
}

static int usage(void) {
    fprintf(stderr, "usage: cidquery [--verify] DB info|verify|lookup|match|copy|batch|dump|merge|threads|selftest ...\n");
    return 64;
}

static const char *action_name(uint32_t action) {
    return action == CID_ACTION_BLOCK ? "block" : "identify";
}

static void print_found(const cid_entry *e) {
    printf("found\t%" PRIu64 "\t%.*s\t%s\t%s\n", e->number, (int)e->label_len, e->label, e->category,
           action_name(e->action));
}

static void print_entry(const cid_entry *e, int with_source) {
    printf("%" PRIu64 "\t%.*s\t%s", e->number, (int)e->label_len, e->label, e->category);
    if (with_source) printf("\t%u", e->source);
    putchar('\n');
}

/* FNV-1a 64 over the label, mixed with the number and category: the checksum the tests
 * recompute with the Swift API. */
static uint64_t entry_mix(const cid_entry *e) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < e->label_len; i++) {
        h ^= (unsigned char)e->label[i];
        h *= 0x100000001b3ULL;
    }
    return h ^ (e->number * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)e->category_index + 1);
}

/* ---- lookup, copy, batch ------------------------------------------------------------- */

static int cmd_lookup(cid_db *db, int argc, char **argv) {
    int rc = 0;
    for (int i = 0; i < argc; i++) {
        uint64_t number;
        cid_status s = cid_parse_number(argv[i], &number);
        if (s != CID_OK) {
            printf("invalid\t%s\t%s\n", argv[i], cid_last_error_message());
            continue;
        }
        cid_entry e;
        s = cid_lookup(db, number, &e);
        if (s == CID_OK) print_found(&e);
        else if (s == CID_NOT_FOUND) printf("not-found\t%" PRIu64 "\n", number);
        else {
            /* A damaged part of a file opened without --verify: say so and go on. */
            printf("error\t%" PRIu64 "\t%s\t%s\n", number, cid_status_name(s), cid_last_error_message());
            rc = exit_code(s);
        }
    }
    return rc;
}

/* match NUMBER...: cid_lookup_match(): entry/range/not-found lines; a range line ends with
 * the range's bounds. */
static int cmd_match(cid_db *db, int argc, char **argv) {
    int rc = 0;
    uint32_t kind = 99;
    uint64_t first = 1, last = 1;
    cid_entry e;
    if (cid_lookup_match(db, 1, NULL, &kind, &first, &last) != CID_ERR_INVALID_ARGUMENT || kind != CID_MATCH_NONE || first || last) {
        fprintf(stderr, "error: cid_lookup_match with out NULL\n");
        rc = 1;
    }
    if (cid_lookup_match(NULL, 1, &e, NULL, NULL, NULL) != CID_ERR_INVALID_ARGUMENT || e.category != NULL) {
        fprintf(stderr, "error: cid_lookup_match with db NULL\n");
        rc = 1;
    }
    for (int i = 0; i < argc; i++) {
        uint64_t number;
        if (cid_parse_number(argv[i], &number) != CID_OK) { rc = 64; continue; }
        cid_status s = cid_lookup_match(db, number, &e, &kind, &first, &last);
        /* The optional outputs may be NULL: the answer is the same. */
        cid_entry plain;
        cid_status s2 = cid_lookup_match(db, number, &plain, NULL, NULL, NULL);
        if (s2 != s || plain.category_index != e.category_index) { fprintf(stderr, "error: NULL outputs changed the answer\n"); rc = 1; }
        if (s == CID_OK && kind == CID_MATCH_ENTRY) {
            printf("entry\t%" PRIu64 "\t%.*s\t%s\n", e.number, (int)e.label_len, e.label, e.category);
            if (first != number || last != number) { fprintf(stderr, "error: entry bounds\n"); rc = 1; }
        } else if (s == CID_OK && kind == CID_MATCH_RANGE) {
            printf("range\t%" PRIu64 "\t%.*s\t%s\t%" PRIu64 "\t%" PRIu64 "\n", e.number, (int)e.label_len, e.label, e.category, first, last);
        } else if (s == CID_NOT_FOUND && kind == CID_MATCH_NONE && e.category == NULL) {
            printf("not-found\t%" PRIu64 "\n", number);
        } else {
            printf("error\t%" PRIu64 "\t%s\t%s\n", number, cid_status_name(s), cid_last_error_message());
            rc = exit_code(s);
        }
    }
    return rc;
}

static int cmd_copy(cid_db *db, int argc, char **argv) {
    if (argc < 1) return usage();
    size_t size = (size_t)strtoull(argv[0], NULL, 10);
    char *buf = size ? malloc(size) : NULL;
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        uint64_t number;
        if (cid_parse_number(argv[i], &number) != CID_OK) { rc = 64; continue; }
        size_t full = 0;
        cid_entry e;
        cid_status s = cid_lookup_copy(db, number, buf, size, &full, &e);
        if (CID_FAILED(s)) { rc = report(s); continue; }
        /* The copy is NUL-terminated and e.label points to it. */
        printf("%s\t%" PRIu64 "\t%zu\t%s\n", cid_status_name(s), number, full, buf ? buf : "");
        if (s == CID_OK && e.label_len != full) { fprintf(stderr, "error: label_len %zu != %zu\n", e.label_len, full); rc = 1; }
    }
    free(buf);
    return rc;
}

static int cmd_batch(cid_db *db, int argc, char **argv) {
    uint64_t *numbers = calloc((size_t)argc + 1, sizeof *numbers);
    cid_entry *results = calloc((size_t)argc + 1, sizeof *results);
    size_t n = 0, found = 0;
    for (int i = 0; i < argc; i++)
        if (cid_parse_number(argv[i], &numbers[n]) == CID_OK) n++;
    cid_status s = cid_lookup_batch(db, numbers, n, results, &found);
    int rc = 0;
    if (s != CID_OK) {
        rc = report(s);
    } else {
        for (size_t i = 0; i < n; i++) {
            if (results[i].category) print_found(&results[i]);
            else printf("not-found\t%" PRIu64 "\n", results[i].number);
        }
        printf("batch\t%zu of %zu found\n", found, n);
    }
    free(numbers);
    free(results);
    return rc;
}

/* ---- cursors ------------------------------------------------------------------------- */

/* Parses --from/--action/--category/--limit from argv; other arguments are left in `rest`. */
typedef struct {
    uint64_t from;
    long long limit;
    cid_filter filter;
    const char *names[64];
    int use_filter;
} cursor_options;

static int parse_cursor_options(int argc, char **argv, cursor_options *o, char **rest, int *rest_count) {
    memset(o, 0, sizeof *o);
    o->limit = -1;
    o->filter.action = CID_ANY_ACTION;
    o->filter.categories = o->names;
    *rest_count = 0;
    for (int i = 0; i < argc; i++) {
        if (i + 1 < argc && strcmp(argv[i], "--from") == 0) {
            if (cid_parse_number(argv[++i], &o->from) != CID_OK) return 0;
        } else if (i + 1 < argc && strcmp(argv[i], "--action") == 0) {
            const char *a = argv[++i];
            if (strcmp(a, "identify") == 0) o->filter.action = CID_ACTION_IDENTIFY;
            else if (strcmp(a, "block") == 0) o->filter.action = CID_ACTION_BLOCK;
            else return 0;
            o->use_filter = 1;
        } else if (i + 1 < argc && strcmp(argv[i], "--category") == 0) {
            if (o->filter.category_count >= 64) return 0;
            o->names[o->filter.category_count++] = argv[++i];
            o->use_filter = 1;
        } else if (i + 1 < argc && strcmp(argv[i], "--limit") == 0) {
            o->limit = atoll(argv[++i]);
        } else {
            rest[(*rest_count)++] = argv[i];
        }
    }
    return 1;
}

static int drain(cid_cursor *c, long long limit, int with_source) {
    cid_entry e;
    cid_status s;
    long long n = 0;
    while ((limit < 0 || n < limit) && (s = cid_cursor_next(c, &e)) == CID_OK) {
        print_entry(&e, with_source);
        n++;
    }
    int rc = (limit >= 0 && n == limit) || s == CID_END ? 0 : report(s);
    cid_cursor_free(c);
    return rc;
}

static int cmd_dump(cid_db *db, int argc, char **argv) {
    cursor_options o;
    char *rest[256];
    int rest_count;
    if (argc > 256 || !parse_cursor_options(argc, argv, &o, rest, &rest_count) || rest_count) return usage();
    cid_cursor *c;
    cid_status s = cid_cursor_open(db, o.from, o.use_filter ? &o.filter : NULL, &c);
    if (s != CID_OK) return report(s);
    return drain(c, o.limit, 0);
}

static int cmd_merge(cid_db *db, int verify, int argc, char **argv) {
    cursor_options o;
    char *rest[256];
    int rest_count;
    if (argc > 256 || !parse_cursor_options(argc, argv, &o, rest, &rest_count) || rest_count == 0) return usage();
    cid_db *dbs[257];
    dbs[0] = db;
    int opened = 1, rc = 0;
    for (int i = 0; i < rest_count; i++) {
        cid_status s = cid_open(rest[i], verify ? CID_OPEN_VERIFY : CID_OPEN_DEFAULT, &dbs[opened]);
        if (s != CID_OK) { rc = report(s); break; }
        opened++;
    }
    if (rc == 0) {
        cid_cursor *c;
        cid_status s = cid_cursor_open_merged(dbs, (size_t)opened, o.from, o.use_filter ? &o.filter : NULL, &c);
        /* The cursor keeps every database mapped: the handles may be closed right away. */
        for (int i = 1; i < opened; i++) cid_close(dbs[i]);
        opened = 1;
        rc = s == CID_OK ? drain(c, o.limit, 1) : report(s);
    }
    for (int i = 1; i < opened; i++) cid_close(dbs[i]);
    return rc;
}

/* ---- threads ------------------------------------------------------------------------- */

typedef struct {
    cid_db *db;
    const uint64_t *numbers;
    size_t count;
    long lookups;
    int index;
    uint64_t checksum, found, scan_checksum, scanned;
    cid_status status;
} worker;

static void *work(void *arg) {
    worker *w = arg;
    cid_entry e;
    for (long i = 0; i < w->lookups; i++) {
        uint64_t number = w->numbers[((size_t)i + (size_t)w->index * 7919u) % w->count];
        cid_status s = cid_lookup(w->db, number, &e);
        if (s == CID_OK) {
            w->checksum += entry_mix(&e);
            w->found++;
        } else if (s != CID_NOT_FOUND) {
            w->status = s;
            return NULL;
        }
    }
    /* Each thread also runs its own cursor over the shared handle. */
    cid_cursor *c;
    cid_status s = cid_cursor_open(w->db, 0, NULL, &c);
    if (s != CID_OK) { w->status = s; return NULL; }
    while ((s = cid_cursor_next(c, &e)) == CID_OK) {
        w->scan_checksum += entry_mix(&e);
        w->scanned++;
    }
    if (s != CID_END) w->status = s;
    cid_cursor_free(c);
    return NULL;
}

static int cmd_threads(cid_db *db, int argc, char **argv) {
    if (argc != 3) return usage();
    int threads = atoi(argv[0]);
    long lookups = atol(argv[1]);
    if (threads < 1 || threads > 256 || lookups < 0) return usage();
    FILE *f = fopen(argv[2], "r");
    if (!f) { perror(argv[2]); return 66; }
    size_t cap = 1024, n = 0;
    uint64_t *numbers = malloc(cap * sizeof *numbers);
    char line[256];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0]) continue;
        if (n == cap) numbers = realloc(numbers, (cap *= 2) * sizeof *numbers);
        if (cid_parse_number(line, &numbers[n]) == CID_OK) n++;
    }
    fclose(f);
    if (n == 0) { fprintf(stderr, "error: no numbers in %s\n", argv[2]); free(numbers); return 65; }

    worker w[256];
    pthread_t tid[256];
    for (int t = 0; t < threads; t++) {
        w[t] = (worker){ .db = db, .numbers = numbers, .count = n, .lookups = lookups, .index = t };
        pthread_create(&tid[t], NULL, work, &w[t]);
    }
    uint64_t checksum = 0, found = 0;
    int rc = 0, scans_agree = 1;
    for (int t = 0; t < threads; t++) {
        pthread_join(tid[t], NULL);
        if (w[t].status != CID_OK) {
            fprintf(stderr, "error: thread %d: %s\n", t, cid_status_name(w[t].status));
            rc = exit_code(w[t].status);
        }
        checksum += w[t].checksum;
        found += w[t].found;
        if (w[t].scan_checksum != w[0].scan_checksum || w[t].scanned != w[0].scanned) scans_agree = 0;
    }
    printf("threads\t%d\tlookups\t%ld\tfound\t%" PRIu64 "\tchecksum\t%016" PRIx64 "\n", threads,
           lookups * threads, found, checksum);
    printf("scan\t%" PRIu64 "\tchecksum\t%016" PRIx64 "\tagree\t%s\n", w[0].scanned, w[0].scan_checksum,
           scans_agree ? "yes" : "no");
    free(numbers);
    return rc;
}

/* ---- info, verify, selftest ---------------------------------------------------------- */

static int cmd_info(cid_db *db) {
    uint64_t count = 0;
    uint32_t categories = 0;
    cid_status s;
    if ((s = cid_count(db, &count)) != CID_OK || (s = cid_category_count(db, &categories)) != CID_OK) return report(s);
    printf("version\t%s\nformat\t%s\nentries\t%" PRIu64 "\n", cid_version(), cid_format_version(), count);
    for (uint32_t i = 0; i < categories; i++) {
        const char *name;
        uint32_t action;
        if ((s = cid_category(db, i, &name, &action)) != CID_OK) return report(s);
        printf("category\t%u\t%s\t%s\n", i, name, action_name(action));
    }
    return 0;
}

static int failures;

static void check(int ok, const char *what) {
    printf("%s\t%s\n", ok ? "ok" : "FAIL", what);
    if (!ok) failures++;
}

static int cmd_selftest(const char *path) {
    cid_db *db = NULL, *db2 = NULL;
    cid_entry e;
    uint64_t n = 0;
    char buf[8];
    check(cid_open(path, CID_OPEN_DEFAULT, &db) == CID_OK && db != NULL, "open");
    check(cid_open(NULL, 0, &db2) == CID_ERR_INVALID_ARGUMENT && db2 == NULL, "open NULL path");
    check(cid_open(path, 0, NULL) == CID_ERR_INVALID_ARGUMENT, "open NULL out");
    check(cid_open(path, 0x80, &db2) == CID_ERR_INVALID_ARGUMENT && strstr(cid_last_error_message(), "flags"),
          "open unknown flag");
    check(cid_last_error_status() == CID_ERR_INVALID_ARGUMENT, "last error status");
    check(cid_lookup(NULL, 1, &e) == CID_ERR_INVALID_ARGUMENT, "lookup NULL db");
    check(cid_lookup(db, 1, NULL) == CID_ERR_INVALID_ARGUMENT, "lookup NULL out");
    check(cid_lookup(db, 0, &e) == CID_NOT_FOUND && e.category == NULL && e.label == NULL
              && e.category_index == CID_NO_CATEGORY, "lookup 0 not found");
    check(cid_lookup(db, UINT64_MAX, &e) == CID_NOT_FOUND, "lookup UINT64_MAX not found");
    check(cid_lookup_copy(db, 1, NULL, 5, NULL, NULL) == CID_ERR_INVALID_ARGUMENT, "copy NULL buf, size 5");
    check(cid_lookup_copy(db, 1, buf, sizeof buf, NULL, NULL) == CID_NOT_FOUND && buf[0] == 0, "copy not found gives \"\"");
    check(cid_lookup_batch(db, NULL, 3, &e, NULL) == CID_ERR_INVALID_ARGUMENT, "batch NULL numbers");
    check(cid_lookup_batch(db, NULL, 0, NULL, &n) == CID_OK, "batch of 0");
    check(cid_count(db, NULL) == CID_ERR_INVALID_ARGUMENT, "count NULL out");
    check(cid_category(db, 100000, NULL, NULL) == CID_ERR_INVALID_ARGUMENT, "category index out of range");
    check(cid_parse_number("0913", &n) == CID_ERR_INVALID_NUMBER && strstr(cid_last_error_message(), "leading zero"),
          "parse leading zero");
    check(cid_parse_number("+7 (913) 123-45-67", &n) == CID_OK && n == 79131234567ULL, "parse written form");
    check(cid_parse_number(NULL, &n) == CID_ERR_INVALID_ARGUMENT, "parse NULL");

    cid_filter bad = { 7, 0, NULL };
    cid_cursor *c = NULL;
    check(cid_cursor_open(db, 0, &bad, &c) == CID_ERR_INVALID_ARGUMENT && c == NULL, "cursor bad action");
    cid_filter no_names = { CID_ANY_ACTION, 2, NULL };
    check(cid_cursor_open(db, 0, &no_names, &c) == CID_ERR_INVALID_ARGUMENT, "cursor NULL names");
    check(cid_cursor_open_merged(NULL, 1, 0, NULL, &c) == CID_ERR_INVALID_ARGUMENT, "merged NULL dbs");
    check(cid_cursor_open_merged((cid_db *const *)&db, 0, 0, NULL, &c) == CID_ERR_INVALID_ARGUMENT, "merged count 0");
    check(cid_cursor_next(NULL, &e) == CID_ERR_INVALID_ARGUMENT, "next NULL cursor");

    /* A cursor outlives the handle it came from. */
    check(cid_cursor_open(db, 0, NULL, &c) == CID_OK, "cursor open");
    check(cid_cursor_next(c, NULL) == CID_ERR_INVALID_ARGUMENT, "next NULL out");
    check(cid_close((cid_db *)c) == CID_ERR_BAD_HANDLE, "close a cursor as a db");
    check(cid_cursor_free((cid_cursor *)db) == CID_ERR_BAD_HANDLE, "free a db as a cursor");
    check(cid_lookup((cid_db *)c, 1, &e) == CID_ERR_BAD_HANDLE, "lookup on a cursor");
    check(cid_close(db) == CID_OK, "close");
    check(cid_close(db) == CID_ERR_BAD_HANDLE, "close twice");
    check(cid_verify(db) == CID_ERR_BAD_HANDLE, "verify after close");
    cid_cursor *c2 = NULL;
    check(cid_cursor_open(db, 0, NULL, &c2) == CID_ERR_BAD_HANDLE && c2 == NULL, "cursor open after close");
    /* Handles are checked against the library's handle table, never by reading freed memory. */
    check(cid_lookup(db, 1, &e) == CID_ERR_BAD_HANDLE, "lookup after close");
    uint64_t count = 0;
    int seen = 0;
    while (cid_cursor_next(c, &e) == CID_OK) seen++;
    check(cid_cursor_next(c, &e) == CID_END, "cursor stays at end");
    check(cid_open(path, 0, &db) == CID_OK && cid_count(db, &count) == CID_OK && (uint64_t)seen == count,
          "cursor outlived its handle and saw every entry");
    check(cid_cursor_free(c) == CID_OK, "cursor free");
    check(cid_cursor_free(c) == CID_ERR_BAD_HANDLE, "cursor free twice");
    check(cid_cursor_free(NULL) == CID_OK && cid_close(NULL) == CID_OK, "free/close NULL");
    check(strcmp(cid_status_name(CID_ERR_CORRUPT), "corrupt") == 0 && strcmp(cid_status_name(12345), "unknown") == 0,
          "status names");
    cid_close(db);
    printf("selftest\t%s\n", failures ? "FAILED" : "passed");
    return failures ? 1 : 0;
}

int main(int argc, char **argv) {
    int verify = 0, a = 1;
    if (a < argc && strcmp(argv[a], "--verify") == 0) { verify = 1; a++; }
    if (argc - a < 2) return usage();
    const char *path = argv[a], *cmd = argv[a + 1];
    int rest = a + 2;
    if (strcmp(cmd, "selftest") == 0) return cmd_selftest(path);

    cid_db *db = NULL;
    cid_status s = cid_open(path, verify ? CID_OPEN_VERIFY : CID_OPEN_DEFAULT, &db);
    if (s != CID_OK) return report(s);

    int rc;
    if (strcmp(cmd, "info") == 0) rc = cmd_info(db);
    else if (strcmp(cmd, "verify") == 0) rc = (s = cid_verify(db)) == CID_OK ? (printf("verify\tok\n"), 0) : report(s);
    else if (strcmp(cmd, "lookup") == 0) rc = cmd_lookup(db, argc - rest, argv + rest);
    else if (strcmp(cmd, "copy") == 0) rc = cmd_copy(db, argc - rest, argv + rest);
    else if (strcmp(cmd, "match") == 0) rc = cmd_match(db, argc - rest, argv + rest);
    else if (strcmp(cmd, "batch") == 0) rc = cmd_batch(db, argc - rest, argv + rest);
    else if (strcmp(cmd, "dump") == 0) rc = cmd_dump(db, argc - rest, argv + rest);
    else if (strcmp(cmd, "merge") == 0) rc = cmd_merge(db, verify, argc - rest, argv + rest);
    else if (strcmp(cmd, "threads") == 0) rc = cmd_threads(db, argc - rest, argv + rest);
    else rc = usage();
    cid_close(db);
    return rc;
}
