// See include/chttpserver.h. The libmicrohttpd interface used here is written out (its values are
// the library's stable ABI, microhttpd.h of 0.9.x): building needs no libmicrohttpd headers and
// nothing links the library. Where the header is installed (Debian: libmicrohttpd-dev), the
// values are checked against it at compile time.
#include "chttpserver.h"

#include <arpa/inet.h>
#include "cid_library.h"

#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

struct MHD_Daemon;
struct MHD_Connection;
struct MHD_Response;

enum {
    MHD_R_NO = 0, MHD_R_YES = 1,
    FLAG_TLS = 2, FLAG_INTERNAL_POLLING_THREAD = 8, FLAG_EPOLL = 512, FLAG_ITC = 1024, FLAG_TURBO = 4096,
    OPT_END = 0, OPT_CONNECTION_MEMORY_LIMIT = 1, OPT_CONNECTION_LIMIT = 2, OPT_CONNECTION_TIMEOUT = 3,
    OPT_NOTIFY_COMPLETED = 4, OPT_URI_LOG_CALLBACK = 7, OPT_LISTEN_SOCKET = 12, OPT_THREAD_POOL_SIZE = 14,
    OPT_UNESCAPE_CALLBACK = 16, OPT_NOTIFY_CONNECTION = 27, OPT_STRICT_FOR_CLIENT = 29,
    OPT_HTTPS_MEM_KEY = 8, OPT_HTTPS_MEM_CERT = 9, OPT_HTTPS_PRIORITIES = 11,
    DAEMON_INFO_CURRENT_CONNECTIONS = 4, FEATURE_TLS = 2,
    INFO_CLIENT_ADDRESS = 2, INFO_CONNECTION_FD = 6, INFO_SOCKET_CONTEXT = 7, INFO_REQUEST_HEADER_SIZE = 10, INFO_HTTP_STATUS = 11,
    KIND_HEADER = 1, KIND_GET_ARGUMENT = 8,
    RESPMEM_MUST_COPY = 2,
    NOTIFY_STARTED = 0, NOTIFY_CLOSED = 1,
    TERMINATED_COMPLETED_OK = 0,
};
#define SIZE_UNKNOWN UINT64_MAX
#define CID_TEXT_(x) #x
#define CID_TEXT(x) CID_TEXT_(x)
/// What libmicrohttpd takes from the connection's memory for each header line (a record of
/// 7 words, rounded to 16 bytes), besides the line itself.
#define HEADER_RECORD_BYTES 64
#define READER_END_OF_STREAM ((ssize_t)-1)
#define READER_END_WITH_ERROR ((ssize_t)-2)

#if defined(__has_include)
#if __has_include(<microhttpd.h>)
#include <microhttpd.h>
#define SAME(ours, theirs) _Static_assert((long long)(ours) == (long long)(theirs), #theirs " differs from microhttpd.h");
SAME(MHD_R_NO, MHD_NO) SAME(MHD_R_YES, MHD_YES)
SAME(FLAG_TLS, MHD_USE_TLS) SAME(FLAG_INTERNAL_POLLING_THREAD, MHD_USE_INTERNAL_POLLING_THREAD) SAME(FLAG_EPOLL, MHD_USE_EPOLL)
SAME(OPT_HTTPS_MEM_KEY, MHD_OPTION_HTTPS_MEM_KEY) SAME(OPT_HTTPS_MEM_CERT, MHD_OPTION_HTTPS_MEM_CERT)
SAME(OPT_HTTPS_PRIORITIES, MHD_OPTION_HTTPS_PRIORITIES) SAME(DAEMON_INFO_CURRENT_CONNECTIONS, MHD_DAEMON_INFO_CURRENT_CONNECTIONS)
SAME(FEATURE_TLS, MHD_FEATURE_TLS)
SAME(FLAG_ITC, MHD_USE_ITC) SAME(FLAG_TURBO, MHD_USE_TURBO)
SAME(OPT_END, MHD_OPTION_END) SAME(OPT_CONNECTION_MEMORY_LIMIT, MHD_OPTION_CONNECTION_MEMORY_LIMIT)
SAME(OPT_CONNECTION_LIMIT, MHD_OPTION_CONNECTION_LIMIT) SAME(OPT_CONNECTION_TIMEOUT, MHD_OPTION_CONNECTION_TIMEOUT)
SAME(OPT_NOTIFY_COMPLETED, MHD_OPTION_NOTIFY_COMPLETED) SAME(OPT_URI_LOG_CALLBACK, MHD_OPTION_URI_LOG_CALLBACK)
SAME(OPT_LISTEN_SOCKET, MHD_OPTION_LISTEN_SOCKET) SAME(OPT_THREAD_POOL_SIZE, MHD_OPTION_THREAD_POOL_SIZE)
SAME(OPT_UNESCAPE_CALLBACK, MHD_OPTION_UNESCAPE_CALLBACK) SAME(OPT_NOTIFY_CONNECTION, MHD_OPTION_NOTIFY_CONNECTION)
SAME(OPT_STRICT_FOR_CLIENT, MHD_OPTION_STRICT_FOR_CLIENT)
SAME(INFO_CLIENT_ADDRESS, MHD_CONNECTION_INFO_CLIENT_ADDRESS) SAME(INFO_CONNECTION_FD, MHD_CONNECTION_INFO_CONNECTION_FD)
SAME(INFO_SOCKET_CONTEXT, MHD_CONNECTION_INFO_SOCKET_CONTEXT) SAME(INFO_HTTP_STATUS, MHD_CONNECTION_INFO_HTTP_STATUS)
SAME(INFO_REQUEST_HEADER_SIZE, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE)
SAME(KIND_HEADER, MHD_HEADER_KIND) SAME(KIND_GET_ARGUMENT, MHD_GET_ARGUMENT_KIND)
SAME(RESPMEM_MUST_COPY, MHD_RESPMEM_MUST_COPY)
SAME(NOTIFY_STARTED, MHD_CONNECTION_NOTIFY_STARTED) SAME(NOTIFY_CLOSED, MHD_CONNECTION_NOTIFY_CLOSED)
SAME(TERMINATED_COMPLETED_OK, MHD_REQUEST_TERMINATED_COMPLETED_OK)
SAME(SIZE_UNKNOWN, MHD_SIZE_UNKNOWN) SAME(READER_END_OF_STREAM, MHD_CONTENT_READER_END_OF_STREAM)
SAME(READER_END_WITH_ERROR, MHD_CONTENT_READER_END_WITH_ERROR)
#undef SAME
#endif
#endif

