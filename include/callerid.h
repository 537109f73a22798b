/*
 * callerid.h — the C interface of CallerID (libcallerid.so).
 *
 * Read-only access to CallerID database files (*.cid, see docs/FORMAT.md): open, verify,
 * point lookups (zero-copy or copied), batch lookups, ascending cursors (from a number,
 * filtered by category) and a merged cursor over several databases.
 *
 * Conventions
 *   - Every symbol starts with `cid_` (types, functions) or `CID_` (constants, macros).
 *   - Functions return a cid_status: 0 (CID_OK) or a positive outcome (not found, end,
 *     truncated) is not a failure; a negative value is an error. A failing call stores a
 *     message for the calling thread, read with cid_last_error_message().
 *   - Numbers are E.164 numbers as unsigned integers: country code and national number,
 *     digits only (79131234567), 1 … 999,999,999,999,999. cid_parse_number() accepts
 *     written forms such as "+7 913 123-45-67".
 *   - Labels are UTF-8 and are handed out as a pointer + length; they are NOT
 *     NUL-terminated (use cid_lookup_copy() for a NUL-terminated copy).
 *   - Nothing the library does aborts the process on bad input: NULL pointers, closed
 *     or made-up handles, small buffers and damaged files all give error codes.
 *     Running out of memory still aborts, as in the Swift runtime.
 *
 * Threads
 *   - A cid_db may be used from any number of threads at once for every function that
 *     takes a cid_db.
 *   - cid_close() may run while other threads are inside calls on the same handle: each of
 *     those calls either completes normally (cid_close() waits for the calls that began
 *     before it) or returns CID_ERR_BAD_HANDLE (the calls that begin after it). What the
 *     caller must still guarantee: no thread reads a label or category pointer obtained from
 *     the handle (cid_lookup*, cid_category) once cid_close() has been called on it, since
 *     they point into the closed file; and no handle value is used after cid_close() returns
 *     except to get CID_ERR_BAD_HANDLE.
 *   - A cid_cursor belongs to one thread at a time: calls on one cursor must not overlap,
 *     cid_cursor_free() included (hand it to another thread only with your own
 *     synchronization). Different cursors, on the same database or not, run in parallel
 *     freely, and keep working after cid_close() of their database.
 *   - The last-error message is per thread.
 *
 * Link with: cc app.c $(pkg-config --cflags --libs callerid)   (see docs/C-ABI.md)
 */
#ifndef CALLERID_H
#define CALLERID_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Nullability annotations for Clang (Swift, Objective-C importers); empty elsewhere (GCC). */
#if defined(__clang__) && !defined(CID_NO_NULLABILITY)
#define CID_NULLABLE _Nullable
#define CID_NONNULL _Nonnull
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wnullability-extension"
#define CID_POP_DIAGNOSTICS 1
#else
#define CID_NULLABLE
#define CID_NONNULL
#endif

/* ---------------------------------------------------------------------------------------
 * Status codes
 * ------------------------------------------------------------------------------------- */

/* What a call did. Values are stable; new codes may be added (treat unknown negative
 * values as errors). cid_status_name() names each one. */
typedef enum cid_status {
    CID_OK = 0,                       /* success */
    CID_NOT_FOUND = 1,                /* lookup: the database does not hold the number */
    CID_END = 2,                      /* cursor: no more entries */
    CID_TRUNCATED = 3,                /* cid_lookup_copy: the label did not fit; a prefix was copied */

    CID_ERR_INVALID_ARGUMENT = -1,    /* a NULL pointer, unknown flag, bad index or non-UTF-8 text */
    CID_ERR_BAD_HANDLE = -2,          /* a handle that is closed/freed, of the wrong kind or not a handle */
    CID_ERR_FILE_NOT_FOUND = -3,      /* the database file does not exist */
    CID_ERR_IO = -4,                  /* a system call failed (open, fstat, mmap, read…) */
    CID_ERR_CORRUPT = -5,             /* the file is damaged: bad magic, checksum, offset or content */
    CID_ERR_UNSUPPORTED_VERSION = -6, /* the file was written by an incompatible format version */
    CID_ERR_INVALID_NUMBER = -7,      /* cid_parse_number: text is not an E.164 number */
    CID_ERR_INTERNAL = -8,            /* an error the C layer does not classify (see the message) */
    CID_ERR_FILE_CHANGED = -9         /* the mapped file was modified in place while open (cid_check_file) */
} cid_status;

