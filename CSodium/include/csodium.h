// CSodium: Debian's libsodium (libsodium-dev), for Ed25519 signatures and SHA-256 on Linux.
// Used only by Sources/CallerIDDirectory/Signing/Crypto.swift; Apple platforms use CryptoKit.
#ifndef CSODIUM_H
#define CSODIUM_H
#include <sodium.h>
#endif