/// The members of `union MHD_ConnectionInfo` read here (a union: each at offset 0).
/// The member of `union MHD_DaemonInfo` read here.
union daemon_info {
    unsigned int num_connections;
};

union connection_info {
    unsigned int http_status;
    size_t header_size;
    int connect_fd;
    struct sockaddr *client_addr;
    void *socket_context;
};

typedef int (*access_fn)(void *, struct MHD_Connection *, const char *, const char *, const char *,
                         const char *, size_t *, void **);
typedef ssize_t (*reader_fn)(void *, uint64_t, char *, size_t);
typedef void (*reader_free_fn)(void *);
typedef int (*header_fn)(void *, int, const char *, const char *);

static struct {
    int loaded;
    char error[320];
    struct MHD_Daemon *(*start_daemon)(unsigned int, uint16_t, void *, void *, access_fn, void *, ...);
    void (*stop_daemon)(struct MHD_Daemon *);
    int (*quiesce_daemon)(struct MHD_Daemon *);
    const char *(*lookup_connection_value)(struct MHD_Connection *, int, const char *);
    int (*get_connection_values)(struct MHD_Connection *, int, header_fn, void *);
    struct MHD_Response *(*create_response_from_buffer)(size_t, void *, int);
    struct MHD_Response *(*create_response_from_callback)(uint64_t, size_t, reader_fn, void *, reader_free_fn);
    int (*add_response_header)(struct MHD_Response *, const char *, const char *);
    int (*queue_response)(struct MHD_Connection *, unsigned int, struct MHD_Response *);
    void (*destroy_response)(struct MHD_Response *);
    const union connection_info *(*get_connection_info)(struct MHD_Connection *, int, ...);
    const char *(*get_version)(void);
    const union daemon_info *(*get_daemon_info)(struct MHD_Daemon *, int, ...);
    int (*is_feature_supported)(int);
} mhd;

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
    static const char *names[] = {"libmicrohttpd.so.12", "libmicrohttpd.so", "libmicrohttpd.12.dylib", "libmicrohttpd.dylib", NULL};
    const cid_symbol symbols[] = {
        {"MHD_start_daemon", (void **)&mhd.start_daemon},
        {"MHD_stop_daemon", (void **)&mhd.stop_daemon},
        {"MHD_quiesce_daemon", (void **)&mhd.quiesce_daemon},
        {"MHD_lookup_connection_value", (void **)&mhd.lookup_connection_value},
        {"MHD_get_connection_values", (void **)&mhd.get_connection_values},
        {"MHD_create_response_from_buffer", (void **)&mhd.create_response_from_buffer},
        {"MHD_create_response_from_callback", (void **)&mhd.create_response_from_callback},
        {"MHD_add_response_header", (void **)&mhd.add_response_header},
        {"MHD_queue_response", (void **)&mhd.queue_response},
        {"MHD_destroy_response", (void **)&mhd.destroy_response},
        {"MHD_get_connection_info", (void **)&mhd.get_connection_info},
        {"MHD_get_version", (void **)&mhd.get_version},
        {"MHD_get_daemon_info", (void **)&mhd.get_daemon_info},
        {"MHD_is_feature_supported", (void **)&mhd.is_feature_supported},
        {NULL, NULL},
    };
    void *h = cid_library_open(names, "libmicrohttpd", "libmicrohttpd12", mhd.error, sizeof mhd.error);
    if (h == NULL || !cid_library_resolve(h, symbols, "libmicrohttpd", " (0.9.71 or later is needed)", mhd.error, sizeof mhd.error)) return;
    // MHD_OPTION_STRICT_FOR_CLIENT and the HTTP status of MHD_get_connection_info came with 0.9.71.
    if (cid_library_symbol(h, "MHD_create_response_from_buffer_with_free_callback_cls") == NULL) {
        snprintf(mhd.error, sizeof mhd.error, "libmicrohttpd %s is too old (0.9.71 or later is needed)", mhd.get_version());
        return;
    }
    mhd.loaded = 1;
}

const char *cid_server_library_error(void) {
    pthread_once(&once, load);
    return mhd.loaded ? "" : mhd.error;
}

const char *cid_server_library_version(void) {
    pthread_once(&once, load);
    return mhd.loaded ? mhd.get_version() : NULL;
}

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/// One open connection, in the server's list while it is open: the request deadline.
struct connection {
    struct connection *prev, *next;
    int fd;
    /// The request being received or answered on it, until its completion.
    struct cid_exchange *current;
    /// When the request being received must be complete (0: none now: an answer is being sent).
    _Atomic uint64_t deadline;
    int cut;
};

struct stream_holder;

