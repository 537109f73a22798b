import Foundation

/// Brings an installed store up to date from a web server holding a signed build directory
/// (`manifest.json`, `manifest.json.sig` and the databases as static files):
///
/// 1. GET `URL/manifest.json` and `URL/manifest.json.sig`; verify the signature with the
///    trusted key (and with the key the store requires, if it recorded one).
/// 2. Compare with the store's current generation: a set older than it (dataset version,
///    else build time) is refused unless ``allowDowngrade``; the same manifest is "up to date".
/// 3. Download only the files whose SHA-256 is not in the current generation, resuming a file
///    an earlier fetch left incomplete with an HTTP Range request (a server that ignores it
///    sends the whole file, which is then written from the start). Each file's size and
///    SHA-256 are checked against the signed manifest before it is kept.
/// 4. Install through ``InstalledStore/install(from:settings:trust:requireSignature:)``'s path:
///    unchanged files hard-linked from the current generation, every file verified again,
///    the generation switched by one rename. Settings, slots and rules stay the store's.
///
/// The store's install lock is held from the first download to the switch: two fetches (or a
/// fetch and an install) never interleave; the second waits and then finds the store up to
/// date. Any failure leaves the current generation in place and in use. Downloads in progress
/// live in `STORE/.fetch/` (kept after a failure so that the next fetch resumes them, removed
/// after a successful install).
public struct DirectoryFetcher: Sendable {
    /// The folder URL the publisher uploaded the build directory to (no trailing `/` needed).
    public var baseURL: String
    public let store: InstalledStore
    /// The publisher's public key.
    public var trust: SigningPublicKey
    public var client: any HTTPClient
    /// Accept a set older than the installed one (a rollback the publisher signed).
    public var allowDowngrade = false
    /// The largest manifest accepted, in bytes.
    public var maxManifestBytes = 8 << 20

    /// Fault injection for tests: after this many bytes written to download files in one
    /// fetch, writes fail as on a full disk (ENOSPC). Nil in normal use.
    package var simulatedDiskSpace: Int? = nil

    public init(baseURL: String, store: InstalledStore, trust: SigningPublicKey, client: any HTTPClient, allowDowngrade: Bool = false) {
        self.baseURL = baseURL
        self.store = store
        self.trust = trust
        self.client = client
        self.allowDowngrade = allowDowngrade
    }

    /// What a fetch did.
    public struct Report: Sendable {
        /// True when the server's manifest is the one installed: nothing was downloaded.
        public var upToDate: Bool
        /// The install, nil when up to date.
        public var install: InstalledStore.InstallReport?
        public var datasetVersion: String?
        /// Files downloaded (whole or resumed) and files taken from the current generation.
        public var fetchedFiles: [String] = []
        public var reusedFiles: [String] = []
        /// Bytes received over HTTP (manifest and signature included).
        public var bytesDownloaded: Int = 0
        /// Bytes of interrupted downloads that did not have to be fetched again.
        public var bytesResumed: Int = 0
        public var seconds: Double = 0
    }

    var fetchFolder: String { store.path + "/.fetch" }

    func url(_ name: String) -> String {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        let encoded = name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/;?#"))) ?? name
        return base + "/" + encoded
    }

    /// Fetches and installs the server's set when it is newer (see the type's description).
    /// - Throws: ``DirectoryError``: `unreachable` (server down, connection broken, HTTP error
    ///   status), `badSignature`, `badManifest`, `corrupt` (a file whose size or SHA-256 differs
    ///   from the signed manifest), `downgrade`, `io` (a full disk…). The store's current
    ///   generation is unchanged and in use when it throws.
    @discardableResult
    public func fetch() throws(DirectoryError) -> Report {
        let started = Date()
        var report = try store.withInstallLock { () throws(DirectoryError) -> Report in try fetchLocked() }
        report.seconds = Date().timeIntervalSince(started)
        return report
    }

