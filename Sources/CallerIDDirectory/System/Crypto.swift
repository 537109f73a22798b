// The one place with cryptography: Ed25519 signatures and SHA-256, from libsodium on Linux
// (Debian's libsodium-dev, module CSodium) and CryptoKit on Apple platforms. Nothing here is
// home-made: every primitive is the library's. The CryptoKit branch cannot be compiled on
// the Linux machines this package is developed on; it is written against CryptoKit's
// documented API (Curve25519.Signing, SHA256) and must be built on a Mac before a release.
// In System/: it calls C and hands libsodium raw pointers.
import CallerID
#if canImport(CryptoKit)
internal import CryptoKit
#else
internal import CSodium
#endif
import Foundation

package enum Crypto {
    /// Sizes of an Ed25519 seed (the secret key as stored), public key and signature.
    package static let seedBytes = 32
    package static let publicKeyBytes = 32
    package static let signatureBytes = 64

    #if !canImport(CryptoKit)
    /// `sodium_init` once per process (it loads libsodium, picks implementations and seeds the
    /// generator); false when libsodium cannot be loaded (``unavailable`` says why).
    private static let ready: Bool = cid_sodium_init() >= 0
    private static var unavailable: DirectoryError {
        DirectoryError(.io, "libsodium failed to load or initialise: \(String(cString: cid_sodium_error()))")
    }
    #endif

    /// A new random seed (the secret half of an Ed25519 key pair).
    package static func randomSeed() throws(DirectoryError) -> [UInt8] {
        #if canImport(CryptoKit)
        return [UInt8](Curve25519.Signing.PrivateKey().rawRepresentation)
        #else
        guard ready else { throw unavailable }
        var seed = [UInt8](repeating: 0, count: seedBytes)
        cid_randombytes_buf(&seed, seedBytes)
        return seed
        #endif
    }

    /// The public key of a seed.
    package static func publicKey(seed: [UInt8]) throws(DirectoryError) -> [UInt8] {
        precondition(seed.count == seedBytes)
        #if canImport(CryptoKit)
        do {
            return [UInt8](try Curve25519.Signing.PrivateKey(rawRepresentation: seed).publicKey.rawRepresentation)
        } catch {
            throw DirectoryError(.badSignature, "not an Ed25519 secret key: \(error)")
        }
        #else
        guard ready else { throw unavailable }
        var pk = [UInt8](repeating: 0, count: publicKeyBytes)
        var sk = [UInt8](repeating: 0, count: Int(cid_crypto_sign_secretkeybytes()))
        defer { cid_sodium_memzero(&sk, sk.count) }
        guard cid_crypto_sign_seed_keypair(&pk, &sk, seed) == 0 else {
            throw DirectoryError(.badSignature, "not an Ed25519 secret key")
        }
        return pk
        #endif
    }

    /// The detached Ed25519 signature of `message` by the key of `seed`.
    package static func sign(_ message: [UInt8], seed: [UInt8]) throws(DirectoryError) -> [UInt8] {
        precondition(seed.count == seedBytes)
        #if canImport(CryptoKit)
        do {
            let key = try Curve25519.Signing.PrivateKey(rawRepresentation: seed)
            return [UInt8](try key.signature(for: Data(message)))
        } catch {
            throw DirectoryError(.io, "cannot sign: \(error)")
        }
        #else
        guard ready else { throw unavailable }
        var pk = [UInt8](repeating: 0, count: publicKeyBytes)
        var sk = [UInt8](repeating: 0, count: Int(cid_crypto_sign_secretkeybytes()))
        defer { cid_sodium_memzero(&sk, sk.count) }
        guard cid_crypto_sign_seed_keypair(&pk, &sk, seed) == 0 else { throw DirectoryError(.io, "cannot derive the key pair") }
        var signature = [UInt8](repeating: 0, count: signatureBytes)
        var length: UInt64 = 0
        guard cid_crypto_sign_detached(&signature, &length, message, UInt64(message.count), sk) == 0, length == UInt64(signatureBytes) else {
            throw DirectoryError(.io, "cannot sign")
        }
        return signature
        #endif
    }

    /// True when `signature` is a valid Ed25519 signature of `message` by `publicKey`.
    /// Wrong lengths are simply invalid (never a trap).
    package static func verify(_ signature: [UInt8], of message: [UInt8], publicKey: [UInt8]) -> Bool {
        guard signature.count == signatureBytes, publicKey.count == publicKeyBytes else { return false }
        #if canImport(CryptoKit)
        guard let key = try? Curve25519.Signing.PublicKey(rawRepresentation: publicKey) else { return false }
        return key.isValidSignature(Data(signature), for: Data(message))
        #else
        guard ready else { return false }
        return cid_crypto_sign_verify_detached(signature, message, UInt64(message.count), publicKey) == 0
        #endif
    }

    /// Streaming SHA-256.
    package struct SHA256Hasher {
        #if canImport(CryptoKit)
        private var state = CryptoKit.SHA256()
        #else
        private var state = crypto_hash_sha256_state()
        #endif

        /// - Throws: when libsodium cannot be loaded (Linux): a digest is never made up.
        package init() throws(DirectoryError) {
            #if !canImport(CryptoKit)
            guard Crypto.ready, cid_crypto_hash_sha256_init(&state) == 0 else { throw Crypto.unavailable }
            #endif
        }

        package mutating func update(_ bytes: UnsafeRawBufferPointer) {
            guard bytes.count > 0 else { return }
            #if canImport(CryptoKit)
            state.update(bufferPointer: bytes)
            #else
            cid_crypto_hash_sha256_update(&state, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
            #endif
        }

        package mutating func update(_ bytes: [UInt8]) {
            bytes.withUnsafeBytes { update($0) }
        }

        /// The 32-byte digest.
        package mutating func finalize() -> [UInt8] {
            #if canImport(CryptoKit)
            return [UInt8](state.finalize())
            #else
            var out = [UInt8](repeating: 0, count: 32)
            cid_crypto_hash_sha256_final(&state, &out)
            return out
            #endif
        }
    }

    /// The first 8 bytes of SHA-256(`bytes`) read as a little-endian integer, without an
    /// allocation: how Apple's `KeywordDatabase` shards a keyword (the Live Caller ID export
    /// measures the shards `PIRProcessDatabase` will make).
    package static func sha256PrefixLE(_ bytes: UnsafeRawBufferPointer) throws(DirectoryError) -> UInt64 {
        #if canImport(CryptoKit)
        let digest = CryptoKit.SHA256.hash(data: bytes)
        return digest.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
        #else
        guard ready else { throw unavailable }
        var out: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        var state = crypto_hash_sha256_state()
        _ = cid_crypto_hash_sha256_init(&state)
        if bytes.count > 0 {
            cid_crypto_hash_sha256_update(&state, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(bytes.count))
        }
        withUnsafeMutableBytes(of: &out) { cid_crypto_hash_sha256_final(&state, $0.baseAddress!.assumingMemoryBound(to: UInt8.self)) }
        return UInt64(littleEndian: out.0)
        #endif
    }

    /// SHA-256 of `bytes`.
    package static func sha256(_ bytes: [UInt8]) throws(DirectoryError) -> [UInt8] {
        var h = try SHA256Hasher()
        h.update(bytes)
        return h.finalize()
    }

    /// SHA-256 of a whole file, read in 1 MiB chunks, as 64 lowercase hex digits.
    package static func sha256Hex(fileAt path: String) throws(DirectoryError) -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw DirectoryError(FileSystem.exists(path) ? .io : .fileNotFound, "\(path): cannot open to hash")
        }
        defer { try? handle.close() }
        var h = try SHA256Hasher()
        while true {
            let chunk: Data
            do { chunk = try handle.read(upToCount: 1 << 20) ?? Data() } catch {
                throw DirectoryError(.io, "\(path): cannot read: \(error.localizedDescription)")
            }
            if chunk.isEmpty { break }
            chunk.withUnsafeBytes { h.update($0) }
        }
        return hexString(h.finalize())
    }
}

/// Lowercase hex digits of `bytes`.
package func hexString(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    out.reserveCapacity(bytes.count * 2)
    for b in bytes {
        out.append(digits[Int(b >> 4)])
        out.append(digits[Int(b & 15)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// True for exactly `count` lowercase hex digits.
func isLowerHex(_ s: String, count: Int) -> Bool {
    s.utf8.count == count && s.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
}