struct cid_exchange {
    cid_server *server;
    struct MHD_Connection *connection;
    struct connection *owner;
    struct stream_holder *stream;
    uint64_t started;
    int seen;
    /// In the first call of the request (headers complete) with no body declared: an answer is
    /// queued at the next call (libmicrohttpd closes a connection whose answer was queued in the
    /// first call: it cannot know the request has no body).
    int deferrable;
    struct MHD_Response *pending;
    int responded;
    int endpoint;
    /// The body passed `max_body_bytes`: the rest is dropped, and the request refused at its end.
    int too_large;
    /// The answer closes the connection (what follows the request cannot be told apart from it).
    int close;
    unsigned status;
    void *body;
    unsigned long long body_bytes;
    unsigned long long response_bytes;
    char method[16];
    char *uri;
    /// The decoded `country` query argument (NULL: none), read by on_uri.
    char *country;
    /// The query as sent (the text after `?`; NULL: none), kept by on_uri for the handler.
    char *query;
    /// Who asked, in the caller's words (an API key's name), for the completion.
    char *label;
    /// The request target as libmicrohttpd parsed it in its buffer, and its length then.
    const char *target;
    size_t target_length;
};

struct stream_holder {
    cid_server *server;
    void *stream;
    cid_exchange *exchange;
};

/// Daemons that no longer accept (a certificate reload started a new one on the same socket),
/// stopped once their last connection has closed.
#define CID_MAX_RETIRING 8

struct cid_server {
    struct MHD_Daemon *daemon;
    struct MHD_Daemon *retiring[CID_MAX_RETIRING];
    int retiring_count;
    /// The PEM text the running daemon was started with (owned; NULL: plain HTTP).
    char *tls_cert, *tls_key;
    cid_server_config config;
    uint64_t timeout_ns;
    atomic_int draining;
    pthread_mutex_t lock;           // the connection list
    struct connection *connections;
    pthread_t watchdog;
    int watching;
    pthread_mutex_t watch_lock;
    pthread_cond_t watch_wake;
    int stopping;
    _Atomic unsigned long long requests[CID_ENDPOINTS][CID_STATUSES];
    _Atomic unsigned long long buckets[CID_MAX_BUCKETS + 1];
    _Atomic unsigned long long latency_count, latency_sum_ns;
    _Atomic unsigned long long connections_open, connections_accepted, deadline_closed, in_flight;
};

// MARK: connections and the request deadline

static void finish(cid_server *s, cid_exchange *x, struct MHD_Connection *connection, int completed);
static void client_address(struct MHD_Connection *connection, char *client, size_t size);

static void set_deadline(struct connection *c, uint64_t at) {
    if (c != NULL) atomic_store_explicit(&c->deadline, at, memory_order_relaxed);
}

static void on_connection(void *cls, struct MHD_Connection *connection, void **socket_context, int event) {
    cid_server *s = cls;
    if (event == NOTIFY_STARTED) {
        struct connection *c = calloc(1, sizeof *c);
        if (c == NULL) return;
        const union connection_info *info = mhd.get_connection_info(connection, INFO_CONNECTION_FD);
        c->fd = info != NULL ? info->connect_fd : -1;
        set_deadline(c, s->timeout_ns ? now_ns() + s->timeout_ns : 0);
        pthread_mutex_lock(&s->lock);
        c->next = s->connections;
        if (c->next != NULL) c->next->prev = c;
        s->connections = c;
        pthread_mutex_unlock(&s->lock);
        *socket_context = c;
        atomic_fetch_add_explicit(&s->connections_open, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->connections_accepted, 1, memory_order_relaxed);
    } else if (event == NOTIFY_CLOSED) {
        struct connection *c = *socket_context;
        if (c == NULL) return;
        // A request that libmicrohttpd gave up without telling its end (some of its own refusals
        // overwrite the state they set): ended here, so that it leaves the in-flight gauge.
        if (c->current != NULL) finish(s, c->current, NULL, 0);
        // Out of the list before libmicrohttpd closes the socket (it notifies first): the
        // watchdog never shuts down a descriptor number that another connection reuses.
        pthread_mutex_lock(&s->lock);
        if (c->prev != NULL) c->prev->next = c->next; else s->connections = c->next;
        if (c->next != NULL) c->next->prev = c->prev;
        pthread_mutex_unlock(&s->lock);
        free(c);
        *socket_context = NULL;
        atomic_fetch_sub_explicit(&s->connections_open, 1, memory_order_relaxed);
    }
}

/// Connections shut down with the list locked at a time: the event loops wait on the lock to
/// add and remove connections, so a sweep that met thousands at once (idle connections opened
/// together reach their deadline together) must let them in between batches.
enum { CUT_BATCH = 128 };

/// Shuts down at most CUT_BATCH connections past their deadline at `t`; 1 if more are left.
static int cut_expired(cid_server *s, uint64_t t) {
    int cut = 0, more = 0;
    pthread_mutex_lock(&s->lock);
    for (struct connection *c = s->connections; c != NULL; c = c->next) {
        uint64_t d = atomic_load_explicit(&c->deadline, memory_order_relaxed);
        if (d != 0 && t > d && !c->cut && c->fd >= 0) {
            if (cut == CUT_BATCH) { more = 1; break; }
            shutdown(c->fd, SHUT_RDWR);
            c->cut = 1;
            cut++;
            atomic_fetch_add_explicit(&s->deadline_closed, 1, memory_order_relaxed);
        }
    }
    pthread_mutex_unlock(&s->lock);
    return more;
}

/// Stops the retiring daemons that have no connection left. Called with `watch_lock` held.
static void retire_idle(cid_server *s) {
    for (int i = 0; i < s->retiring_count;) {
        const union daemon_info *info = mhd.get_daemon_info(s->retiring[i], DAEMON_INFO_CURRENT_CONNECTIONS);
        if (info != NULL && info->num_connections == 0) {
            mhd.stop_daemon(s->retiring[i]);
            s->retiring[i] = s->retiring[--s->retiring_count];
        } else {
            i++;
        }
    }
}

