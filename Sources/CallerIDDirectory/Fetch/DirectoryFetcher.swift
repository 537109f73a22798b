import CallerID
import Dispatch
import Foundation

/// Brings an installed store up to date from a web server holding a signed build directory
/// (`manifest.json`, `manifest.json.sig` and the databases as static files):
///
/// 1. GET `URL/manifest.json` and `URL/manifest.json.sig`; verify the signature with the
///    trusted key (and with the key the store requires, if it recorded one).
/// 2. Compare with the store's current generation: a set older than it (dataset version,
///    else build time) is refused unless ``allowDowngrade``; the same manifest, with every
///    file of the generation in place and intact (size, XXH3), is "up to date".
/// 3. Check that the files to download fit in the free space of the store's file system, then
///    download only the files whose SHA-256 is not in the current generation, resuming a file
///    an earlier fetch left incomplete with an HTTP Range request (a server that ignores it
///    sends the whole file, which is then written from the start). Each file's size and
///    SHA-256 are checked against the signed manifest before it is kept.
/// 4. Install through ``InstalledStore/install(from:settings:trust:requireSignature:)``'s path:
///    unchanged files hard-linked from the current generation, every file verified again,
///    the generation switched by one rename. Settings, slots and rules stay the store's unless
///    ``settings`` gives others.
///
/// Every transfer keeps to ``deadline`` (a minimum average rate after a grace period), and a
/// status other than success ends it at the status line, so a fetch ends by itself whatever
/// the server does. The store's install lock is held for step 4 only: a local install never
/// waits for a download. Downloads live in `STORE/.fetch/`, which `STORE/.fetch.lock` gives to
/// one fetch at a time: a second fetch waits, then finds the store up to date. After a failure
/// `.fetch/` keeps only what the next fetch of the same set can use (complete files, and
/// partial ones whose bytes may still be right); a part that cannot be the signed file is
/// removed whatever stopped it, and a resumed file whose SHA-256 differs is downloaded once
/// more from the start before the server is blamed. Any failure leaves the current generation
/// in place and in use.
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
    /// The largest signature file accepted, in bytes.
    public static let maxSignatureBytes = 4096
    /// How slow a transfer may be (see ``TransferDeadline``).
    public var deadline = TransferDeadline()
    /// The settings to install with (slots, budget, rules…); nil keeps the store's (defaults
    /// for a new store). When the store is up to date and its current generation has other
    /// settings, its data are installed again with these.
    public var settings: FeedSettings? = nil

    /// The source of a store composed of sources this fetch brings up to date
    /// (docs/CALL-DIRECTORY.md, "Sources and packs"): only the files of its subscribed regions
    /// are downloaded, and the new generation holds them beside the other sources' packs. Nil:
    /// a store installed without a source (or nothing installed) gets the whole set as before,
    /// unless ``regions`` or ``priority`` are given; a store of sources updates the source
    /// fetched from ``baseURL``, or one named after it (``StoreSource/name(forURL:)``).
    public var source: String? = nil
    /// Regions to add to the source's subscription (each must be offered by the signed
    /// manifest); nil keeps the subscription, or subscribes a new source to every region.
    public var regions: [String]? = nil
    /// The source's priority (nil: keep; a new fetched source: ``StoreSource/defaultPriority``).
    public var priority: Int? = nil

    /// Fault injection for tests: after this many bytes written to download files in one
    /// fetch, writes fail as on a full disk (ENOSPC). Nil in normal use.
    package var simulatedDiskSpace: Int? = nil

    /// Called once the downloads are done, just before the fetch asks for the store's install
    /// lock (or installs new settings into a store found up to date): until then the fetch has
    /// changed nothing of the installed store, only `STORE/.fetch/`. `lookup fetch` uses it to
    /// say the right thing when it is interrupted.
    package var willInstall: (@Sendable () -> Void)? = nil

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
        /// The install, nil when up to date (unless ``settings`` changed the store's).
        public var install: InstalledStore.InstallReport?
        public var datasetVersion: String?
        /// Files downloaded in this fetch (whole or resumed) and files taken from the current
        /// generation.
        public var fetchedFiles: [String] = []
        public var reusedFiles: [String] = []
        /// Files an earlier fetch of the same set downloaded completely before it failed (at
        /// the install, say): checked again, not downloaded again.
        public var cachedFiles: [String] = []
        /// Bytes received over HTTP (manifest and signature included).
        public var bytesDownloaded: Int = 0
        /// Bytes of interrupted downloads that did not have to be fetched again.
        public var bytesResumed: Int = 0
        public var seconds: Double = 0
        /// The source fetched, nil for a set installed without a source.
        public var source: String? = nil
        /// The address the source was fetched from until this fetch, when this fetch names
        /// another (`--source NAME` with a mirror's URL): the source follows the new one.
        public var movedFrom: String? = nil
        /// The source's subscribed regions after the fetch (nil: a set without a source).
        public var regions: [String]? = nil
        /// Subscribed regions the signed manifest does not offer (any more).
        public var unavailableRegions: [String] = []
    }

    var fetchFolder: String { store.path + "/.fetch" }
    /// Gives `.fetch/` to one fetch at a time; outside `.fetch/`, which a fetch removes.
    var fetchLock: String { store.path + "/.fetch.lock" }

    /// The server of the set, as this fetch asks it (its client and deadline).
    var server: SetServer { SetServer(baseURL: baseURL, client: client, deadline: deadline) }

    func url(_ name: String) -> String { server.url(name) }

    /// Fetches and installs the server's set when it is newer (see the type's description).
    /// - Throws: ``DirectoryError``: `unreachable` (server down, connection broken, HTTP error
    ///   status, a transfer behind its deadline), `badSignature`, `badManifest` (also a
    ///   manifest over ``maxManifestBytes``), `corrupt` (a file whose size or SHA-256 differs
    ///   from the signed manifest), `downgrade`, `io` (a full disk, or files that need more
    ///   than the free space), `budgetExceeded` (the set does not fit the store's slots). The
    ///   store's current generation is unchanged and in use when it throws.
    @discardableResult
    public func fetch() throws(DirectoryError) -> Report {
        let started = Date()
        try store.makeFolder()
        var report = try FileSystem.withLock(fetchLock) { () throws(DirectoryError) -> Report in
            if let name = try sourceName() { return try fetchSourceHoldingFolder(name) }
            return try fetchHoldingFolder()
        }
        report.seconds = Date().timeIntervalSince(started)
        return report
    }

    private func fetchHoldingFolder() throws(DirectoryError) -> Report {
        var report = Report(upToDate: false)
        // 1. Manifest and signature, verified before anything else is looked at.
        let signed = try getSigned(&report)
        report.datasetVersion = signed.manifest.datasetVersion

        // 2. Against the current generation.
        // A damaged pointer must not block the fetch that repairs the store (as for an install).
        let current = (try? store.current()) ?? nil
        var currentManifest: DirectoryManifest? = nil
        if let current {
            let data = try? DirectoryManifest.readManifestBytes(directory: current.path)
            currentManifest = data.flatMap { try? DirectoryManifest.decode($0, path: current.path + "/manifest.json") }
            if data == signed.manifestData, let m = currentManifest, Self.isComplete(current, m) {
                report.upToDate = true
                report.install = try applySettings(to: current)
                FileSystem.removeTree(fetchFolder)   // what a killed fetch left: of no use now
                return report
            }
            if let old = currentManifest { try refuseDowngrade(signed.manifest, from: old) }
        }

        // 3. Files: reuse what the current generation holds, download the rest.
        try installStaged(&report) { (set, report) throws(DirectoryError) -> InstalledStore.InstallReport? in
            try stage(signed, into: set, current: current, currentManifest: currentManifest, &report)
            // 4. Install: verified again (size, XXH3, SHA-256, database), then switched.
            var source = try InstalledStore.readSource(set)
            source.reportedDirectory = url("")
            source.linkFromSource = true
            try source.verifySignature(trust)
            return try install(source, replacing: current)
        }
        return report
    }

    /// Steps 3 and 4: `body` stages the files into the folder it is given (`.fetch/set`) and
    /// installs them (nil: found up to date under the lock). Afterwards `.fetch/` is removed;
    /// after a failure only the staged folder is (the downloads stay for the next fetch), and a
    /// set over the budget says so.
    func installStaged(_ report: inout Report,
                       _ body: (_ set: String, _ report: inout Report) throws(DirectoryError) -> InstalledStore.InstallReport?) throws(DirectoryError) {
        let set = fetchFolder + "/set"
        do throws(DirectoryError) {
            report.install = try body(set, &report)
            report.upToDate = report.install == nil
        } catch {
            FileSystem.removeTree(set)
            guard error.code == .budgetExceeded else { throw error }
            throw DirectoryError(error.code, "\(error.message); the downloaded files are kept in \(fetchFolder): fetch again with more slots (--slots) to install them without downloading")
        }
        FileSystem.removeTree(fetchFolder)
    }

    /// GETs and verifies the manifest and its signature, with the trusted key and the key the
    /// store requires, if it recorded one (`storeKey`; a source's fetch checks its own pinned key).
    func getSigned(_ report: inout Report, storeKey: Bool = true) throws(DirectoryError) -> Signed {
        try server.signed(trust: trust, maxManifestBytes: maxManifestBytes, received: &report.bytesDownloaded) { () throws(DirectoryError) in
            guard storeKey, let required = try store.requiredSigningKey(), required != trust else { return }
            throw DirectoryError(.badSignature, "\(store.path): the store requires key \(required.keyID), not the trusted key \(trust.keyID) given")
        }
    }

    /// True when every file `manifest` lists is in generation `g` with its size and XXH3 (a
    /// file deleted or damaged in the store makes the same manifest worth fetching again).
    static func isComplete(_ g: InstalledStore.Generation, _ manifest: DirectoryManifest) -> Bool {
        manifest.files.allSatisfy { InstalledStore.intact(g.path + "/" + $0.file, $0) }
    }

    func refuseDowngrade(_ manifest: DirectoryManifest, from old: DirectoryManifest) throws(DirectoryError) {
        guard !allowDowngrade, Self.isOlder(manifest, than: old) else { return }
        throw DirectoryError(.downgrade, """
            \(url("manifest.json")): dataset \(manifest.datasetVersion ?? "?") built \(manifest.buildTime ?? "?") is older than \
            the installed \(old.datasetVersion ?? "?") built \(old.buildTime ?? "?") (a replayed manifest?); \
            nothing changed (--allow-downgrade to install it anyway)
            """)
    }

    /// The install of a store that is up to date: its data again with ``settings`` when they
    /// differ from the generation's; nil when there is nothing to change.
    func applySettings(to current: InstalledStore.Generation) throws(DirectoryError) -> InstalledStore.InstallReport? {
        guard let settings, settings != (try? InstalledStore.readSettings(current)) else { return nil }
        willInstall?()
        return try store.updateSettings(settings)
    }

    /// Step 4 under the store's install lock, taken only now. Another install may have run
    /// since step 2: the same set current by then is "up to date" (nil), a newer one refuses
    /// this one as a downgrade.
    private func install(_ source: InstalledStore.Source, replacing seen: InstalledStore.Generation?) throws(DirectoryError) -> InstalledStore.InstallReport? {
        willInstall?()
        return try store.withInstallLock { () throws(DirectoryError) -> InstalledStore.InstallReport? in
            if let now = (try? store.current()) ?? nil, now != seen {
                let data = try? DirectoryManifest.readManifestBytes(directory: now.path)
                if let data, let m = try? DirectoryManifest.decode(data, path: now.path + "/manifest.json") {
                    if data == source.manifestData && Self.isComplete(now, m) { return nil }
                    try refuseDowngrade(source.manifest, from: m)
                }
            }
            return try store.installHoldingLock(source, settings: settings)
        }
    }

    /// One file of the set and where step 3 takes it from.
    private enum Origin {
        case current(String)
        case cached
        case download(have: Int)
    }

    /// Puts every file of `signed` (or the `selected` ones: a source's subscribed regions) into
    /// `set` (hard links), with the manifest and signature:
    /// from the current generation, from a download an earlier fetch completed, or downloaded.
    func stage(_ signed: Signed, files selected: [DirectoryManifest.File]? = nil, into set: String, current: InstalledStore.Generation?,
               currentManifest: DirectoryManifest?, _ report: inout Report) throws(DirectoryError) {
        let files = selected ?? signed.manifest.files
        let objects = fetchFolder + "/objects"
        try FileSystem.makeDirectory(fetchFolder)
        try FileSystem.makeDirectory(objects)
        FileSystem.removeTree(set)
        try FileSystem.makeDirectory(set)
        var origins: [Origin] = []
        for f in files {
            origins.append(try origin(of: f, objects: objects, current: current, currentManifest: currentManifest))
        }
        // Downloads of other sets are of no use any more; then what is left must fit.
        let wanted = Set(zip(files, origins).compactMap { f, o -> String? in
            if case .current = o { return nil }
            return f.sha256
        })
        Self.prune(objects, keeping: wanted)
        try checkSpace(zip(files, origins).compactMap { f, o in
            if case .download(let have) = o { return (f, have) }
            return nil
        })
        var written = 0
        for (f, o) in zip(files, origins) {
            let target = set + "/" + f.file
            let object = objects + "/" + f.sha256!  // requireHashes checked every file has one
            switch o {
            case .current(let path):
                try linkOrCopy(path, target)
                report.reusedFiles.append(f.file)
                continue
            case .cached:
                report.cachedFiles.append(f.file)
            case .download:
                try download(f, to: object, written: &written, &report)
                report.fetchedFiles.append(f.file)
            }
            try linkOrCopy(object, target)
        }
        try FileSystem.writeAtomically(signed.manifestData, to: set + "/manifest.json")
        try FileSystem.writeAtomically(signed.signatureData, to: set + "/" + ManifestSignature.fileName)
    }

    /// Where `f` comes from: the current generation's copy, a complete earlier download whose
    /// SHA-256 still matches, or the server (with the bytes of a partial download kept).
    private func origin(of f: DirectoryManifest.File, objects: String, current: InstalledStore.Generation?,
                        currentManifest: DirectoryManifest?) throws(DirectoryError) -> Origin {
        if let current, let old = try reusable(f, in: currentManifest, at: current.path) { return .current(old) }
        let object = objects + "/" + f.sha256!
        if FileSystem.fileSize(object) == f.bytes, (try? Crypto.sha256Hex(fileAt: object)) == f.sha256 { return .cached }
        FileSystem.removeTree(object)
        let have = FileSystem.fileSize(object + ".part") ?? 0
        return .download(have: have <= f.bytes ? have : 0)
    }

    private func linkOrCopy(_ from: String, _ to: String) throws(DirectoryError) {
        if !FileSystem.hardLink(from, to) { try FileSystem.copy(from, to) }
    }

    /// Removes every download in `objects` (complete, or `.part`) whose SHA-256 is not `wanted`.
    static func prune(_ objects: String, keeping wanted: Set<String>) {
        for name in FileSystem.list(objects) {
            let sha = name.hasSuffix(".part") ? String(name.dropLast(5)) : name
            if !wanted.contains(sha) { FileSystem.removeTree(objects + "/" + name) }
        }
    }

    /// The bytes still to download (claimed sizes less what partial downloads hold) must fit
    /// in the free space of the store's file system: a signed manifest that claims more than
    /// the disk holds fails here, before a byte is written.
    private func checkSpace(_ pending: [(DirectoryManifest.File, Int)]) throws(DirectoryError) {
        var needed = 0
        for (f, have) in pending {
            let sum = needed.addingReportingOverflow(f.bytes - have)
            needed = sum.overflow ? Int.max : sum.partialValue
        }
        guard needed > 0, let free = FileSystem.freeBytes(fetchFolder), needed > free else { return }
        throw DirectoryError(.io, "\(url("manifest.json")): the files to download need \(grouped(needed)) bytes, \(grouped(free)) free in \(store.path)")
    }

    /// The current generation's copy of `f` when it has the same size and SHA-256, on disk
    /// too (a file damaged in the store is downloaded again, not installed again).
    private func reusable(_ f: DirectoryManifest.File, in old: DirectoryManifest?, at folder: String) throws(DirectoryError) -> String? {
        guard let old else { return nil }
        if let same = old.files.first(where: { $0.sha256 == f.sha256 && $0.bytes == f.bytes }) {
            let p = folder + "/" + same.file
            return FileSystem.fileSize(p) == f.bytes && (try? Crypto.sha256Hex(fileAt: p)) == f.sha256 ? p : nil
        }
        // A generation installed before manifests carried SHA-256: hash the file of that name.
        if let same = old.files.first(where: { $0.file == f.file && $0.bytes == f.bytes && $0.sha256 == nil }) {
            let p = folder + "/" + same.file
            if (try? Crypto.sha256Hex(fileAt: p)) == f.sha256 { return p }
        }
        return nil
    }

    /// Downloads `f` into `object` through `object.part` (resumed when an earlier fetch left
    /// one), checks its size and SHA-256, and renames it into place. A resumed file whose
    /// SHA-256 differs, or a part the server cannot resume (416), is downloaded once more
    /// from the start.
    private func download(_ f: DirectoryManifest.File, to object: String, written: inout Int, _ report: inout Report) throws(DirectoryError) {
        let part = object + ".part"
        let u = url(f.file)
        var again = false
        while true {
            var have = FileSystem.fileSize(part) ?? 0
            if have > f.bytes { FileSystem.removeTree(part); have = 0 }
            var resumed = 0
            if have < f.bytes || f.bytes == 0 {
                let status = try receive(f, into: part, from: have, written: &written, &report)
                if status == 416 && have > 0 && !again {
                    // The range was not satisfiable (the part is stale): start again.
                    FileSystem.removeTree(part)
                    again = true
                    continue
                }
                guard status == 200 || status == 206 else {
                    throw DirectoryError(.unreachable, "\(u): the server answered HTTP \(status)")
                }
                if status == 206 { resumed = have }
            } else {
                resumed = have  // complete, but not checked: a transfer stopped at its last byte
            }
            let size = FileSystem.fileSize(part) ?? -1
            guard size == f.bytes else {
                FileSystem.removeTree(part)
                throw DirectoryError(.corrupt, "\(u): \(size) bytes, the signed manifest lists \(f.bytes) (truncated on the server?)")
            }
            let sha = try Crypto.sha256Hex(fileAt: part)
            guard sha == f.sha256 else {
                FileSystem.removeTree(part)
                // Bytes kept from an earlier transfer may be what was wrong: the whole file once more.
                if resumed > 0 && !again { again = true; continue }
                throw DirectoryError(.corrupt, "\(u): SHA-256 \(sha) differs from the signed manifest's \(f.sha256 ?? "") (altered after signing)")
            }
            report.bytesResumed += resumed
            try FileSystem.rename(part, object)
            return
        }
    }

    /// One GET of `f` from byte `offset` on, appended to `part` (written from the start when
    /// the server sends the whole file). Returns the status; only a 200 or 206 body is
    /// written. More bytes than the signed size stop the transfer and remove the part: they
    /// cannot be the signed file.
    private func receive(_ f: DirectoryManifest.File, into part: String, from offset: Int,
                         written: inout Int, _ report: inout Report) throws(DirectoryError) -> Int {
        let u = url(f.file)
        let file = try FileSystem.Appender(part, truncate: offset == 0)
        var size = offset
        var first = true
        let status: Int
        do throws(DirectoryError) {
            status = try server.get(u, offset: offset, maxBytes: f.bytes, accepting: [200, 206]) { status, bytes throws(DirectoryError) in
                if first {
                    first = false
                    if status == 200 && offset > 0 {
                        // No range support: the whole file again, from the start.
                        try file.truncate()
                        size = 0
                    }
                }
                guard size + bytes.count <= f.bytes else {
                    throw DirectoryError(.corrupt, "\(u): more than the \(f.bytes) bytes the signed manifest lists")
                }
                if let space = simulatedDiskSpace, written + bytes.count > space {
                    throw DirectoryError(.io, "\(part): cannot write: No space left on device (simulated full disk)")
                }
                try file.write(bytes)
                written += bytes.count
                size += bytes.count
                report.bytesDownloaded += bytes.count
            }
        } catch {
            file.close()
            if error.code == .corrupt { FileSystem.removeTree(part) }
            throw error
        }
        try file.finish()
        return status
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

/// The web folder of a signed set, asked through a client within a deadline: the GETs of a
/// fetch, and of a look at what a source offers (no store involved).
struct SetServer {
    var baseURL: String
    var client: any HTTPClient
    var deadline: TransferDeadline

    /// The address of `name` in the folder (percent-encoded).
    func url(_ name: String) -> String {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        let encoded = name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/;?#"))) ?? name
        return base + "/" + encoded
    }

    /// GETs the manifest and its signature, runs `check` (a key the store requires), then
    /// verifies the signature with `trust`, the portable names and the SHA-256 of every file.
    func signed(trust: SigningPublicKey, maxManifestBytes: Int, received: inout Int,
                check: () throws(DirectoryError) -> Void = {}) throws(DirectoryError) -> Signed {
        let manifestData = try getSmall("manifest.json", limit: maxManifestBytes, tooLarge: .badManifest, missing: .unreachable, received: &received)
        let signatureData = try getSmall(ManifestSignature.fileName, limit: DirectoryFetcher.maxSignatureBytes, tooLarge: .badSignature,
                                         missing: .badSignature, received: &received)
        try check()
        try ManifestSignature.verify(manifest: manifestData, signature: signatureData, key: trust, directory: url(""))
        let manifest = try DirectoryManifest.decode(manifestData, path: url("manifest.json"))
        try manifest.requirePortableFileNames(path: url("manifest.json"))
        try ManifestSignature.requireHashes(manifest, path: url("manifest.json"))
        return Signed(manifest: manifest, manifestData: manifestData, signatureData: signatureData)
    }

    /// One GET through the client within ``deadline`` for `maxBytes`. A status not in
    /// `accepted` ends the transfer (clients stop at the status line; a body piece that still
    /// arrives stops it) and is returned. `body` gets the accepted body pieces; when it
    /// throws, the transfer stops and its error is what this throws, not the client's.
    func get(_ address: String, offset: Int = 0, maxBytes: Int, accepting accepted: [Int],
                     _ body: (_ status: Int, _ bytes: UnsafeRawBufferPointer) throws(DirectoryError) -> Void) throws(DirectoryError) -> Int {
        let request = HTTPRequest(url: address, offset: offset, maxBytes: maxBytes, deadline: deadline)
        let started = DispatchTime.now().uptimeNanoseconds
        var failure: DirectoryError? = nil
        var refused: Int? = nil
        var received = 0
        let status: Int
        do throws(DirectoryError) {
            status = try client.get(request) { status, bytes in
                guard accepted.contains(status) else { refused = status; return false }
                received += bytes.byteCount
                // The deadline again, for a client that does not keep it.
                let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
                if deadline.isBehind(received: received, elapsed: elapsed) {
                    failure = deadline.tooSlow(address, received: received, elapsed: elapsed)
                    return false
                }
                do throws(DirectoryError) {
                    try bytes.withUnsafeBytes { (piece) throws(DirectoryError) in try body(status, piece) }
                } catch { failure = error; return false }
                return true
            }
        } catch {
            if let failure { throw failure }
            if let refused { return refused }
            throw error
        }
        if let failure { throw failure }
        return refused ?? status
    }

    /// GETs a small file whole: more than `limit` bytes is a `tooLarge` error (exit 65), a 404
    /// is `missing` (the signature: an unsigned set).
    func getSmall(_ name: String, limit: Int, tooLarge: DirectoryError.Code, missing: DirectoryError.Code,
                  received total: inout Int) throws(DirectoryError) -> Data {
        var data = Data()
        let u = url(name)
        let status = try get(u, maxBytes: limit, accepting: [200]) { _, bytes throws(DirectoryError) in
            guard data.count + bytes.count <= limit else { throw DirectoryError(tooLarge, "\(u): larger than \(limit) bytes") }
            data.append(contentsOf: bytes)
        }
        total += data.count
        guard status == 200 else {
            if status == 404 && missing == .badSignature {
                throw DirectoryError(.badSignature, "\(u): not found (HTTP 404); the set is not signed")
            }
            throw DirectoryError(.unreachable, "\(u): the server answered HTTP \(status)")
        }
        return data
    }
}

/// The signed manifest, its bytes and its signature's, as the server has them.
struct Signed {
    var manifest: DirectoryManifest
    var manifestData: Data
    var signatureData: Data
}