/* True when a status is an error (negative). */
#define CID_FAILED(status) ((int)(status) < 0)

/* The stable name of a status: "ok", "not-found", "end", "truncated", "invalid-argument",
 * "bad-handle", "file-not-found", "io", "corrupt", "unsupported-version", "invalid-number",
 * "internal", or "unknown" for any other value.
 * Returns a static NUL-terminated string: never NULL, never freed, valid forever.
 * Thread-safe. */
const char *CID_NONNULL cid_status_name(cid_status status);

/* The message of the last call that failed (returned a negative status) on the calling
 * thread, naming the file and damaged part where relevant; "" when no call has failed.
 * Successful calls leave it unchanged (like errno).
 * Returns a NUL-terminated string owned by the library, valid on this thread until its
 * next failing cid_ call or until the thread exits; copy it to keep it. Thread-safe
 * (each thread has its own). */
const char *CID_NONNULL cid_last_error_message(void);

/* The status of the last failing call on the calling thread, CID_OK if none.
 * Thread-safe (per thread). */
cid_status cid_last_error_status(void);

/* ---------------------------------------------------------------------------------------
 * Versions
 * ------------------------------------------------------------------------------------- */

/* The library's semantic version, such as "0.1.0".
 * Static NUL-terminated string: never NULL, never freed. Thread-safe. */
const char *CID_NONNULL cid_version(void);

/* The newest database format version this library reads and writes, such as "3.0". It reads
 * 2.x and 3.x files; it writes 2.0 unless a file's keys need 3.0's key codec (docs/FORMAT.md 9).
 * Static NUL-terminated string: never NULL, never freed. Thread-safe. */
const char *CID_NONNULL cid_format_version(void);

/* ---------------------------------------------------------------------------------------
 * Types
 * ------------------------------------------------------------------------------------- */

/* An open database (opaque). Created by cid_open(), destroyed by cid_close(). */
typedef struct cid_db cid_db;

/* A position in an ascending sequence of entries (opaque). Created by cid_cursor_open()
 * or cid_cursor_open_merged(), destroyed by cid_cursor_free(). */
typedef struct cid_cursor cid_cursor;

/* What a category asks of a caller-ID system. */
typedef enum cid_action {
    CID_ACTION_IDENTIFY = 0,          /* show the label */
    CID_ACTION_BLOCK = 1              /* block the call */
} cid_action;

/* cid_filter.action value selecting every action. */
#define CID_ANY_ACTION (-1)

/* cid_entry.category_index of a number that was not found. */
#define CID_NO_CATEGORY UINT32_MAX

/* Flags of cid_open(). */
#define CID_OPEN_DEFAULT 0u
#define CID_OPEN_VERIFY 1u            /* check every checksum and decode everything (O(file)) */
#define CID_OPEN_COPY 2u              /* read the file into private memory instead of mapping it:
                                         later changes to the file cannot affect the handle */

/* One entry as the library hands it out. Filled by the lookup and cursor functions; the
 * caller owns the struct, the library owns what its pointers point to (lifetimes are
 * given by the function that filled it). */
typedef struct cid_entry {
    uint64_t number;                  /* the E.164 number */
    const char *CID_NULLABLE label;   /* UTF-8 label, NOT NUL-terminated; non-NULL when found */
    size_t label_len;                 /* bytes at `label` (0 for an empty label) */
    const char *CID_NULLABLE category;/* NUL-terminated category name; NULL when not found */
    uint32_t category_index;          /* index for cid_category() of the source database;
                                         CID_NO_CATEGORY when not found */
    uint32_t action;                  /* a cid_action (CID_ACTION_IDENTIFY when not found) */
    uint32_t source;                  /* merged cursor: index of the database the entry came
                                         from; 0 everywhere else */
    uint32_t reserved;                /* 0 */
} cid_entry;