/// Closes (shuts down; libmicrohttpd then sees the end and closes) every connection past its
/// deadline, a few times per deadline.
static void *watch(void *arg) {
    cid_server *s = arg;
    uint64_t step = s->timeout_ns / 8;
    if (step < 10000000u) step = 10000000u;
    if (step > 250000000u) step = 250000000u;
    pthread_mutex_lock(&s->watch_lock);
    while (!s->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        uint64_t ns = (uint64_t)until.tv_nsec + step;
        until.tv_sec += (time_t)(ns / 1000000000u);
        until.tv_nsec = (long)(ns % 1000000000u);
        pthread_cond_timedwait(&s->watch_wake, &s->watch_lock, &until);
        if (s->stopping) break;
        uint64_t t = now_ns();
        // A millisecond between batches: the event loops take the lock meanwhile.
        while (cut_expired(s, t)) nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = 1000000}, NULL);
        retire_idle(s);
    }
    pthread_mutex_unlock(&s->watch_lock);
    return NULL;
}

// MARK: requests

/// Decodes %XX in place (the path and the query arguments); an escape that is not two hex
/// digits, and %00, stay as written, so that they reach the caller as text it refuses rather
/// than as a cut string.
static size_t on_unescape(void *cls, struct MHD_Connection *connection, char *text) {
    (void)cls; (void)connection;
    char *r = text, *w = text;
    while (*r != 0) {
        if (r[0] == '%') {
            int hi = -1, lo = -1;
            char a = r[1], b = a ? r[2] : 0;
            if (a >= '0' && a <= '9') hi = a - '0'; else if (a >= 'a' && a <= 'f') hi = a - 'a' + 10; else if (a >= 'A' && a <= 'F') hi = a - 'A' + 10;
            if (b >= '0' && b <= '9') lo = b - '0'; else if (b >= 'a' && b <= 'f') lo = b - 'a' + 10; else if (b >= 'A' && b <= 'F') lo = b - 'A' + 10;
            if (hi >= 0 && lo >= 0 && (hi | lo) != 0) {
                *w++ = (char)(hi << 4 | lo);
                r += 3;
                continue;
            }
        }
        *w++ = *r++;
    }
    *w = 0;
    return (size_t)(w - text);
}

/// The value of argument `name` in `query` (the text after `?`, as sent), decoded as
/// libmicrohttpd decodes arguments ('+' a space, then on_unescape); NULL when absent or
/// without a value. The first argument of that name counts, its case ignored (as
/// libmicrohttpd's own lookup of arguments ignores it).
static char *query_argument(const char *query, const char *name) {
    for (const char *p = query; p != NULL && *p != 0;) {
        const char *amp = strchr(p, '&');
        size_t n = amp != NULL ? (size_t)(amp - p) : strlen(p);
        char *arg = strndup(p, n);
        if (arg == NULL) return NULL;
        char *value = strchr(arg, '=');
        if (value != NULL) *value++ = 0;
        for (char *c = arg; *c != 0; c++) if (*c == '+') *c = ' ';
        on_unescape(NULL, NULL, arg);
        if (strcasecmp(arg, name) == 0) {
            char *found = value != NULL ? strdup(value) : NULL;
            free(arg);
            if (found != NULL) {
                for (char *c = found; *c != 0; c++) if (*c == '+') *c = ' ';
                on_unescape(NULL, NULL, found);
            }
            return found;
        }
        free(arg);
        p = amp != NULL ? amp + 1 : NULL;
    }
    return NULL;
}

static void *on_uri(void *cls, char *uri, struct MHD_Connection *connection) {
    cid_server *s = cls;
    cid_exchange *x = calloc(1, sizeof *x);
    if (x == NULL) return NULL;
    x->server = s;
    x->connection = connection;
    x->started = now_ns();
    const union connection_info *info = mhd.get_connection_info(connection, INFO_SOCKET_CONTEXT);
    x->owner = info != NULL ? info->socket_context : NULL;
    x->target = uri;
    x->target_length = uri != NULL ? strlen(uri) : 0;
    if (s->config.keep_uris && uri != NULL) x->uri = strdup(uri);
    char *query = uri != NULL ? strchr(uri, '?') : NULL;
    if (query != NULL) {
        x->country = query_argument(query + 1, "country");
        x->query = strdup(query + 1);
        // libmicrohttpd stores each query argument as a record in the connection's memory,
        // and a few hundred short ones (`?a&a&a…`) overflow it in a way it does not recover
        // from (no answer, no end of the request told). The one argument used is read above;
        // the query is emptied for libmicrohttpd, which parses it in place right after this call.
        query[1] = 0;
    }
    if (x->owner != NULL) x->owner->current = x;
    atomic_fetch_add_explicit(&s->in_flight, 1, memory_order_relaxed);
    return x;
}

/// The request arrived whole: no deadline while it is answered (libmicrohttpd's idle timeout
/// covers a client that stops reading).
static void received(cid_exchange *x) { set_deadline(x->owner, 0); }

/// A NUL byte inside the request target, which would cut the path the handler sees ("/v1/lookup/1\0..."
/// read as "/v1/lookup/1"). libmicrohttpd parses the request line in place: the target runs from
/// where the URI callback saw it to the byte before the version (the space it made a NUL).
static int has_nul(const cid_exchange *x, const char *version) {
    if (x->target == NULL || version == NULL || version[0] == 0 || version <= x->target) return 0;
    size_t span = (size_t)(version - x->target) - 1;
    return span < 65536 && span != x->target_length;
}

/// The headers that say where a request's body ends, counted (libmicrohttpd reads only the
/// first of each name, and Transfer-Encoding before Content-Length), and the header lines.
struct framing {
    int lines;
    int lengths;
    int encodings;
    const char *encoding;
};

static int count_framing(void *cls, int kind, const char *name, const char *value) {
    (void)kind;
    struct framing *f = cls;
    f->lines++;
    if (name == NULL) return MHD_R_YES;
    if (strcasecmp(name, "Content-Length") == 0) {
        f->lengths++;
    } else if (strcasecmp(name, "Transfer-Encoding") == 0) {
        f->encodings++;
        f->encoding = value;
    }
    return MHD_R_YES;
}

