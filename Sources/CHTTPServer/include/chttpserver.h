// CHTTPServer: the HTTP/1.1 server behind `lookup serve`, on Debian's libmicrohttpd (libmicrohttpd12),
// opened with dlopen when a server starts. The `lookup` tool never links it: `lookup NUMBER`
// starts without it (BENCHMARKS.md, "Start-up"); only `lookup serve` needs it installed.
//
// What libmicrohttpd does: the HTTP parsing, keep-alive, chunked bodies, epoll, one event loop per
// thread of a pool. What this layer adds: a listening socket of the caller's choosing, the request
// deadline (a request must arrive whole within `request_timeout_ms` of its connection's opening or
// of its previous answer, or the connection is closed: a slowloris client cannot hold a connection),
// the body limit, lock-free request counters and a latency histogram, the drain of a shutdown, and
// callbacks that hand each request to the caller (Sources/lookup/System/HTTPServer.swift).
#ifndef CHTTPSERVER_H
#define CHTTPSERVER_H

#include <stddef.h>
#include <stdint.h>

typedef struct cid_server cid_server;
/// One request, from its request line to its end.
typedef struct cid_exchange cid_exchange;

enum {
    CID_METHOD_OTHER = 0,
    CID_METHOD_GET = 1,
    CID_METHOD_HEAD = 2,
    CID_METHOD_POST = 3,
};

/// How many endpoints the counters tell apart (the caller numbers them 0 ..< CID_ENDPOINTS);
/// endpoint 0 counts the requests answered by the HTTP layer itself (malformed, too large).
#define CID_ENDPOINTS 9
/// Statuses counted: 100 ... 599, by `status - 100`.
#define CID_STATUSES 500
/// Header lines of a request at most (431 beyond), besides `max_header_bytes`.
#define CID_MAX_HEADER_LINES 256
/// Latency histogram buckets at most (upper bounds in nanoseconds), plus one for the rest.
#define CID_MAX_BUCKETS 24

/// A request whose headers are complete.
typedef struct {
    int method;                    ///< CID_METHOD_*
    const char *method_name;       ///< as sent
    const char *path;              ///< percent-decoded, without the query; escapes that are not two hex digits, and %00, stay as written
    const char *country;           ///< the decoded `country` query argument, NULL when absent
    const char *query;             ///< the query as sent (after `?`, undecoded), NULL when absent
    const char *authorization;     ///< the Authorization header, NULL when absent
    const char *forwarded_for;     ///< the X-Forwarded-For header, NULL when absent
    const char *client;            ///< the peer's address ("" when unknown or not asked for: `want_client`)
    const char *content_type;      ///< NULL when absent
    long long content_length;      ///< -1 when absent (no body, or a chunked one)
} cid_request;

/// A finished request, for the access log.
typedef struct {
    const char *method;            ///< as sent ("" when the request line was never complete)
    const char *uri;               ///< as sent, with its query; NULL unless `keep_uris`
    const char *client;            ///< the peer's address
    const char *label;             ///< what cid_exchange_set_label gave (NULL: nothing)
    unsigned status;               ///< the status sent (0: none)
    int endpoint;
    int completed;                 ///< 1: answered whole; 0: the client went away or the connection was cut
    unsigned long long body_bytes;         ///< request body bytes received
    unsigned long long response_bytes;     ///< response body bytes handed to the connection
    unsigned long long nanoseconds;        ///< from the request line to the end
} cid_completion;

/// What the server calls, each on the thread of the request's connection. `context` is the
/// config's. A request is answered by exactly one call of cid_respond or cid_respond_stream,
/// from `request` (no body) or `body_end` (after cid_accept_body).
typedef struct {
    /// The headers are complete: answer now, or accept a body with cid_accept_body.
    /// Returning without either closes the connection.
    void (*request)(void *context, cid_exchange *x, const cid_request *request);
    /// The HTTP layer refuses the request itself (`status`, `reason`: one sentence), before or
    /// instead of `request`: answer with cid_respond under endpoint 0, the body worded as the
    /// route of `path` words its errors (a caller-name route sends none). `path` as in cid_request.
    void (*refuse)(void *context, cid_exchange *x, const char *path, unsigned status, const char *reason);
    /// A piece of an accepted body (the pieces in order, never more than `max_body_bytes` in all).
    void (*body)(void *context, void *body, const void *bytes, size_t size);
    /// The whole body arrived: answer it. `body` is released right after.
    void (*body_end)(void *context, cid_exchange *x, void *body);
    /// The next bytes of a streamed answer into `buffer` (at most `capacity`): their count (> 0),
    /// -1 at the end, -2 to stop with an error (the connection is closed).
    long (*read)(void *context, void *stream, void *buffer, size_t capacity);
    /// A body or stream given to the server is no longer used.
    void (*release)(void *context, void *state);
    /// A request ended (also one the HTTP layer refused, and one cut short).
    void (*completed)(void *context, const cid_completion *completion);
} cid_handlers;