    private func fetchLocked() throws(DirectoryError) -> Report {
        var report = Report(upToDate: false)
        var written = 0
        // 1. Manifest and signature, verified before anything else is looked at.
        let manifestData = try getSmall("manifest.json", limit: maxManifestBytes, missing: .unreachable, &report)
        let signatureData = try getSmall(ManifestSignature.fileName, limit: 4096, missing: .badSignature, &report)
        let where_ = url("")
        let required = try store.requiredSigningKey()
        if let required, required != trust {
            throw DirectoryError(.badSignature, "\(store.path): the store requires key \(required.keyID), not the trusted key \(trust.keyID) given")
        }
        try ManifestSignature.verify(manifest: manifestData, signature: signatureData, key: trust, directory: where_)
        let manifest = try DirectoryManifest.decode(manifestData, path: url("manifest.json"))
        try manifest.requirePortableFileNames(path: url("manifest.json"))
        try ManifestSignature.requireHashes(manifest, path: url("manifest.json"))
        report.datasetVersion = manifest.datasetVersion

        // 2. Against the current generation.
        // A damaged pointer must not block the fetch that repairs the store (as for an install).
        let current = (try? store.current()) ?? nil
        var currentManifest: DirectoryManifest? = nil
        if let current {
            let data = try? DirectoryManifest.readManifestBytes(directory: current.path)
            if data == manifestData {
                report.upToDate = true
                return report
            }
            currentManifest = data.flatMap { try? DirectoryManifest.decode($0, path: current.path + "/manifest.json") }
            if let old = currentManifest, !allowDowngrade, Self.isOlder(manifest, than: old) {
                throw DirectoryError(.downgrade, """
                    \(url("manifest.json")): dataset \(manifest.datasetVersion ?? "?") built \(manifest.buildTime ?? "?") is older than \
                    the installed \(old.datasetVersion ?? "?") built \(old.buildTime ?? "?") (a replayed manifest?); \
                    nothing changed (--allow-downgrade to install it anyway)
                    """)
            }
        }

        // 3. Files: reuse what the current generation holds, download the rest.
        let objects = fetchFolder + "/objects"
        let set = fetchFolder + "/set"
        try FileSystem.makeDirectory(fetchFolder)
        try FileSystem.makeDirectory(objects)
        FileSystem.removeTree(set)
        try FileSystem.makeDirectory(set)
        for f in manifest.files {
            let sha = f.sha256!  // requireHashes checked every file has one
            let target = set + "/" + f.file
            if let current, let old = try reusable(f, in: currentManifest, at: current.path) {
                if !FileSystem.hardLink(old, target) { try FileSystem.copy(old, target) }
                report.reusedFiles.append(f.file)
                continue
            }
            let object = objects + "/" + sha
            if FileSystem.fileSize(object) != f.bytes {
                FileSystem.removeTree(object)
                try download(f, to: object, written: &written, &report)
            }
            report.fetchedFiles.append(f.file)
            if !FileSystem.hardLink(object, target) { try FileSystem.copy(object, target) }
        }
        try FileSystem.writeAtomically(manifestData, to: set + "/manifest.json")
        try FileSystem.writeAtomically(signatureData, to: set + "/" + ManifestSignature.fileName)

        // 4. Install: verified again (size, XXH3, SHA-256, database), then switched.
        var source = try InstalledStore.readSource(set)
        source.reportedDirectory = where_
        source.linkFromSource = true
        try source.verifySignature(trust)
        report.install = try store.installHoldingLock(source, settings: nil)
        FileSystem.removeTree(fetchFolder)
        return report
    }

    /// The current generation's copy of `f` when it has the same size and SHA-256.
    private func reusable(_ f: DirectoryManifest.File, in old: DirectoryManifest?, at folder: String) throws(DirectoryError) -> String? {
        guard let old else { return nil }
        if let same = old.files.first(where: { $0.sha256 == f.sha256 && $0.bytes == f.bytes }) {
            let p = folder + "/" + same.file
            return FileSystem.fileSize(p) == f.bytes ? p : nil
        }
        // A generation installed before manifests carried SHA-256: hash the file of that name.
        if let same = old.files.first(where: { $0.file == f.file && $0.bytes == f.bytes && $0.sha256 == nil }) {
            let p = folder + "/" + same.file
            if (try? Crypto.sha256Hex(fileAt: p)) == f.sha256 { return p }
        }
        return nil
    }

    /// GETs a small file whole. A 404 is `missing` (the signature: an unsigned set).
    private func getSmall(_ name: String, limit: Int, missing: DirectoryError.Code, _ report: inout Report) throws(DirectoryError) -> Data {
        var data = Data()
        var tooLarge = false
        let u = url(name)
        let status = try client.get(u, offset: 0) { status, bytes in
            guard status == 200 else { return true }
            if data.count + bytes.count > limit { tooLarge = true; return false }
            data.append(contentsOf: bytes)
            return true
        }
        report.bytesDownloaded += data.count
        if tooLarge { throw DirectoryError(.badManifest, "\(u): larger than \(limit) bytes") }
        guard status == 200 else {
            if status == 404 && missing == .badSignature {
                throw DirectoryError(.badSignature, "\(u): not found (HTTP 404); the set is not signed")
            }
            throw DirectoryError(missing == .badSignature ? .unreachable : missing, "\(u): the server answered HTTP \(status)")
        }
        return data
    }

