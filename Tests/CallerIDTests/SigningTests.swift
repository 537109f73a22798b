import Foundation
import Testing
@testable import CallerID
@testable import CallerIDDirectory

// Keys, signatures and the manifest model: keygen/sign/verify, tampering, the
// store's signature requirement, SHA-256 in the manifest the pipeline writes.

/// One region's database of a signed test set.
struct SignedRegion {
    var name: String
    var entries: [Entry]
}

/// Writes a build directory the way `lookup build` does (databases, then the manifest from
/// ``DirectoryManifest``'s own encoder, with each file's SHA-256) and signs it with `key`
/// when one is given.
@discardableResult
func writeSignedSet(_ dir: String, _ regions: [SignedRegion], version: String, buildTime: String = "2026-06-01T00:00:00Z",
                    key: SigningSecretKey?) throws -> DirectoryManifest {
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    var files: [DirectoryManifest.File] = []
    for r in regions {
        let path = dir + "/" + r.name + ".cid"
        _ = try buildDatabase(r.entries, at: path)
        let bytes = try #require(FileSystem.fileSize(path))
        files.append(DirectoryManifest.File(file: r.name + ".cid", region: r.name, kind: "all", entries: r.entries.count, bytes: bytes,
                                            xxh3: try Checksum.xxh3(fileAt: path), sha256: try DirectoryManifest.sha256Hex(fileAt: path)))
    }
    var manifest = DirectoryManifest(files: files, datasetVersion: version)
    manifest.buildTime = buildTime
    try manifest.jsonData().write(to: URL(fileURLWithPath: dir + "/manifest.json"))
    if let key { try ManifestSignature.sign(directory: dir, with: key) }
    return manifest
}

/// Three regions; `changed` gets different labels in version `v`.
func signedRegions(version v: Int, changed: String = "kazan") -> [SignedRegion] {
    [("moscow", 7_495_000_0000 as UInt64, 400), ("kazan", 7_843_000_0000, 300), ("omsk", 7_381_000_0000, 200)].map { name, base, n in
        SignedRegion(name: name, entries: (0..<n).map {
            Entry(number: base + UInt64($0 * 7), label: "\(name) \($0)\(name == changed ? " v\(v)" : "")")
        })
    }
}

func bytesOf(_ path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }

@Suite struct SigningTests {
    @Test func keygenWritesAPrivateSecretKeyAndAPublicKeyAndRefusesToOverwrite() throws {
        let dir = TempDir()
        let key = try SigningSecretKey.generate()
        try key.write(to: dir.path("k"))
        let attributes = try FileManager.default.attributesOfItem(atPath: dir.path("k"))
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(try SigningPublicKey(contentsOf: dir.path("k.pub")) == key.publicKey)
        #expect(try SigningSecretKey(contentsOf: dir.path("k")).publicKey == key.publicKey)
        let before = try bytesOf(dir.path("k"))
        #expect { try SigningSecretKey.generate().write(to: dir.path("k")) } throws: { ($0 as? DirectoryError)?.code == .invalidArgument }
        #expect(try bytesOf(dir.path("k")) == before)
        // Two keys differ.
        #expect(try SigningSecretKey.generate().publicKey != key.publicKey)
    }