/// Whether `encoding` (a Transfer-Encoding value) ends with the chunked coding.
static int ends_chunked(const char *encoding) {
    const char *last = strrchr(encoding, ',');
    last = last != NULL ? last + 1 : encoding;
    while (*last == ' ' || *last == '\t') last++;
    size_t n = strlen(last);
    while (n > 0 && (last[n - 1] == ' ' || last[n - 1] == '\t')) n--;
    return n == 7 && strncasecmp(last, "chunked", 7) == 0;
}

/// Why the request cannot be read on, as a status and `*reason`, or 0: more header lines than
/// CID_MAX_HEADER_LINES (431); a body whose end two parties could place differently (request
/// smuggling: 400): two Content-Length headers (libmicrohttpd takes the first; a proxy in front
/// may take the last), two Transfer-Encoding headers, or both kinds at once; a transfer coding
/// other than chunked alone, whose body libmicrohttpd would read to the connection's end (501
/// when chunked comes last, as RFC 9112 asks; 400 when the body's end cannot be known).
static unsigned framing_refusal(struct MHD_Connection *connection, const char **reason) {
    struct framing f = {0, 0, 0, NULL};
    mhd.get_connection_values(connection, KIND_HEADER, count_framing, &f);
    *reason = NULL;
    if (f.lines > CID_MAX_HEADER_LINES) *reason = "more than " CID_TEXT(CID_MAX_HEADER_LINES) " header lines";
    if (*reason != NULL) return 431;
    if (f.lengths > 1) *reason = "more than one Content-Length header";
    else if (f.encodings > 1) *reason = "more than one Transfer-Encoding header";
    else if (f.lengths > 0 && f.encodings > 0) *reason = "both Content-Length and Transfer-Encoding";
    else if (f.encoding != NULL && !ends_chunked(f.encoding)) *reason = "a Transfer-Encoding that does not end with chunked";
    if (*reason != NULL) return 400;
    if (f.encoding != NULL && strcasecmp(f.encoding, "chunked") != 0) {
        *reason = "a transfer coding other than chunked";
        return 501;
    }
    return 0;
}

/// The HTTP layer's own refusal of `x`, answered by the caller (its route words the body).
static void refuse(cid_exchange *x, const char *path, unsigned status, const char *reason) {
    cid_server *s = x->server;
    s->config.handlers.refuse(s->config.context, x, path != NULL ? path : "", status, reason);
}

static int on_access(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                     const char *version, const char *upload, size_t *upload_size, void **context) {
    (void)version;
    cid_server *s = cls;
    cid_exchange *x = *context;
    if (x == NULL) return MHD_R_NO;
    if (!x->seen) {
        x->seen = 1;
        x->connection = connection;
        snprintf(x->method, sizeof x->method, "%s", method);
        cid_request r;
        r.method_name = method;
        r.method = strcmp(method, "GET") == 0 ? CID_METHOD_GET : strcmp(method, "HEAD") == 0 ? CID_METHOD_HEAD
                 : strcmp(method, "POST") == 0 ? CID_METHOD_POST : CID_METHOD_OTHER;
        r.path = url;
        r.country = x->country;
        r.query = x->query;
        r.authorization = mhd.lookup_connection_value(connection, KIND_HEADER, "Authorization");
        r.forwarded_for = mhd.lookup_connection_value(connection, KIND_HEADER, "X-Forwarded-For");
        char client[INET6_ADDRSTRLEN + 8] = "";
        if (s->config.want_client) client_address(connection, client, sizeof client);
        r.client = client;
        r.content_type = mhd.lookup_connection_value(connection, KIND_HEADER, "Content-Type");
        const char *length = mhd.lookup_connection_value(connection, KIND_HEADER, "Content-Length");
        r.content_length = -1;
        if (length != NULL) {
            char *end = NULL;
            errno = 0;
            long long n = strtoll(length, &end, 10);
            if (errno == 0 && end != length && *end == 0 && n >= 0) r.content_length = n;
        }
        int chunked = mhd.lookup_connection_value(connection, KIND_HEADER, "Transfer-Encoding") != NULL;
        x->deferrable = r.content_length <= 0 && !chunked;
        // The connection's memory holds a little more than the limit (the answer's headers
        // need room too): the limit itself is kept here.
        const union connection_info *size = mhd.get_connection_info(connection, INFO_REQUEST_HEADER_SIZE);
        const char *reason = NULL;
        unsigned refusal = 0;
        if (size != NULL && size->header_size > s->config.max_header_bytes) {
            refuse(x, url, 431, "the request line and headers are too large");
        } else if (has_nul(x, version)) {
            refuse(x, url, 400, "a NUL byte in the request target");
        } else if ((refusal = framing_refusal(connection, &reason)) != 0) {
            // What follows on the connection cannot be told apart from this request's body.
            x->close = chunked || r.content_length > 0 || refusal != 431;
            refuse(x, url, refusal, reason);
        } else {
            s->config.handlers.request(s->config.context, x, &r);
        }
        x->deferrable = 0;
        if (x->responded) {
            received(x);
            return MHD_R_YES;
        }
        return x->body != NULL ? MHD_R_YES : MHD_R_NO;
    }
    if (x->pending != NULL) {
        if (*upload_size > 0) {   // cannot happen without a declared body; dropped
            *upload_size = 0;
            return MHD_R_YES;
        }
        struct MHD_Response *r = x->pending;
        x->pending = NULL;
        int queued = mhd.queue_response(connection, x->status, r);
        mhd.destroy_response(r);
        return queued == MHD_R_YES ? MHD_R_YES : MHD_R_NO;
    }
    if (*upload_size > 0) {
        if (x->body != NULL && !x->responded) {
            x->body_bytes += *upload_size;
            if (x->body_bytes > s->config.max_body_bytes) x->too_large = 1;
            // libmicrohttpd answers only before a body or after it: a body over the limit is
            // read to its end (within the request deadline) and dropped, then refused.
            if (!x->too_large) s->config.handlers.body(s->config.context, x->body, upload, *upload_size);
        }
        *upload_size = 0;
        return MHD_R_YES;
    }
    if (!x->responded && x->too_large) {
        received(x);
        char reason[96];
        snprintf(reason, sizeof reason, "the body is over %llu bytes (send the numbers in several requests)", s->config.max_body_bytes);
        int endpoint = x->endpoint;
        x->close = 1;
        refuse(x, url, 413, reason);
        x->endpoint = endpoint;   // counted under the endpoint that took the body
        return x->responded ? MHD_R_YES : MHD_R_NO;
    }
    if (!x->responded && x->body != NULL) {
        received(x);
        s->config.handlers.body_end(s->config.context, x, x->body);
        s->config.handlers.release(s->config.context, x->body);
        x->body = NULL;
    }
    return x->responded ? MHD_R_YES : MHD_R_NO;
}

