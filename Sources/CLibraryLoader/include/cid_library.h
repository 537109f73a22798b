// Opening a shared library at first use (dlopen) and resolving its functions: the package's one
// loader, for the C shims over libsodium, libcurl and libmicrohttpd and for the pipeline's
// libcallerid-phonenumber, which the tool opens only when a command needs them, so that a
// one-number lookup starts without loading them.
#ifndef CID_LIBRARY_H
#define CID_LIBRARY_H

#include <stddef.h>

// A function to resolve: its name in the library and where to store its address.
typedef struct cid_symbol {
    const char *name;
    void **address;
} cid_symbol;

// Opens the first of `names` (a NULL-terminated list of file names, most specific first) that
// loads, with RTLD_NOW | RTLD_LOCAL. On failure returns NULL and writes
// "LIBRARY is not installed (Debian: apt-get install PACKAGE): <dlerror>" into `error`.
void *cid_library_open(const char *const names[], const char *library, const char *package,
                       char *error, size_t error_size);

// Resolves every symbol of `symbols` (ended by an entry whose name is NULL) in `handle`. Returns
// 1 when all are found; else 0, with "LIBRARY lacks NAME" and then `hint` (may be "") in `error`.
int cid_library_resolve(void *handle, const cid_symbol symbols[], const char *library, const char *hint,
                        char *error, size_t error_size);

// The address of `name` in `handle`, or NULL when the library lacks it (an optional function,
// or a probe for a library's version).
void *cid_library_symbol(void *handle, const char *name);

// Closes a library opened by cid_library_open that the caller turned down.
void cid_library_close(void *handle);

#endif
