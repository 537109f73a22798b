// See include/chttploader.h. The few libcurl declarations needed are written out here (the
// values are libcurl's stable ABI, curl/curl.h): no libcurl headers at build time, no link.
#include "chttploader.h"

#include "cid_library.h"
#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef void CURL;
typedef int CURLcode;
typedef long long curl_off_t;
typedef size_t (*curl_write_fn)(char *, size_t, size_t, void *);
typedef int (*curl_xferinfo_fn)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t);

enum {
    OPT_WRITEDATA = 10001, OPT_URL = 10002, OPT_RANGE = 10007, OPT_ERRORBUFFER = 10010,
    OPT_WRITEFUNCTION = 20011, OPT_USERAGENT = 10018, OPT_NOPROGRESS = 43, OPT_FAILONERROR = 45,
    OPT_FOLLOWLOCATION = 52, OPT_XFERINFODATA = 10057, OPT_MAXREDIRS = 68, OPT_CONNECTTIMEOUT = 78,
    OPT_NOSIGNAL = 99, OPT_TIMEOUT_MS = 155, OPT_PROTOCOLS = 181, OPT_REDIR_PROTOCOLS = 182,
    OPT_XFERINFOFUNCTION = 20219, OPT_PROTOCOLS_STR = 10318, OPT_REDIR_PROTOCOLS_STR = 10319,
    INFO_RESPONSE_CODE = 0x200000 + 2,
    GLOBAL_ALL = 3, ERROR_SIZE = 256, CURLE_HTTP_RETURNED_ERROR = 22,
};

static struct {
    int loaded;
    char error[256];
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, int, ...);
    CURLcode (*easy_perform)(CURL *);
    CURLcode (*easy_getinfo)(CURL *, int, ...);
    void (*easy_cleanup)(CURL *);
    const char *(*easy_strerror)(CURLcode);
} curl;

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
    static const char *names[] = {"libcurl.so.4", "libcurl-gnutls.so.4", "libcurl.so", "libcurl.4.dylib", NULL};
    const cid_symbol symbols[] = {
        {"curl_global_init", (void **)&curl.global_init},
        {"curl_easy_init", (void **)&curl.easy_init},
        {"curl_easy_setopt", (void **)&curl.easy_setopt},
        {"curl_easy_perform", (void **)&curl.easy_perform},
        {"curl_easy_getinfo", (void **)&curl.easy_getinfo},
        {"curl_easy_cleanup", (void **)&curl.easy_cleanup},
        {"curl_easy_strerror", (void **)&curl.easy_strerror},
        {NULL, NULL},
    };
    void *h = cid_library_open(names, "libcurl", "libcurl4", curl.error, sizeof curl.error);
    if (h == NULL || !cid_library_resolve(h, symbols, "libcurl", "", curl.error, sizeof curl.error)) return;
    if (curl.global_init(GLOBAL_ALL) != 0) {
        snprintf(curl.error, sizeof curl.error, "curl_global_init failed");
        return;
    }
    curl.loaded = 1;
}

struct sink {
    CURL *handle;
    cid_http_body_fn body;
    cid_http_tick_fn tick;
    void *context;
    int aborted;
};

// Called by libcurl about once a second while idle, and as data arrives: the caller's deadline.
static int on_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
    (void)dltotal; (void)ultotal; (void)ulnow;
    struct sink *s = user;
    if (s->tick(dlnow, s->context) != 0) {
        s->aborted = 1;
        return 1;
    }
    return 0;
}

static size_t on_data(char *data, size_t size, size_t count, void *user) {
    struct sink *s = user;
    size_t n = size * count;
    if (n == 0) return 0;
    long status = 0;
    curl.easy_getinfo(s->handle, INFO_RESPONSE_CODE, &status);
    if (s->body(data, n, status, s->context) != 0) {
        s->aborted = 1;
        return 0;
    }
    return n;
}

int cid_http_get(const char *url, long long range_start, long connect_timeout_seconds, long timeout_ms,
                 cid_http_body_fn body, cid_http_tick_fn tick, void *context, long *status, char *error, size_t error_size) {
    *status = 0;
    if (error_size > 0) error[0] = 0;
    pthread_once(&once, load);
    if (!curl.loaded) {
        snprintf(error, error_size, "%s", curl.error);
        return CID_HTTP_NO_LIBRARY;
    }
    CURL *c = curl.easy_init();
    if (c == NULL) {
        snprintf(error, error_size, "curl_easy_init failed");
        return CID_HTTP_FAILED;
    }
    char curl_error[ERROR_SIZE];
    curl_error[0] = 0;
    char range[32];
    struct sink s = {c, body, tick, context, 0};
    curl.easy_setopt(c, OPT_URL, url);
    curl.easy_setopt(c, OPT_NOSIGNAL, 1L);
    curl.easy_setopt(c, OPT_ERRORBUFFER, curl_error);
    curl.easy_setopt(c, OPT_WRITEFUNCTION, (curl_write_fn)on_data);
    curl.easy_setopt(c, OPT_WRITEDATA, (void *)&s);
    curl.easy_setopt(c, OPT_FOLLOWLOCATION, 1L);
    curl.easy_setopt(c, OPT_MAXREDIRS, 5L);
    curl.easy_setopt(c, OPT_USERAGENT, "CallerID-lookup-fetch");
    curl.easy_setopt(c, OPT_CONNECTTIMEOUT, connect_timeout_seconds);
    curl.easy_setopt(c, OPT_TIMEOUT_MS, timeout_ms);
    curl.easy_setopt(c, OPT_XFERINFOFUNCTION, (curl_xferinfo_fn)on_progress);
    curl.easy_setopt(c, OPT_XFERINFODATA, (void *)&s);
    curl.easy_setopt(c, OPT_NOPROGRESS, 0L);
    // A status of 400 or more ends the transfer at the status line: an error page is never read.
    curl.easy_setopt(c, OPT_FAILONERROR, 1L);
    if (curl.easy_setopt(c, OPT_PROTOCOLS_STR, "http,https") != 0) {
        curl.easy_setopt(c, OPT_PROTOCOLS, 3L);  // libcurl before 7.85: HTTP | HTTPS
    }
    if (curl.easy_setopt(c, OPT_REDIR_PROTOCOLS_STR, "http,https") != 0) {
        curl.easy_setopt(c, OPT_REDIR_PROTOCOLS, 3L);
    }
    if (range_start > 0) {
        snprintf(range, sizeof range, "%lld-", range_start);
        curl.easy_setopt(c, OPT_RANGE, range);
    }
    CURLcode rc = curl.easy_perform(c);
    long code = 0;
    curl.easy_getinfo(c, INFO_RESPONSE_CODE, &code);
    *status = code;
    int result = CID_HTTP_OK;
    if (s.aborted) {
        result = CID_HTTP_ABORTED;
    } else if (rc == CURLE_HTTP_RETURNED_ERROR && code >= 400) {
        result = CID_HTTP_OK;  // stopped at the status line; the status says why
    } else if (rc != 0) {
        snprintf(error, error_size, "%s", curl_error[0] ? curl_error : curl.easy_strerror(rc));
        result = CID_HTTP_FAILED;
    }
    curl.easy_cleanup(c);
    return result;
}
