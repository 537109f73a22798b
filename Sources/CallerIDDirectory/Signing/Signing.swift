public import Foundation
import CallerID

/// An Ed25519 public key that a store or a fetch trusts: `NAME.pub` written by `lookup keygen`.
///
/// File format, one line of text:
/// ```
/// callerid-ed25519-public KEYID BASE64
/// ```
/// `BASE64` is the 32-byte key; `KEYID` is the first 8 bytes of its SHA-256 in hex (16 digits),
/// repeated in every signature so that a signature by another key is named as such.
public struct SigningPublicKey: Sendable, Equatable {
    /// The 32 key bytes.
    public let bytes: [UInt8]
    /// 16 hex digits naming the key (first 8 bytes of its SHA-256).
    public let keyID: String

    /// A key from its 32 bytes.
    /// - Throws: ``DirectoryError`` `badSignature` for another length.
    public init(bytes: [UInt8]) throws(DirectoryError) {
        guard bytes.count == Crypto.publicKeyBytes else {
            throw DirectoryError(.badSignature, "an Ed25519 public key has \(Crypto.publicKeyBytes) bytes, not \(bytes.count)")
        }
        self.bytes = bytes
        keyID = hexString(Array(try Crypto.sha256(bytes).prefix(8)))
    }

    static let tag = "callerid-ed25519-public"

    /// The text of `NAME.pub`.
    public var fileText: String { "\(Self.tag) \(keyID) \(Data(bytes).base64EncodedString())\n" }

    /// Parses the text of a `.pub` file; `path` names it in errors.
    public init(fileText text: String, path: String) throws(DirectoryError) {
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\r" || $0 == "\t" })
        guard parts.count == 3, parts[0] == Self.tag else {
            throw DirectoryError(.badSignature, "\(path): not a CallerID public key (expected '\(Self.tag) KEYID BASE64')")
        }
        guard let data = Data(base64Encoded: String(parts[2])), data.count == Crypto.publicKeyBytes else {
            throw DirectoryError(.badSignature, "\(path): the key is not \(Crypto.publicKeyBytes) bytes of base64")
        }
        try self.init(bytes: [UInt8](data))
        guard keyID == parts[1] else {
            throw DirectoryError(.badSignature, "\(path): key id \(parts[1]) does not match the key (\(keyID)); the file is damaged")
        }
    }

    /// Reads a `.pub` file.
    public init(contentsOf path: String) throws(DirectoryError) {
        try self.init(fileText: try readSmallFile(path, what: "public key"), path: path)
    }
}

/// An Ed25519 secret key: `NAME` written by `lookup keygen` (mode 0600). Held only by the
/// publisher; never shipped.
///
/// File format, one line of text: `callerid-ed25519-secret KEYID BASE64` where `BASE64` is the
/// 32-byte seed the key pair is derived from.
package struct SigningSecretKey: Sendable {
    let seed: [UInt8]
    /// The matching package key.
    package let publicKey: SigningPublicKey

    static let tag = "callerid-ed25519-secret"

    init(seed: [UInt8]) throws(DirectoryError) {
        self.seed = seed
        publicKey = try SigningPublicKey(bytes: try Crypto.publicKey(seed: seed))
    }

    /// A new random key pair.
    package static func generate() throws(DirectoryError) -> SigningSecretKey {
        try SigningSecretKey(seed: try Crypto.randomSeed())
    }

    /// The text of the secret key file.
    package var fileText: String { "\(Self.tag) \(publicKey.keyID) \(Data(seed).base64EncodedString())\n" }

    /// Parses the text of a secret key file; `path` names it in errors.
    package init(fileText text: String, path: String) throws(DirectoryError) {
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\r" || $0 == "\t" })
        guard parts.count == 3, parts[0] == Self.tag else {
            throw DirectoryError(.badSignature, "\(path): not a CallerID secret key (expected '\(Self.tag) KEYID BASE64')")
        }
        guard let data = Data(base64Encoded: String(parts[2])), data.count == Crypto.seedBytes else {
            throw DirectoryError(.badSignature, "\(path): the key is not \(Crypto.seedBytes) bytes of base64")
        }
        try self.init(seed: [UInt8](data))
        guard publicKey.keyID == parts[1] else {
            throw DirectoryError(.badSignature, "\(path): key id \(parts[1]) does not match the key; the file is damaged")
        }
    }

    /// Reads a secret key file.
    package init(contentsOf path: String) throws(DirectoryError) {
        try self.init(fileText: try readSmallFile(path, what: "secret key"), path: path)
    }

    /// Writes `path` (mode 0600) and `path.pub` (mode 0644); refuses to overwrite either.
    package func write(to path: String) throws(DirectoryError) {
        for p in [path, path + ".pub"] where FileSystem.exists(p) {
            throw DirectoryError(.invalidArgument, "\(p): exists; refusing to overwrite a key (remove it first)")
        }
        try FileSystem.createExclusively(Array(fileText.utf8), at: path, mode: 0o600)
        do {
            try FileSystem.createExclusively(Array(publicKey.fileText.utf8), at: path + ".pub", mode: 0o644)
        } catch {
            FileSystem.removeTree(path)
            throw error
        }
    }
}

