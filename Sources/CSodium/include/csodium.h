// CSodium: Debian's libsodium (libsodium23), opened with dlopen on first use — never linked, so
// `lookup NUMBER` starts without it (BENCHMARKS.md "Start-up"). For Ed25519 signatures and
// SHA-256 on Linux, used only by Sources/CallerIDDirectory/System/Crypto.swift; Apple
// platforms use CryptoKit. Each function is libsodium's of the same name without `cid_`.
#ifndef CSODIUM_H
#define CSODIUM_H
#include <stddef.h>
#include <sodium/crypto_hash_sha256.h>   // the state type only (libsodium-dev)

/// sodium_init() of the library, loading it first: < 0 when it cannot be loaded or initialised
/// (cid_sodium_error() says why). Call it, and check it, before any other function here.
int cid_sodium_init(void);
/// Why the library could not be loaded ("" when it was).
const char *cid_sodium_error(void);

size_t cid_crypto_sign_secretkeybytes(void);
int cid_crypto_sign_seed_keypair(unsigned char *pk, unsigned char *sk, const unsigned char *seed);
int cid_crypto_sign_detached(unsigned char *sig, unsigned long long *siglen, const unsigned char *m,
                             unsigned long long mlen, const unsigned char *sk);
int cid_crypto_sign_verify_detached(const unsigned char *sig, const unsigned char *m, unsigned long long mlen,
                                    const unsigned char *pk);
int cid_crypto_hash_sha256_init(crypto_hash_sha256_state *state);
int cid_crypto_hash_sha256_update(crypto_hash_sha256_state *state, const unsigned char *in, unsigned long long inlen);
int cid_crypto_hash_sha256_final(crypto_hash_sha256_state *state, unsigned char *out);
void cid_randombytes_buf(void *buf, size_t size);
void cid_sodium_memzero(void *pnt, size_t len);
#endif
