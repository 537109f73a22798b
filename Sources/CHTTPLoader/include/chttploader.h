// CHTTPLoader: HTTP GET through libcurl, opened with dlopen at the first request. The `lookup`
// tool never links libcurl: its start-up (measured against sqlite3, BENCHMARKS.md) does not pay
// for loading libcurl, OpenSSL and their dependencies; only `lookup fetch` does.
#ifndef CHTTPLOADER_H
#define CHTTPLOADER_H

#include <stddef.h>

/// Receives each piece of the body with the response's HTTP status; returns 0 to go on,
/// anything else to abort the transfer.
typedef int (*cid_http_body_fn)(const void *data, size_t length, long status, void *context);

/// Called about once a second whatever arrives (and as body bytes arrive) with the body bytes
/// received so far; returns 0 to go on, anything else to abort the transfer (a deadline).
typedef int (*cid_http_tick_fn)(long long received, void *context);

enum {
    CID_HTTP_OK = 0,          ///< the transfer completed, or ended at a status of 400 or more
    CID_HTTP_NO_LIBRARY = 1,  ///< libcurl could not be loaded (message in `error`)
    CID_HTTP_FAILED = 2,      ///< connection refused, reset, timed out, body cut short…
    CID_HTTP_ABORTED = 3,     ///< the body or tick callback asked to stop
};

/// GET `url`; when `range_start` > 0 asks for `Range: bytes=range_start-`. Body pieces go to
/// `body`, and `tick` is called about once a second; both get `context`. `*status` receives
/// the HTTP status (0 when none arrived); a status of 400 or more ends the transfer at the
/// status line (the error body is not read) and returns CID_HTTP_OK. `error` (`error_size`
/// bytes, at least 256) receives a message on failure. Redirects followed (at most 5), only
/// http and https; fails after `timeout_ms` in all (0: no limit).
int cid_http_get(const char *url, long long range_start, long connect_timeout_seconds, long timeout_ms,
                 cid_http_body_fn body, cid_http_tick_fn tick, void *context, long *status, char *error, size_t error_size);

#endif