/* Selects entries for a cursor. Both conditions apply: an entry is returned when its
 * category's action matches `action` (or action is CID_ANY_ACTION) and, when
 * category_count > 0, its category name is one of `categories`. */
typedef struct cid_filter {
    int32_t action;                   /* CID_ANY_ACTION, CID_ACTION_IDENTIFY or CID_ACTION_BLOCK */
    uint32_t category_count;          /* 0: any category */
    const char *CID_NULLABLE const *CID_NULLABLE categories; /* category_count NUL-terminated names */
} cid_filter;

#if (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L) || defined(__cplusplus)
#ifdef __cplusplus
#define CID_STATIC_ASSERT(c, m) static_assert(c, m)
#else
#define CID_STATIC_ASSERT(c, m) _Static_assert(c, m)
#endif
/* The library writes these structs at these offsets (natural C layout). */
CID_STATIC_ASSERT(offsetof(cid_entry, label) == 8, "cid_entry layout");
CID_STATIC_ASSERT(offsetof(cid_entry, label_len) == 8 + sizeof(void *), "cid_entry layout");
CID_STATIC_ASSERT(offsetof(cid_entry, category) == 8 + 2 * sizeof(void *), "cid_entry layout");
CID_STATIC_ASSERT(offsetof(cid_entry, category_index) == 8 + 3 * sizeof(void *), "cid_entry layout");
CID_STATIC_ASSERT(offsetof(cid_entry, reserved) == 20 + 3 * sizeof(void *), "cid_entry layout");
CID_STATIC_ASSERT(offsetof(cid_filter, categories) == 8, "cid_filter layout");
#endif

/* ---------------------------------------------------------------------------------------
 * Numbers
 * ------------------------------------------------------------------------------------- */

/* Parses a written number ("+7 913 123-45-67", "79131234567", "+7 (913) 123.45.67"):
 * spaces, tabs, NBSP, '-', '.', '(', ')', '/' are ignored, one leading '+' is allowed;
 * national forms with a leading 0 are refused.
 * `text`: NUL-terminated, borrowed for the call. `out`: receives the number on CID_OK.
 * Returns CID_OK, CID_ERR_INVALID_NUMBER (message says why) or CID_ERR_INVALID_ARGUMENT.
 * Thread-safe. */
cid_status cid_parse_number(const char *CID_NULLABLE text, uint64_t *CID_NULLABLE out);

/* ---------------------------------------------------------------------------------------
 * Opening and closing
 * ------------------------------------------------------------------------------------- */

/* Opens and memory-maps the database at `path` (NUL-terminated UTF-8, borrowed for the
 * call). Opening validates the header, the section table and every offset the reader uses
 * (O(blocks)); with CID_OPEN_VERIFY it also checks every checksum and decodes everything.
 * On CID_OK, *out_db receives a new handle that the caller owns and must pass to
 * cid_close() exactly once. By default the file is mapped: replace a database that is open
 * by renaming a new file over its path (open handles keep reading the old file), never by
 * writing over it in place (cp, >, truncate), which can make a later lookup read changed
 * bytes or die of SIGBUS; cid_check_file() detects that case. With CID_OPEN_COPY the file
 * is read into memory (its size in RAM) and the handle is immune to such changes.
 * On failure *out_db is set to NULL and the status is one of
 * CID_ERR_FILE_NOT_FOUND, CID_ERR_IO, CID_ERR_CORRUPT, CID_ERR_UNSUPPORTED_VERSION or
 * CID_ERR_INVALID_ARGUMENT (NULL path/out_db, unknown flag, path not UTF-8).
 * Thread-safe: any thread may open databases at any time. */
cid_status cid_open(const char *CID_NULLABLE path, uint32_t flags, cid_db *CID_NULLABLE *CID_NULLABLE out_db);