/// The peer's address as text into `client` ("" when unknown).
static void client_address(struct MHD_Connection *connection, char *client, size_t size) {
    client[0] = 0;
    const union connection_info *info = mhd.get_connection_info(connection, INFO_CLIENT_ADDRESS);
    const struct sockaddr *a = info != NULL ? info->client_addr : NULL;
    if (a != NULL && a->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)a)->sin_addr, client, (socklen_t)size);
    else if (a != NULL && a->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)a)->sin6_addr, client, (socklen_t)size);
}

static void count(cid_server *s, int endpoint, unsigned status, uint64_t ns) {
    if (endpoint < 0 || endpoint >= CID_ENDPOINTS) endpoint = 0;
    if (status >= 100 && status < 100 + CID_STATUSES)
        atomic_fetch_add_explicit(&s->requests[endpoint][status - 100], 1, memory_order_relaxed);
    int b = 0;
    while (b < s->config.bucket_count && ns > s->config.bucket_bounds[b]) b++;
    atomic_fetch_add_explicit(&s->buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->latency_count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->latency_sum_ns, ns, memory_order_relaxed);
}

/// Ends `x`: counts it, tells the caller, frees it. `connection` NULL: the connection is being
/// closed without libmicrohttpd having told the request's end (nothing is asked of it then).
static void finish(cid_server *s, cid_exchange *x, struct MHD_Connection *connection, int completed) {
    uint64_t t = now_ns();
    unsigned status = x->status;
    if (status == 0 && connection != NULL) {
        const union connection_info *info = mhd.get_connection_info(connection, INFO_HTTP_STATUS);
        if (info != NULL) status = info->http_status;
    }
    count(s, x->endpoint, status, t - x->started);
    if (x->stream != NULL) x->stream->exchange = NULL;
    if (x->pending != NULL) mhd.destroy_response(x->pending);
    if (x->body != NULL) s->config.handlers.release(s->config.context, x->body);
    char client[INET6_ADDRSTRLEN + 8] = "";
    if (s->config.keep_uris && connection != NULL) client_address(connection, client, sizeof client);
    cid_completion c = {
        .method = x->method, .uri = x->uri, .client = client, .label = x->label, .status = status, .endpoint = x->endpoint,
        .completed = completed,
        .body_bytes = x->body_bytes, .response_bytes = x->response_bytes, .nanoseconds = t - x->started,
    };
    s->config.handlers.completed(s->config.context, &c);
    if (x->owner != NULL && x->owner->current == x) {
        x->owner->current = NULL;
        // The next request on a kept-alive connection has the whole deadline again.
        if (connection != NULL) set_deadline(x->owner, s->timeout_ns ? t + s->timeout_ns : 0);
    }
    atomic_fetch_sub_explicit(&s->in_flight, 1, memory_order_relaxed);
    free(x->uri);
    free(x->country);
    free(x->query);
    free(x->label);
    free(x);
}

static void on_completed(void *cls, struct MHD_Connection *connection, void **context, int termination) {
    cid_exchange *x = *context;
    if (x == NULL) return;
    *context = NULL;
    finish(cls, x, connection, termination == TERMINATED_COMPLETED_OK);
}

// MARK: answers

static struct MHD_Response *headers(cid_exchange *x, struct MHD_Response *r, const char *type) {
    if (type != NULL) mhd.add_response_header(r, "Content-Type", type);
    if (x->close || atomic_load_explicit(&x->server->draining, memory_order_relaxed)) mhd.add_response_header(r, "Connection", "close");
    return r;
}

int cid_respond(cid_exchange *x, int endpoint, unsigned status, const char *content_type,
                const void *body, size_t size, const char *extra_name, const char *extra_value) {
    if (x->responded) return -1;
    struct MHD_Response *r = mhd.create_response_from_buffer(size, (void *)(size > 0 ? body : ""), RESPMEM_MUST_COPY);
    if (r == NULL) return -1;
    headers(x, r, content_type);
    if (extra_name != NULL && extra_value != NULL) mhd.add_response_header(r, extra_name, extra_value);
    if (x->deferrable) {
        x->pending = r;
    } else {
        int queued = mhd.queue_response(x->connection, status, r);
        mhd.destroy_response(r);
        if (queued != MHD_R_YES) return -1;
    }
    x->responded = 1;
    x->status = status;
    x->endpoint = endpoint;
    x->response_bytes = size;
    return 0;
}

static ssize_t on_read(void *cls, uint64_t position, char *buffer, size_t capacity) {
    (void)position;
    struct stream_holder *h = cls;
    long n = h->server->config.handlers.read(h->server->config.context, h->stream, buffer, capacity);
    if (n > 0) {
        if (h->exchange != NULL) h->exchange->response_bytes += (unsigned long long)n;
        return (ssize_t)n;
    }
    return n == -1 ? READER_END_OF_STREAM : READER_END_WITH_ERROR;
}