/// `manifest.json.sig`: a detached Ed25519 signature over the exact bytes of `manifest.json`
/// in the same folder. One line of JSON:
/// ```
/// {"algorithm":"ed25519","key_id":"KEYID","signature":"BASE64"}
/// ```
/// The manifest lists every file's size and SHA-256, the dataset version and the build time,
/// so the signature covers the whole set. Verification happens here and nowhere else.
package struct ManifestSignature: Sendable, Equatable {
    /// The file name beside `manifest.json`.
    package static let fileName = "manifest.json.sig"

    package var keyID: String
    /// The 64 signature bytes.
    package var signature: [UInt8]

    /// Signs manifest bytes.
    package static func sign(_ manifest: [UInt8], with key: SigningSecretKey) throws(DirectoryError) -> ManifestSignature {
        ManifestSignature(keyID: key.publicKey.keyID, signature: try Crypto.sign(manifest, seed: key.seed))
    }

    /// The text of the `.sig` file.
    package var fileText: String {
        "{\"algorithm\":\"ed25519\",\"key_id\":\"\(keyID)\",\"signature\":\"\(Data(signature).base64EncodedString())\"}\n"
    }

    init(keyID: String, signature: [UInt8]) {
        self.keyID = keyID
        self.signature = signature
    }

    private struct Wire: Decodable {
        var algorithm: String
        var key_id: String
        var signature: String
    }

    /// Parses a `.sig` file's bytes; `path` names it in errors. Never traps on any input.
    package init(data: Data, path: String) throws(DirectoryError) {
        let wire: Wire
        do { wire = try JSONDecoder().decode(Wire.self, from: data) } catch {
            throw DirectoryError(.badSignature, "\(path): not a signature file (expected {\"algorithm\":\"ed25519\",\"key_id\":…,\"signature\":…})")
        }
        guard wire.algorithm == "ed25519" else {
            throw DirectoryError(.badSignature, "\(path): algorithm '\(wire.algorithm)', only ed25519 is known")
        }
        guard let sig = Data(base64Encoded: wire.signature), sig.count == Crypto.signatureBytes else {
            throw DirectoryError(.badSignature, "\(path): the signature is not \(Crypto.signatureBytes) bytes of base64 (truncated?)")
        }
        keyID = wire.key_id
        signature = [UInt8](sig)
    }

    /// Checks that `signatureData` (a `.sig` file) is `key`'s signature of exactly
    /// `manifestData`. `directory` names the files in errors.
    /// - Throws: ``DirectoryError`` `badSignature`: unreadable signature, another key, or a
    ///   manifest changed after signing.
    package static func verify(manifest manifestData: Data, signature signatureData: Data?, key: SigningPublicKey,
                              directory: String) throws(DirectoryError) {
        let sigPath = joinPath(directory, fileName)
        guard let signatureData else {
            throw DirectoryError(.badSignature, "\(sigPath): missing; the set is not signed and this store or command requires the signature of key \(key.keyID)")
        }
        let sig = try ManifestSignature(data: signatureData, path: sigPath)
        guard sig.keyID == key.keyID else {
            throw DirectoryError(.badSignature, "\(sigPath): signed by key \(sig.keyID), not by the trusted key \(key.keyID)")
        }
        guard Crypto.verify(sig.signature, of: [UInt8](manifestData), publicKey: key.bytes) else {
            throw DirectoryError(.badSignature, "\(joinPath(directory, "manifest.json")): does not match its signature by key \(key.keyID) (changed after signing, or a forged signature)")
        }
    }

    /// Checks that a signed manifest covers every file by SHA-256 (a signature over a manifest
    /// without them would not cover the files' contents).
    static func requireHashes(_ manifest: DirectoryManifest, path: String) throws(DirectoryError) {
        if let f = manifest.files.first(where: { $0.sha256 == nil }) {
            throw DirectoryError(.badManifest, "\(path): \(quotedInput(f.file.utf8)) has no sha256; a signed set must list the SHA-256 of every file (rebuild it with this version)")
        }
    }

    /// Signs `directory/manifest.json` with `key`, writing `directory/manifest.json.sig`
    /// atomically. Every file the manifest lists must carry its SHA-256.
    @discardableResult
    package static func sign(directory: String, with key: SigningSecretKey) throws(DirectoryError) -> ManifestSignature {
        let data = try DirectoryManifest.readManifestBytes(directory: directory)
        let path = joinPath(directory, "manifest.json")
        let manifest = try DirectoryManifest.decode(data, path: path)
        try manifest.requirePortableFileNames(path: path)
        try requireHashes(manifest, path: path)
        // The files must be what the manifest says: signing a damaged set would bless it.
        for f in manifest.files {
            let p = joinPath(directory, f.file)
            guard let size = FileSystem.fileSize(p) else { throw DirectoryError(.fileNotFound, "\(p): listed in the manifest but missing") }
            guard size == f.bytes else { throw DirectoryError(.corrupt, "\(p): \(size) bytes, the manifest says \(f.bytes)") }
            let sha = try Crypto.sha256Hex(fileAt: p)
            guard sha == f.sha256 else { throw DirectoryError(.corrupt, "\(p): SHA-256 \(sha) differs from the manifest's \(f.sha256 ?? "")") }
        }
        let sig = try ManifestSignature.sign([UInt8](data), with: key)
        try FileSystem.writeAtomically(Data(sig.fileText.utf8), to: joinPath(directory, fileName))
        return sig
    }
}

/// The bytes of a small file (a key) as text.
func readSmallFile(_ path: String, what: String) throws(DirectoryError) -> String {
    guard let size = FileSystem.fileSize(path) else {
        throw DirectoryError(FileSystem.exists(path) ? .invalidArgument : .fileNotFound, "\(path): no such \(what) file")
    }
    guard size <= 4096, let data = FileManager.default.contents(atPath: path) else {
        throw DirectoryError(size > 4096 ? .badSignature : .io, "\(path): cannot read the \(what)\(size > 4096 ? " (too large to be a key)" : "")")
    }
    return String(decoding: data, as: UTF8.self)
}
