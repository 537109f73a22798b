// CSQLite: Debian's libsqlite3 for the benchmark harness (never part of the product).
// SQLITE_STATIC / SQLITE_TRANSIENT are casts that Swift cannot import: wrap the binds.
#ifndef CSQLITE_H
#define CSQLITE_H
#include <sqlite3.h>

/// Binds `n` bytes of UTF-8 at `p` without copying; `p` must stay valid until the next step/reset.
static inline int csqlite_bind_text_static(sqlite3_stmt *s, int i, const void *p, int n) {
    return sqlite3_bind_text(s, i, (const char *)p, n, SQLITE_STATIC);
}
#endif
