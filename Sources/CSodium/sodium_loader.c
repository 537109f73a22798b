// See include/csodium.h. Every wrapper is only reached after cid_sodium_init() succeeded
// (Crypto.swift guards each use); a wrapper called without the library fails closed: -1 from
// the int functions, and cid_randombytes_buf / cid_sodium_memzero fill the buffer with zeros.
#include "csodium.h"

#include "cid_library.h"

#include <pthread.h>
#include <string.h>

static struct {
    int loaded;
    char error[256];
    int (*init)(void);
    size_t (*secretkeybytes)(void);
    int (*seed_keypair)(unsigned char *, unsigned char *, const unsigned char *);
    int (*sign_detached)(unsigned char *, unsigned long long *, const unsigned char *, unsigned long long, const unsigned char *);
    int (*verify_detached)(const unsigned char *, const unsigned char *, unsigned long long, const unsigned char *);
    int (*sha_init)(crypto_hash_sha256_state *);
    int (*sha_update)(crypto_hash_sha256_state *, const unsigned char *, unsigned long long);
    int (*sha_final)(crypto_hash_sha256_state *, unsigned char *);
    void (*random_buf)(void *, size_t);
    void (*memzero)(void *, size_t);
} so;

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
    static const char *names[] = {"libsodium.so.23", "libsodium.so.26", "libsodium.so", "libsodium.23.dylib", NULL};
    const cid_symbol symbols[] = {
        {"sodium_init", (void **)&so.init},
        {"crypto_sign_secretkeybytes", (void **)&so.secretkeybytes},
        {"crypto_sign_seed_keypair", (void **)&so.seed_keypair},
        {"crypto_sign_detached", (void **)&so.sign_detached},
        {"crypto_sign_verify_detached", (void **)&so.verify_detached},
        {"crypto_hash_sha256_init", (void **)&so.sha_init},
        {"crypto_hash_sha256_update", (void **)&so.sha_update},
        {"crypto_hash_sha256_final", (void **)&so.sha_final},
        {"randombytes_buf", (void **)&so.random_buf},
        {"sodium_memzero", (void **)&so.memzero},
        {NULL, NULL},
    };
    void *h = cid_library_open(names, "libsodium", "libsodium23", so.error, sizeof so.error);
    if (h == NULL || !cid_library_resolve(h, symbols, "libsodium", "", so.error, sizeof so.error)) return;
    so.loaded = 1;
}

int cid_sodium_init(void) {
    pthread_once(&once, load);
    return so.loaded ? so.init() : -1;
}

const char *cid_sodium_error(void) {
    pthread_once(&once, load);
    return so.error;
}

size_t cid_crypto_sign_secretkeybytes(void) { return so.loaded ? so.secretkeybytes() : 64; }

int cid_crypto_sign_seed_keypair(unsigned char *pk, unsigned char *sk, const unsigned char *seed) {
    return so.loaded ? so.seed_keypair(pk, sk, seed) : -1;
}

int cid_crypto_sign_detached(unsigned char *sig, unsigned long long *siglen, const unsigned char *m,
                             unsigned long long mlen, const unsigned char *sk) {
    return so.loaded ? so.sign_detached(sig, siglen, m, mlen, sk) : -1;
}

int cid_crypto_sign_verify_detached(const unsigned char *sig, const unsigned char *m, unsigned long long mlen,
                                    const unsigned char *pk) {
    return so.loaded ? so.verify_detached(sig, m, mlen, pk) : -1;
}

int cid_crypto_hash_sha256_init(crypto_hash_sha256_state *state) { return so.loaded ? so.sha_init(state) : -1; }

int cid_crypto_hash_sha256_update(crypto_hash_sha256_state *state, const unsigned char *in, unsigned long long inlen) {
    return so.loaded ? so.sha_update(state, in, inlen) : -1;
}

int cid_crypto_hash_sha256_final(crypto_hash_sha256_state *state, unsigned char *out) {
    return so.loaded ? so.sha_final(state, out) : -1;
}

void cid_randombytes_buf(void *buf, size_t size) {
    if (so.loaded) so.random_buf(buf, size); else memset(buf, 0, size);
}

void cid_sodium_memzero(void *pnt, size_t len) {
    if (so.loaded) so.memzero(pnt, len); else memset(pnt, 0, len);
}