typedef struct {
    int listen_fd;                      ///< a bound, listening socket (cid_listen); the server owns it
    unsigned threads;                   ///< event loops (threads), at least 1
    unsigned max_connections;           ///< open connections at most; more are refused at accept
    unsigned request_timeout_ms;        ///< a request must arrive whole within this of its connection's opening or previous answer
    size_t max_header_bytes;            ///< request line and headers at most (431 or 414 beyond)
    unsigned long long max_body_bytes;  ///< a request body at most (413 beyond: a larger chunked body is read to its end, dropped, and refused)
    int keep_uris;                      ///< 1: hand the request URI to `completed`
    int want_client;                    ///< 1: hand the peer's address to `request` (else "")
    unsigned long long bucket_bounds[CID_MAX_BUCKETS];  ///< latency histogram upper bounds, ns, ascending
    int bucket_count;
    cid_handlers handlers;
    void *context;
    /// PEM certificate chain and private key (copied at start): HTTPS, TLS 1.2 and 1.3. NULL: HTTP.
    const char *tls_cert;
    const char *tls_key;
} cid_server_config;

typedef struct {
    unsigned long long latency_count;
    unsigned long long latency_sum_ns;
    unsigned long long connections_open;
    unsigned long long connections_accepted;
    /// Connections closed by the request deadline.
    unsigned long long deadline_closed;
    unsigned long long in_flight;
} cid_server_gauges;

/// Why libmicrohttpd cannot be used ("" when it can): loads it on first call.
const char *cid_server_library_error(void);

/// libmicrohttpd's version ("0.9.75"), loading it first; NULL when it cannot be loaded.
const char *cid_server_library_version(void);

/// A TCP socket bound to `host` (a numeric address or a name; "" for every address) and `port`
/// (0: any free port), listening, non-blocking, close-on-exec. Returns it, or -1 with `error`
/// (`error_size` bytes) set, and `*error_number` the errno of a failed socket, bind or listen
/// (0 for a name that does not resolve). `*bound_port` receives the port.
int cid_listen(const char *host, int port, int backlog, int *bound_port, char *error, size_t error_size, int *error_number);

/// Starts the server (its threads run until cid_server_stop). NULL with `error` set on failure
/// (the listening socket is then closed).
cid_server *cid_server_start(const cid_server_config *config, char *error, size_t error_size);

/// Whether the libmicrohttpd loaded was built with TLS (GnuTLS); loads it first.
int cid_server_supports_tls(void);

/// Serves new connections with a new certificate and key (PEM) without a refused connection: a
/// new daemon starts on the same socket, and the old one, which accepts no more, is stopped once
/// its connections have closed. Returns 0, or -1 with `error` set (the old pair stays in use).
int cid_server_reload_tls(cid_server *server, const char *cert, const char *key, char *error, size_t error_size);

/// Stops accepting connections (the listening socket is closed), and marks every answer from now
/// on `Connection: close`. Requests in flight go on.
void cid_server_drain(cid_server *server);

/// Stops the server: closes every connection, waits for its threads, frees it.
void cid_server_stop(cid_server *server);

/// The server that `x` belongs to (for its counters).
cid_server *cid_exchange_server(cid_exchange *x);

/// Requests answered so far for `endpoint` with `status`.
unsigned long long cid_server_requests(cid_server *server, int endpoint, unsigned status);

/// Requests whose latency fell in histogram bucket `bucket` (0 ... bucket_count; the last one
/// holds those above every bound); not cumulative.
unsigned long long cid_server_bucket(cid_server *server, int bucket);

void cid_server_read_gauges(cid_server *server, cid_server_gauges *gauges);

/// Answers `x` with a copy of `body` (`size` bytes). `extra_name`/`extra_value`: one more header
/// (NULL: none). Returns 0, or -1 when the answer could not be queued (the connection is closed).
int cid_respond(cid_exchange *x, int endpoint, unsigned status, const char *content_type,
                const void *body, size_t size, const char *extra_name, const char *extra_value);

/// Answers `x` with a body of unknown length (chunked) read through the `read` handler from
/// `stream`, which is released through `release` once the answer is done.
int cid_respond_stream(cid_exchange *x, int endpoint, unsigned status, const char *content_type, void *stream);

/// Names who asked (an API key's name), handed to the `completed` handler as `label`.
void cid_exchange_set_label(cid_exchange *x, const char *label);

/// Accepts the body of `x` into `body` (handed to the `body` and `body_end` handlers, then
/// released). A body over `max_body_bytes` is dropped as it arrives and, once it has ended,
/// refused with 413 through `refuse`, counted under `endpoint`.
void cid_accept_body(cid_exchange *x, int endpoint, void *body);

#endif