/* Closes a handle from cid_open(). Label and category pointers obtained from lookups on
 * this handle become invalid. Cursors created from it stay valid (they keep the file
 * mapped until they are freed).
 * NULL is accepted and does nothing (CID_OK). Closing a handle twice, or a pointer that
 * is not an open handle, returns CID_ERR_BAD_HANDLE.
 * Thread-safe against calls on the same handle in other threads: it waits for the calls
 * that began before it to return (a long cid_verify() keeps it waiting), and the calls that
 * begin after it return CID_ERR_BAD_HANDLE. The labels and category names those calls hand
 * out must not be read once cid_close() has been called (see Threads above). */
cid_status cid_close(cid_db *CID_NULLABLE db);

/* Checks every checksum and decodes every block and label chunk (O(file size)).
 * Returns CID_OK, CID_ERR_CORRUPT (message names the damaged part), CID_ERR_FILE_CHANGED
 * (see cid_check_file), CID_ERR_BAD_HANDLE or CID_ERR_INVALID_ARGUMENT.
 * Thread-safe: may run while other threads look up. */
cid_status cid_verify(cid_db *CID_NULLABLE db);

/* Cheap check (one stat of the path, no read of the data) that the handle's file was not
 * modified in place since cid_open(): returns CID_ERR_FILE_CHANGED when the opened file's
 * size, mtime or ctime changed and the handle maps it (stop using the handle, close it and
 * reopen); CID_OK otherwise, including when the path was replaced by rename or removed
 * (the handle still reads its own intact file) and for CID_OPEN_COPY handles.
 * CID_ERR_BAD_HANDLE for a handle that is not open. Thread-safe. Long-running readers call
 * it from time to time (e.g. every few thousand lookups or seconds), not on every lookup. */
cid_status cid_check_file(cid_db *CID_NULLABLE db);

/* The number of entries (distinct numbers) into *out. Thread-safe. */
cid_status cid_count(cid_db *CID_NULLABLE db, uint64_t *CID_NULLABLE out);

/* The number of categories of the database (1…256) into *out. Thread-safe. */
cid_status cid_category_count(cid_db *CID_NULLABLE db, uint32_t *CID_NULLABLE out);

/* Category `index` (0 ≤ index < cid_category_count): its NUL-terminated name into *name
 * (owned by the library, valid until cid_close(db)) and its cid_action into *action;
 * either output may be NULL. CID_ERR_INVALID_ARGUMENT for an index out of range.
 * Thread-safe. */
cid_status cid_category(cid_db *CID_NULLABLE db, uint32_t index,
                        const char *CID_NULLABLE *CID_NULLABLE name, uint32_t *CID_NULLABLE action);

/* ---------------------------------------------------------------------------------------
 * Lookups
 * ------------------------------------------------------------------------------------- */

/* Looks `number` up. On CID_OK fills *out. out->category stays valid until cid_close(db).
 * out->label stays valid until the calling thread's next cid_lookup() or
 * cid_lookup_batch() (on any handle), or cid_close(db), whichever comes first: a frequent
 * ("hot") label points into the mapped file (zero-copy), any other is decoded into
 * memory of the calling thread (at most 64 KiB kept between calls). Copy it to keep it,
 * or use cid_lookup_copy(). On CID_NOT_FOUND *out is set to
 * { number, NULL, 0, NULL, CID_NO_CATEGORY, 0, 0, 0 }. Numbers outside the E.164 range
 * are simply not found. Errors: CID_ERR_CORRUPT when the part of the file this lookup
 * touched is damaged (open with CID_OPEN_VERIFY to rule that out), CID_ERR_BAD_HANDLE,
 * CID_ERR_INVALID_ARGUMENT (NULL db or out); *out is then as for not found.
 * No cache grows with the lookups made: the per-thread label memory above is all.
 * Thread-safe: any number of threads may look up on one handle at once. */
cid_status cid_lookup(cid_db *CID_NULLABLE db, uint64_t number, cid_entry *CID_NULLABLE out);