static void on_stream_end(void *cls) {
    struct stream_holder *h = cls;
    if (h->exchange != NULL) h->exchange->stream = NULL;
    h->server->config.handlers.release(h->server->config.context, h->stream);
    free(h);
}

int cid_respond_stream(cid_exchange *x, int endpoint, unsigned status, const char *content_type, void *stream) {
    cid_server *s = x->server;
    if (x->responded) {
        s->config.handlers.release(s->config.context, stream);
        return -1;
    }
    struct stream_holder *h = calloc(1, sizeof *h);
    if (h == NULL) {
        s->config.handlers.release(s->config.context, stream);
        return -1;
    }
    h->server = s;
    h->stream = stream;
    h->exchange = x;
    struct MHD_Response *r = mhd.create_response_from_callback(SIZE_UNKNOWN, 64 * 1024, on_read, h, on_stream_end);
    if (r == NULL) {
        s->config.handlers.release(s->config.context, stream);
        free(h);
        return -1;
    }
    x->stream = h;
    headers(x, r, content_type);
    int queued = mhd.queue_response(x->connection, status, r);
    mhd.destroy_response(r);  // frees the holder through on_stream_end when it was not queued
    if (queued != MHD_R_YES) return -1;
    x->responded = 1;
    x->status = status;
    x->endpoint = endpoint;
    return 0;
}

void cid_exchange_set_label(cid_exchange *x, const char *label) {
    free(x->label);
    x->label = label != NULL ? strdup(label) : NULL;
}

void cid_accept_body(cid_exchange *x, int endpoint, void *body) {
    x->endpoint = endpoint;
    x->body = body;
}

// MARK: the server

int cid_listen(const char *host, int port, int backlog, int *bound_port, char *error, size_t error_size, int *error_number) {
    *error_number = 0;
    struct addrinfo hints, *found = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    int rc = getaddrinfo(host != NULL && host[0] != 0 ? host : NULL, service, &hints, &found);
    if (rc != 0) {
        snprintf(error, error_size, "cannot resolve '%s': %s", host, gai_strerror(rc));
        return -1;
    }
    int fd = -1, saved = 0;
    for (struct addrinfo *a = found; a != NULL && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) { saved = errno; continue; }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, backlog) != 0) {
            saved = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(found);
    if (fd < 0) {
        snprintf(error, error_size, "cannot listen on %s:%d", host != NULL && host[0] != 0 ? host : "*", port);
        *error_number = saved;  // its text is the caller's (one strerror in the package)
        return -1;
    }
    struct sockaddr_storage address;
    socklen_t length = sizeof address;
    *bound_port = port;
    if (getsockname(fd, (struct sockaddr *)&address, &length) == 0) {
        if (address.ss_family == AF_INET) *bound_port = ntohs(((struct sockaddr_in *)&address)->sin_port);
        else if (address.ss_family == AF_INET6) *bound_port = ntohs(((struct sockaddr_in6 *)&address)->sin6_port);
    }
    return fd;
}

/// The TLS versions offered: 1.2 and 1.3 (GnuTLS's priority syntax).
static const char *const tls_priorities = "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";

/// A daemon of `s` on the listening socket `fd`, with TLS when `cert` is given.
static struct MHD_Daemon *start_daemon(cid_server *s, int fd, const char *cert, const char *key) {
    const cid_server_config *config = &s->config;
    // libmicrohttpd's own timeout closes a connection idle for this long: one whose answer is not
    // read. Twice the request deadline, so that slow and idle clients meet the deadline first
    // (and are counted).
    unsigned idle_seconds = config->request_timeout_ms == 0 ? 0 : (2 * config->request_timeout_ms + 999) / 1000;
    // The connection's memory pool holds the request line and headers (and what arrived after
    // them), a record for each header line, then the answer's headers: a request within both
    // limits always fits, and the limits are this layer's to answer (431).
    size_t pool = 2 * config->max_header_bytes + CID_MAX_HEADER_LINES * HEADER_RECORD_BYTES + 4096;
    unsigned threads = config->threads > 0 ? config->threads : 1;
    unsigned flags = FLAG_INTERNAL_POLLING_THREAD | FLAG_EPOLL | FLAG_ITC | FLAG_TURBO | (cert != NULL ? FLAG_TLS : 0);
    // Without a certificate the list ends before the TLS options (libmicrohttpd reads up to
    // the first OPT_END).
    return mhd.start_daemon(flags, 0, NULL, NULL, on_access, s,
                            OPT_LISTEN_SOCKET, fd,
                            OPT_THREAD_POOL_SIZE, threads > 1 ? threads : 0u,
                            OPT_CONNECTION_LIMIT, config->max_connections,
                            OPT_CONNECTION_TIMEOUT, idle_seconds,
                            OPT_CONNECTION_MEMORY_LIMIT, pool,
                            OPT_URI_LOG_CALLBACK, on_uri, (void *)s,
                            OPT_NOTIFY_COMPLETED, on_completed, (void *)s,
                            OPT_NOTIFY_CONNECTION, on_connection, (void *)s,
                            OPT_UNESCAPE_CALLBACK, on_unescape, (void *)s,
                            OPT_STRICT_FOR_CLIENT, 1,
                            cert != NULL ? OPT_HTTPS_MEM_KEY : OPT_END, key,
                            OPT_HTTPS_MEM_CERT, cert,
                            OPT_HTTPS_PRIORITIES, tls_priorities,
                            OPT_END);
}

int cid_server_supports_tls(void) {
    pthread_once(&once, load);
    return mhd.loaded && mhd.is_feature_supported(FEATURE_TLS) == MHD_R_YES;
}