    @Test func aSignatureVerifiesAndAnyChangedByteOfTheManifestFails() throws {
        let key = try SigningSecretKey.generate()
        let manifest = Data(#"{"files": [], "dataset_version": "1"}"#.utf8)
        let sig = try ManifestSignature.sign([UInt8](manifest), with: key)
        let sigData = Data(sig.fileText.utf8)
        try ManifestSignature.verify(manifest: manifest, signature: sigData, key: key.publicKey, directory: "d")
        var rng = SeededGenerator(seed: 16)
        for _ in 0..<8 {
            var tampered = manifest
            let i = Int.random(in: 0..<tampered.count, using: &rng)
            tampered[i] ^= UInt8.random(in: 1...255, using: &rng)
            #expect { try ManifestSignature.verify(manifest: tampered, signature: sigData, key: key.publicKey, directory: "d") } throws: {
                ($0 as? DirectoryError)?.code == .badSignature
            }
        }
        // A flipped bit of the signature itself.
        var bad = sig
        bad.signature[10] ^= 1
        #expect(throws: DirectoryError.self) {
            try ManifestSignature.verify(manifest: manifest, signature: Data(bad.fileText.utf8), key: key.publicKey, directory: "d")
        }
    }

    @Test func aSignatureByAnotherKeyIsNamedAsSuch() throws {
        let key = try SigningSecretKey.generate(), other = try SigningSecretKey.generate()
        let manifest = Data("{}".utf8)
        let sig = Data(try ManifestSignature.sign([UInt8](manifest), with: other).fileText.utf8)
        #expect { try ManifestSignature.verify(manifest: manifest, signature: sig, key: key.publicKey, directory: "d") } throws: {
            let e = $0 as? DirectoryError
            return e?.code == .badSignature && e!.message.contains("signed by key \(other.publicKey.keyID)")
        }
        // The other key's signature with this key's id: the check is cryptographic, not by id.
        var forged = try ManifestSignature(data: sig, path: "sig")
        forged.keyID = key.publicKey.keyID
        #expect(throws: DirectoryError.self) {
            try ManifestSignature.verify(manifest: manifest, signature: Data(forged.fileText.utf8), key: key.publicKey, directory: "d")
        }
    }

    @Test func truncatedOrMalformedSignatureAndKeyFilesAreErrorsNotTraps() throws {
        let key = try SigningSecretKey.generate()
        let manifest = Data("{}".utf8)
        let text = try ManifestSignature.sign([UInt8](manifest), with: key).fileText
        for n in [0, 1, 20, text.utf8.count / 2, text.utf8.count - 5] {
            let cut = Data(text.utf8.prefix(n))
            #expect { try ManifestSignature.verify(manifest: manifest, signature: cut, key: key.publicKey, directory: "d") } throws: {
                ($0 as? DirectoryError)?.code == .badSignature
            }
        }
        #expect { try ManifestSignature.verify(manifest: manifest, signature: nil, key: key.publicKey, directory: "d") } throws: {
            ($0 as? DirectoryError)?.message.contains("not signed") == true
        }
        let pub = key.publicKey.fileText
        for bad in ["", String(pub.dropLast(10)), pub.replacingOccurrences(of: key.publicKey.keyID, with: "0000000000000000"),
                    "callerid-ed25519-public x !!!!\n"] {
            #expect(throws: DirectoryError.self) { try SigningPublicKey(fileText: bad, path: "k.pub") }
        }
        #expect(throws: DirectoryError.self) { try SigningSecretKey(fileText: String(key.fileText.dropLast(8)), path: "k") }
    }

    @Test func theManifestModelRoundTripsAndOldManifestsWithoutSHA256StillRead() throws {
        var f = DirectoryManifest.File(file: "a.cid", region: "a", kind: "all", entries: 3, bytes: 10, xxh3: 0xff,
                                       sha256: String(repeating: "ab", count: 32))
        f.categories = ["spam": 1, "identify": 2]
        f.rangeStart = 5
        var m = DirectoryManifest(files: [f], datasetVersion: "7")
        m.buildTime = "2026-01-01T00:00:00Z"
        m.generator = "tests"
        m.maxEntries = 100
        let decoded = try DirectoryManifest.decode(m.jsonData(), path: "m")
        #expect(decoded == m)
        // Written by an earlier version: no sha256.
        let old = try DirectoryManifest.decode(Data(#"{"files": [{"file": "a.cid", "bytes": 1, "xxh3": "0000000000000001"}]}"#.utf8), path: "m")
        #expect(old.files[0].sha256 == nil)
        for bad in ["ABAB", String(repeating: "g", count: 64), String(repeating: "a", count: 63)] {
            let json = #"{"files": [{"file": "a.cid", "bytes": 1, "xxh3": "0000000000000001", "sha256": "\#(bad)"}]}"#
            #expect { try DirectoryManifest.decode(Data(json.utf8), path: "m") } throws: { ($0 as? DirectoryError)?.code == .badManifest }
        }
    }

    @Test func sha256MatchesTheStandardTestVectors() throws {
        #expect(try hexString(Crypto.sha256(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(try hexString(Crypto.sha256([])) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        // Streaming in chunks equals one call.
        let dir = TempDir()
        var rng = SeededGenerator(seed: 3)
        let data = (0..<3_000_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        try Data(data).write(to: URL(fileURLWithPath: dir.path("f")))
        #expect(try Crypto.sha256Hex(fileAt: dir.path("f")) == (try hexString(Crypto.sha256(data))))
    }

    @Test func signingRefusesADamagedSet() throws {
        let dir = TempDir()
        let key = try SigningSecretKey.generate()
        try writeSignedSet(dir.path("b"), signedRegions(version: 1), version: "1", key: nil)
        var bytes = try bytesOf(dir.path("b/omsk.cid"))
        bytes[bytes.count / 2] ^= 0x40
        try Data(bytes).write(to: URL(fileURLWithPath: dir.path("b/omsk.cid")))
        #expect { try ManifestSignature.sign(directory: dir.path("b"), with: key) } throws: { ($0 as? DirectoryError)?.code == .corrupt }
        #expect(!FileManager.default.fileExists(atPath: dir.path("b/manifest.json.sig")))
    }

    @Test func installWithTrustChecksTheSignatureAndEverySHA256() throws {
        let dir = TempDir()
        let key = try SigningSecretKey.generate(), other = try SigningSecretKey.generate()
        let store = try InstalledStore(path: dir.path("store"))
        try writeSignedSet(dir.path("v1"), signedRegions(version: 1), version: "1", key: key)
        try store.install(from: dir.path("v1"), trust: key.publicKey)
        #expect(try store.current()?.id == 1)
        #expect(FileManager.default.fileExists(atPath: dir.path("store/gen-1/manifest.json.sig")))
        // Another key, or no signature: refused before the store is touched.
        try writeSignedSet(dir.path("v2"), signedRegions(version: 2), version: "2", key: other)
        #expect { try store.install(from: dir.path("v2"), trust: key.publicKey) } throws: { ($0 as? DirectoryError)?.code == .badSignature }
        #expect(try store.current()?.id == 1)
        // A manifest whose SHA-256 does not match a file (XXH3 right): the install checks SHA-256.
        try writeSignedSet(dir.path("v3"), signedRegions(version: 3), version: "3", key: nil)
        let text = try String(contentsOfFile: dir.path("v3/manifest.json"), encoding: .utf8)
        let sha = try DirectoryManifest.sha256Hex(fileAt: dir.path("v3/kazan.cid"))
        try text.replacingOccurrences(of: sha, with: String(repeating: "0", count: 64)).write(toFile: dir.path("v3/manifest.json"), atomically: true, encoding: .utf8)
        try ManifestSignature.sign(Array(try bytesOf(dir.path("v3/manifest.json"))), with: key).fileText
            .write(toFile: dir.path("v3/manifest.json.sig"), atomically: true, encoding: .utf8)
        #expect { try store.install(from: dir.path("v3"), trust: key.publicKey) } throws: {
            let e = $0 as? DirectoryError
            return e?.code == .corrupt && e!.message.contains("SHA-256") && e!.message.contains("kazan.cid")
        }
        #expect(try store.current()?.id == 1)
        #expect(try store.pin().manifest.datasetVersion == "1")
    }

    @Test func aStoreThatRequiresASignatureRefusesUnsignedAndWronglySignedSets() throws {
        let dir = TempDir()
        let key = try SigningSecretKey.generate(), other = try SigningSecretKey.generate()
        let store = try InstalledStore(path: dir.path("store"))
        try writeSignedSet(dir.path("v1"), signedRegions(version: 1), version: "1", key: key)
        try store.install(from: dir.path("v1"), requireSignature: key.publicKey)
        #expect(try store.requiredSigningKey() == key.publicKey)
        try writeSignedSet(dir.path("unsigned"), signedRegions(version: 2), version: "2", key: nil)
        try writeSignedSet(dir.path("other"), signedRegions(version: 3), version: "3", key: other)
        for bad in ["unsigned", "other"] {
            #expect { try store.install(from: dir.path(bad)) } throws: { ($0 as? DirectoryError)?.code == .badSignature }
            #expect(try store.current()?.id == 1)
            #expect(try store.pin().manifest.datasetVersion == "1")
        }
        // New settings reinstall the current, signed set: still allowed.
        var settings = try store.settings()
        settings.slots = 2
        #expect(try store.updateSettings(settings).generation.id == 2)
        // A correctly signed set installs without naming the key again.
        try writeSignedSet(dir.path("v4"), signedRegions(version: 4), version: "4", key: key)
        #expect(try store.install(from: dir.path("v4")).generation.id == 3)
        // Rotation: requiring the other key with a set it signed replaces the requirement.
        #expect(try store.install(from: dir.path("other"), requireSignature: other.publicKey).generation.id == 4)
        #expect(try store.requiredSigningKey() == other.publicKey)
        #expect { try store.install(from: dir.path("v4")) } throws: { ($0 as? DirectoryError)?.code == .badSignature }
        #expect(try store.current()?.id == 4)
    }

    @Test func theCommandLineSignsInstallsAndRefusesWithExit65() throws {
        let dir = TempDir()
        #expect(try lookup(["keygen", "-o", dir.path("k")]).status == 0)
        #expect(try lookup(["keygen", "-o", dir.path("k")]).status == 64)
        #expect(try lookup(["keygen", "-o", dir.path("other")]).status == 0)
        try writeSignedSet(dir.path("v1"), signedRegions(version: 1), version: "1", key: nil)
        try writeSignedSet(dir.path("v2"), signedRegions(version: 2), version: "2", key: nil)
        let signed = try lookup(["sign", "--key", dir.path("k"), dir.path("v1") + "/"])
        #expect(signed.status == 0 && signed.stdout.contains("signed \(dir.path("v1"))/manifest.json") && !signed.stdout.contains("//"), "\(signed.stdout)")
        #expect(try lookup(["sign", "--key", dir.path("other"), dir.path("v2")]).status == 0)
        let store = dir.path("store")
        let first = try lookup(["install", "--store", store, dir.path("v1"), "--require-signature", dir.path("k.pub")])
        #expect(first.status == 0, "\(first.stderr)")
        let wrong = try lookup(["install", "--store", store, dir.path("v2")])
        #expect(wrong.status == 65)
        #expect(wrong.stderr.contains("signed by key"))
        let trusted = try lookup(["install", "--store", store, dir.path("v2"), "--trust", dir.path("other.pub")])
        #expect(trusted.status == 65, "the store's own key is checked whatever --trust says")
        #expect(try InstalledStore(path: store).current()?.id == 1)
    }

    @Test func aPipelineBuildDirectoryListsEachFilesSHA256() throws {
        let dir = TempDir()
        try "+33612345678\tAlice\n+4930123456\tBob\tspam\n".write(toFile: dir.path("in.tsv"), atomically: true, encoding: .utf8)
        let r = try lookup(["build", "-o", dir.path("out") + "/", dir.path("in.tsv")])
        #expect(r.status == 0, "\(r.stderr)")
        let manifest = try DirectoryManifest.read(directory: dir.path("out"))
        #expect(manifest.files.count == 1)
        for f in manifest.files {
            #expect(try f.sha256 == hexString(Crypto.sha256(try bytesOf(dir.path("out/" + f.file)))))
        }
        #expect(manifest.generator?.hasPrefix("CallerID ") == true)
        #expect(manifest.buildTime != nil && manifest.maxEntries != nil)
    }
}