/* How cid_lookup_match() answered (its *match). */
#define CID_MATCH_NONE 0u             /* not found (or an error) */
#define CID_MATCH_ENTRY 1u            /* the database holds the number itself */
#define CID_MATCH_RANGE 2u            /* no entry: the range [*range_first, *range_last] holding it */

/* As cid_lookup(), but a number without an entry falls back to the range of the database's
 * optional ranges section (a numbering plan: `lookup build --keep-ranges`) that holds it:
 * an exact entry always wins, a number in no range is CID_NOT_FOUND. *out is filled as by
 * cid_lookup() (out->number is `number`; the label and category are the range's), with the
 * same lifetimes. `match`, `range_first` and `range_last` may each be NULL; they receive
 * CID_MATCH_ENTRY and number, number for an entry, CID_MATCH_RANGE and the range's bounds
 * for a range, CID_MATCH_NONE and 0, 0 when not found or on an error. A database without
 * ranges answers exactly as cid_lookup(). Errors as cid_lookup() (CID_ERR_CORRUPT also for a
 * damaged part of the ranges section). Thread-safe as cid_lookup(). */
cid_status cid_lookup_match(cid_db *CID_NULLABLE db, uint64_t number, cid_entry *CID_NULLABLE out,
                            uint32_t *CID_NULLABLE match, uint64_t *CID_NULLABLE range_first,
                            uint64_t *CID_NULLABLE range_last);

/* Looks `number` up and copies its label into `buf` (caller-owned, `buf_size` bytes),
 * NUL-terminated. When the label needs more than buf_size - 1 bytes, the longest prefix
 * that fits and ends on a UTF-8 character boundary is copied (still NUL-terminated) and
 * CID_TRUNCATED is returned; call again with a buffer of *label_len + 1 bytes.
 * `buf` may be NULL only when buf_size is 0 (a length query, returns CID_TRUNCATED for a
 * non-empty label). `label_len` (may be NULL) receives the full label length in bytes.
 * `out` (may be NULL) is filled as by cid_lookup() except that out->label points to `buf`
 * and out->label_len is the number of bytes copied (excluding the NUL).
 * Returns CID_OK, CID_TRUNCATED, CID_NOT_FOUND (buf gets "" when buf_size > 0) or an
 * error as cid_lookup(). Thread-safe as cid_lookup(). */
cid_status cid_lookup_copy(cid_db *CID_NULLABLE db, uint64_t number, char *CID_NULLABLE buf, size_t buf_size,
                           size_t *CID_NULLABLE label_len, cid_entry *CID_NULLABLE out);

/* Looks up `count` numbers: results[i] is filled for numbers[i] as by cid_lookup()
 * (results[i].category == NULL means not found). `numbers` and `results` are caller-owned
 * arrays of `count` elements (may be NULL when count is 0); labels stay valid as for
 * cid_lookup(): until the calling thread's next lookup call or cid_close(db) (the thread
 * holds the decoded labels of this call meanwhile). `found` (may be NULL) receives how many were found.
 * Returns CID_OK when every lookup ran (found or not). On an error (a damaged part of the
 * file) it stops, marks the remaining results not found and returns the error.
 * Thread-safe as cid_lookup(). */
cid_status cid_lookup_batch(cid_db *CID_NULLABLE db, const uint64_t *CID_NULLABLE numbers, size_t count,
                            cid_entry *CID_NULLABLE results, size_t *CID_NULLABLE found);

/* ---------------------------------------------------------------------------------------
 * Cursors
 * ------------------------------------------------------------------------------------- */

/* Creates a cursor over the entries of `db` in ascending order, starting at the first
 * number >= `from`, keeping those that match `filter` (NULL: all). The filter is copied;
 * it and its strings are borrowed only for the call. Heap use is fixed at creation and does
 * not grow with the file: the keys and value ids of one block (at most 12 KiB) plus a
 * buffer for the longest label it decodes (at most 64 KiB). To resume later, open a new cursor from the last number seen + 1.
 * On CID_OK *out receives a cursor the caller owns and must free with cid_cursor_free().
 * The cursor keeps the database mapped: it stays usable after cid_close(db).
 * Errors (*out set to NULL): CID_ERR_INVALID_ARGUMENT (NULL db/out, bad filter),
 * CID_ERR_BAD_HANDLE. A damaged file is reported by cid_cursor_next().
 * Thread-safe with respect to `db`; the new cursor belongs to one thread at a time. */