    /// Downloads `f` into `object` (through `object.part`, resumed when an earlier fetch left
    /// one), checks its size and SHA-256, and renames it into place.
    private func download(_ f: DirectoryManifest.File, to object: String, written: inout Int, _ report: inout Report) throws(DirectoryError) {
        let part = object + ".part"
        let u = url(f.file)
        var have = FileSystem.fileSize(part) ?? 0
        if have > f.bytes { FileSystem.removeTree(part); have = 0 }
        var attempts = 0
        while true {
            attempts += 1
            let resumeFrom = have < f.bytes ? have : 0
            if resumeFrom == 0 && have > 0 { FileSystem.removeTree(part); have = 0 }
            let file = try FileSystem.Appender(part, truncate: resumeFrom == 0)
            var failure: DirectoryError? = nil
            var size = resumeFrom
            var first = true
            let status: Int
            do throws(DirectoryError) {
                status = try client.get(u, offset: resumeFrom) { status, bytes in
                    if first {
                        first = false
                        if status == 200 && resumeFrom > 0 {
                            // No range support: the whole file again, from the start.
                            do throws(DirectoryError) { try file.truncate() } catch { failure = error; return false }
                            size = 0
                        } else if status != 200 && status != 206 {
                            return true  // an error page: ignored, the status is reported below
                        }
                    }
                    guard status == 200 || status == 206 else { return true }
                    if size + bytes.count > f.bytes {
                        failure = DirectoryError(.corrupt, "\(u): more than the \(f.bytes) bytes the signed manifest lists")
                        return false
                    }
                    if let space = simulatedDiskSpace, written + bytes.count > space {
                        failure = DirectoryError(.io, "\(part): cannot write: No space left on device (simulated full disk)")
                        return false
                    }
                    do throws(DirectoryError) { try file.write(bytes) } catch { failure = error; return false }
                    written += bytes.count
                    size += bytes.count
                    report.bytesDownloaded += bytes.count
                    return true
                }
            } catch {
                file.close()
                throw failure ?? error
            }
            if let failure {
                file.close()
                if failure.code == .corrupt { FileSystem.removeTree(part) }
                throw failure
            }
            try file.finish()
            if status == 416 && resumeFrom > 0 && attempts == 1 {
                // The range was not satisfiable (the part is stale): start again.
                FileSystem.removeTree(part)
                have = 0
                continue
            }
            guard status == 200 || status == 206 else {
                throw DirectoryError(.unreachable, "\(u): the server answered HTTP \(status)")
            }
            if status == 206 && resumeFrom > 0 { report.bytesResumed += resumeFrom }
            break
        }
        let size = FileSystem.fileSize(part) ?? -1
        guard size == f.bytes else {
            FileSystem.removeTree(part)
            throw DirectoryError(.corrupt, "\(u): \(size) bytes, the signed manifest lists \(f.bytes) (truncated on the server?)")
        }
        let sha = try Crypto.sha256Hex(fileAt: part)
        guard sha == f.sha256 else {
            FileSystem.removeTree(part)
            throw DirectoryError(.corrupt, "\(u): SHA-256 \(sha) differs from the signed manifest's \(f.sha256 ?? "") (altered after signing)")
        }
        try FileSystem.rename(part, object)
    }

    /// True when `new` is older than `old`: by dataset version when both are numbers separated
    /// by `.`, `-` or `_` (`42`, `2026.12.01`, `2026-12-01`), otherwise by build time.
    package static func isOlder(_ new: DirectoryManifest, than old: DirectoryManifest) -> Bool {
        func numeric(_ v: String?) -> [UInt64]? {
            guard let v, !v.isEmpty else { return nil }
            let parts = v.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "." || $0 == "-" || $0 == "_" })
            let numbers = parts.compactMap { UInt64($0) }
            return numbers.count == parts.count ? numbers : nil
        }
        if let a = numeric(new.datasetVersion), let b = numeric(old.datasetVersion), a != b {
            return a.lexicographicallyPrecedes(b)
        }
        if let a = new.buildTime, let b = old.buildTime { return a < b }
        return false
    }
}