int cid_server_reload_tls(cid_server *s, const char *cert, const char *key, char *error, size_t error_size) {
    if (s->tls_cert == NULL) {
        snprintf(error, error_size, "the server was started without TLS");
        return -1;
    }
    pthread_mutex_lock(&s->watch_lock);
    if (s->retiring_count == CID_MAX_RETIRING) retire_idle(s);
    if (s->retiring_count == CID_MAX_RETIRING || atomic_load(&s->draining)) {
        pthread_mutex_unlock(&s->watch_lock);
        snprintf(error, error_size, s->retiring_count == CID_MAX_RETIRING
                 ? "%d earlier reloads still have connections open; try again later" : "the server is stopping", CID_MAX_RETIRING);
        return -1;
    }
    char *new_cert = strdup(cert), *new_key = strdup(key);
    int fd = dup(s->config.listen_fd);
    struct MHD_Daemon *fresh = new_cert != NULL && new_key != NULL && fd >= 0 ? start_daemon(s, fd, new_cert, new_key) : NULL;
    if (fresh == NULL) {
        if (fd >= 0) close(fd);
        free(new_cert);
        free(new_key);
        pthread_mutex_unlock(&s->watch_lock);
        snprintf(error, error_size, "libmicrohttpd refused the new certificate and key (they do not match, or cannot be read); the old ones stay in use");
        return -1;
    }
    // The new daemon accepts on the same socket from now; the old one accepts no more and is
    // stopped once the connections it holds have closed.
    int old_fd = mhd.quiesce_daemon(s->daemon);
    if (old_fd >= 0) close(old_fd);
    s->retiring[s->retiring_count++] = s->daemon;
    s->daemon = fresh;
    s->config.listen_fd = fd;
    free(s->tls_cert);
    free(s->tls_key);
    s->tls_cert = new_cert;
    s->tls_key = new_key;
    pthread_mutex_unlock(&s->watch_lock);
    return 0;
}

cid_server *cid_server_start(const cid_server_config *config, char *error, size_t error_size) {
    pthread_once(&once, load);
    if (!mhd.loaded) {
        snprintf(error, error_size, "%s", mhd.error);
        close(config->listen_fd);
        return NULL;
    }
    cid_server *s = calloc(1, sizeof *s);
    if (s == NULL) {
        snprintf(error, error_size, "out of memory");
        close(config->listen_fd);
        return NULL;
    }
    s->config = *config;
    if (s->config.bucket_count > CID_MAX_BUCKETS) s->config.bucket_count = CID_MAX_BUCKETS;
    if (config->tls_cert != NULL) {
        s->tls_cert = strdup(config->tls_cert);
        s->tls_key = strdup(config->tls_key != NULL ? config->tls_key : "");
        s->config.tls_cert = s->tls_cert;
        s->config.tls_key = s->tls_key;
    }
    s->timeout_ns = (uint64_t)config->request_timeout_ms * 1000000u;
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->watch_lock, NULL);
    pthread_cond_init(&s->watch_wake, NULL);
    s->daemon = start_daemon(s, config->listen_fd, s->tls_cert, s->tls_key);
    if (s->daemon == NULL) {
        snprintf(error, error_size, config->tls_cert != NULL
                 ? "libmicrohttpd could not start a TLS server on the socket (a certificate and key that do not match or cannot be read, or no TLS support)"
                 : "libmicrohttpd could not start a server on the socket (threads %u, connections %u)",
                 config->threads > 0 ? config->threads : 1, config->max_connections);
        close(config->listen_fd);
        pthread_mutex_destroy(&s->lock);
        pthread_mutex_destroy(&s->watch_lock);
        pthread_cond_destroy(&s->watch_wake);
        free(s->tls_cert);
        free(s->tls_key);
        free(s);
        return NULL;
    }
    if (s->timeout_ns > 0 && pthread_create(&s->watchdog, NULL, watch, s) == 0) s->watching = 1;
    return s;
}

void cid_server_drain(cid_server *s) {
    if (atomic_exchange(&s->draining, 1)) return;
    int fd = mhd.quiesce_daemon(s->daemon);
    if (fd >= 0) close(fd);
}

void cid_server_stop(cid_server *s) {
    if (s->watching) {
        pthread_mutex_lock(&s->watch_lock);
        s->stopping = 1;
        pthread_cond_signal(&s->watch_wake);
        pthread_mutex_unlock(&s->watch_lock);
        pthread_join(s->watchdog, NULL);
    }
    for (int i = 0; i < s->retiring_count; i++) mhd.stop_daemon(s->retiring[i]);
    mhd.stop_daemon(s->daemon);
    free(s->tls_cert);
    free(s->tls_key);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->watch_lock);
    pthread_cond_destroy(&s->watch_wake);
    free(s);
}

cid_server *cid_exchange_server(cid_exchange *x) { return x->server; }

unsigned long long cid_server_requests(cid_server *s, int endpoint, unsigned status) {
    if (endpoint < 0 || endpoint >= CID_ENDPOINTS || status < 100 || status >= 100 + CID_STATUSES) return 0;
    return atomic_load_explicit(&s->requests[endpoint][status - 100], memory_order_relaxed);
}

unsigned long long cid_server_bucket(cid_server *s, int bucket) {
    if (bucket < 0 || bucket > s->config.bucket_count) return 0;
    return atomic_load_explicit(&s->buckets[bucket], memory_order_relaxed);
}

void cid_server_read_gauges(cid_server *s, cid_server_gauges *out) {
    out->latency_count = atomic_load(&s->latency_count);
    out->latency_sum_ns = atomic_load(&s->latency_sum_ns);
    out->connections_open = atomic_load(&s->connections_open);
    out->connections_accepted = atomic_load(&s->connections_accepted);
    out->deadline_closed = atomic_load(&s->deadline_closed);
    out->in_flight = atomic_load(&s->in_flight);
}