cid_status cid_cursor_open(cid_db *CID_NULLABLE db, uint64_t from, const cid_filter *CID_NULLABLE filter,
                           cid_cursor *CID_NULLABLE *CID_NULLABLE out);

/* Creates a cursor over the union of `count` databases (1 ≤ count ≤ 65535), in strictly
 * ascending order without duplicates: when several databases hold a number, the entry of
 * the earliest database in `dbs` wins and the others are skipped. These are the rules of
 * the Swift merged stream: filter.action applies to each database before the merge (an
 * entry of the other action takes no part, so one database may identify a number that
 * another blocks); filter.categories applies to the winner (a winner of an unchosen
 * category is dropped and still hides later databases' entries for its number).
 * cid_entry.source is the index in `dbs` of the winner and category_index refers to that
 * database's categories.
 * `dbs` is borrowed for the call; the cursor keeps every database mapped. Heap: as
 * cid_cursor_open() per database, plus 64 KiB for cid_cursor_next_batch() labels.
 * Ownership, errors and threads as cid_cursor_open(). */
cid_status cid_cursor_open_merged(cid_db *CID_NULLABLE const *CID_NULLABLE dbs, size_t count, uint64_t from,
                                  const cid_filter *CID_NULLABLE filter, cid_cursor *CID_NULLABLE *CID_NULLABLE out);

/* Advances the cursor: CID_OK and *out filled with the next entry, or CID_END (out
 * untouched) when there are no more. out->category stays valid until the cursor is freed.
 * out->label stays valid only until the next call on this cursor (cid_cursor_next or
 * cid_cursor_next_batch or cid_cursor_free): it may point into the cursor's own decode
 * buffer; copy it to keep it. After an error (CID_ERR_CORRUPT for a damaged block or label) every
 * later call returns the same error.
 * Not thread-safe for one cursor: calls on a cursor must not overlap. */
cid_status cid_cursor_next(cid_cursor *CID_NULLABLE cursor, cid_entry *CID_NULLABLE out);

/* Advances the cursor by up to `capacity` entries at once (the fast way through a
 * database from another language: one call per batch, not per entry). Fills out[0 … n-1]
 * as cid_cursor_next() would, one after another, and stores n in *count: CID_OK with
 * 1 ≤ n ≤ capacity (fewer than asked when the batch's labels reach 64 KiB, or at most
 * 1024 per call on a single database), or CID_END with n = 0 when there are no more.
 * `out` is a caller-owned array of `capacity` entries. Every label handed out stays valid
 * until the next call on this cursor; categories until the cursor is freed.
 * Errors (*count = 0): CID_ERR_INVALID_ARGUMENT (NULL cursor, out or count, capacity 0),
 * CID_ERR_BAD_HANDLE, CID_ERR_CORRUPT (then every later call returns it too).
 * Not thread-safe for one cursor, as cid_cursor_next(). */
cid_status cid_cursor_next_batch(cid_cursor *CID_NULLABLE cursor, cid_entry *CID_NULLABLE out, size_t capacity,
                                 size_t *CID_NULLABLE count);

/* Frees a cursor and releases its hold on the database(s). Label pointers it handed out
 * become invalid. NULL is accepted and does nothing (CID_OK); freeing twice, or a pointer
 * that is not a cursor, returns CID_ERR_BAD_HANDLE.
 * Not concurrent with other calls on the same cursor. */
cid_status cid_cursor_free(cid_cursor *CID_NULLABLE cursor);

#ifdef __cplusplus
} /* extern "C" */
#endif

#ifdef CID_POP_DIAGNOSTICS
#undef CID_POP_DIAGNOSTICS
#pragma clang diagnostic pop
#endif

#endif /* CALLERID_H */
