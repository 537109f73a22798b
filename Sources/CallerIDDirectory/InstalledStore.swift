import CallerID
import Foundation

/// The installed databases in the app group's shared container, as generations:
///
/// ```
/// STORE/
///   CURRENT            "current 7\nprevious 6\n": the pointer, replaced by rename
///   gen-7/             the set in use: manifest.json (verbatim from the build), settings.json,
///                      plan.json (the slot split), the database files
///   gen-6/             the previous set, kept until the next install succeeds
///   .lock              serializes installs
///   signing-key.pub    when present: every install must be signed by this key
/// ```
///
/// An install never touches the set in use: it stages the new set in a fresh folder (files
/// that did not change are hard-linked from the current generation, others copied), verifies
/// every staged file (size, whole-file XXH3 against the manifest, full ``Database/verify()``),
/// computes the slot plan, fsyncs, renames the folder to `gen-N`, and only then switches
/// `CURRENT` with one atomic rename. A damaged, truncated or missing file, a bad manifest or
/// a set that does not fit the budget fails the install and leaves the previous set in place
/// and in use. The generation that was current before stays on disk until the next install
/// succeeds: an extension in the middle of loading it, or computing a delta from it, still
/// finds it. Nothing is deleted after loading: switching the extension off and on asks for the
/// full list again, and the current generation is always there to give it.
public final class InstalledStore: Sendable {
    /// One installed set.
    public struct Generation: Sendable, Equatable, Hashable {
        public let id: UInt64
        public let path: String
    }

    /// What an install did.
    public struct InstallReport: Sendable {
        public var generation: Generation
        public var previous: Generation?
        /// Regions added, removed or changed compared with the previous generation.
        public var changes: RegionChanges
        /// Files hard-linked from the previous generation (unchanged) and copied (new).
        public var linkedFiles: Int
        public var copiedFiles: Int
        public var plan: SlotPlan
        public var settings: FeedSettings
        /// Files of the generation installed again that were missing or damaged in it, and
        /// were taken from the previous generation (``reinstall(settings:trust:requireSignature:)``,
        /// and any step of a store composed of sources).
        public var repairedFiles: [String] = []
        /// In a store composed of sources: packs of other sources than the one this step
        /// changed that were missing or damaged in the current generation, with no intact copy
        /// in the previous one, and were left out of the new generation (their source's next
        /// step brings them back). Their source's subscription is unchanged.
        public var missingPacks: [String] = []
        /// In a store composed of sources: every source of the new generation, in precedence
        /// order; empty for a set installed without a source.
        public var sources: [StoreSource] = []
    }

    public let path: String

    /// A store folder. Nothing is created until the first install: opening a store that does
    /// not exist yet (or is empty) gives one with nothing installed.
    /// - Throws: ``DirectoryError`` `invalidArgument` when `path` exists and is not a folder.
    public init(path: String) throws(DirectoryError) {
        // `store/` names `store`: its files are `store/gen-2/…`, never `store//gen-2/…`.
        self.path = OutputPath.withoutTrailingSlashes(path)
        if FileSystem.exists(path) && !FileSystem.isDirectory(path) {
            throw DirectoryError(.invalidArgument, "\(path): not a folder, cannot be a store")
        }
    }

    var pointerPath: String { path + "/CURRENT" }

    var signingKeyPath: String { path + "/signing-key.pub" }

    /// The key every install must be signed by (``install(from:settings:trust:requireSignature:)``
    /// with `requireSignature` records it), nil when the store accepts unsigned sets.
    /// - Throws: ``DirectoryError`` `badSignature` when the recorded key file is damaged.
    public func requiredSigningKey() throws(DirectoryError) -> SigningPublicKey? {
        guard FileSystem.exists(signingKeyPath) else { return nil }
        return try SigningPublicKey(contentsOf: signingKeyPath)
    }

    func generationPath(_ id: UInt64) -> String { path + "/gen-\(id)" }

    /// The set in use, nil when nothing was installed yet.
    public func current() throws(DirectoryError) -> Generation? {
        try readPointer().current.map { Generation(id: $0, path: generationPath($0)) }
    }

    /// The set in use before the last install, while it is kept.
    public func previous() throws(DirectoryError) -> Generation? {
        guard let id = try readPointer().previous, FileSystem.exists(generationPath(id) + "/manifest.json") else { return nil }
        return Generation(id: id, path: generationPath(id))
    }

    /// Generation `id` if it is still on disk.
    public func generation(_ id: UInt64) -> Generation? {
        FileSystem.exists(generationPath(id) + "/manifest.json") ? Generation(id: id, path: generationPath(id)) : nil
    }

    /// The current generation, pinned: `CURRENT` is read once and everything the result holds
    /// (manifest, settings, slot plan, the opened databases) comes from that one generation,
    /// whatever installs run meanwhile. Feed from it (``DirectoryFeeder/init(_:slot:)``)
    /// rather than combining ``current()``, ``plan(_:)`` and ``snapshot(_:)``, each of which
    /// reads `CURRENT` again when called without a generation.
    /// - Throws: ``DirectoryError`` `fileNotFound` when nothing is installed; `badManifest`,
    ///   `corrupt`, `io` for a damaged generation.
    public func pin() throws(DirectoryError) -> InstalledGeneration {
        try withCurrent { (g, previous) throws(DirectoryError) -> InstalledGeneration in
            guard let g else {
                throw DirectoryError(.fileNotFound, "\(path): nothing installed yet (install a build directory: lookup install --store \(path) DIR, or fetch one: lookup fetch URL --store \(path) --trust KEY.pub)")
            }
            return try InstalledGeneration(store: self, generation: g, previous: previous)
        }
    }

    /// Generation `generation` pinned (see ``pin()``); its ``InstalledGeneration/previous``
    /// is nil.
    /// - Throws: ``DirectoryError`` `fileNotFound` when it is no longer on disk.
    public func pin(_ generation: Generation) throws(DirectoryError) -> InstalledGeneration {
        guard FileSystem.exists(generation.path + "/manifest.json") else {
            throw DirectoryError(.fileNotFound, "\(generation.path): generation \(generation.id) is no longer installed")
        }
        return try InstalledGeneration(store: self, generation: generation, previous: nil)
    }

    /// Opens a generation (default: the current one, pinned) for streaming.
    public func snapshot(_ generation: Generation? = nil) throws(DirectoryError) -> DirectorySnapshot {
        if let generation { return try pin(generation).snapshot }
        return try pin().snapshot
    }

    /// The slot plan stored with a generation (default: the current one).
    public func plan(_ generation: Generation? = nil) throws(DirectoryError) -> SlotPlan {
        if let generation { return try Self.readPlan(generation) }
        return try withCurrent { (g, _) throws(DirectoryError) -> SlotPlan in
            guard let g else { throw DirectoryError(.fileNotFound, "\(path): nothing installed yet (install a build directory: lookup install --store \(path) DIR, or fetch one: lookup fetch URL --store \(path) --trust KEY.pub)") }
            return try Self.readPlan(g)
        }
    }

    static func readPlan(_ g: Generation) throws(DirectoryError) -> SlotPlan {
        let file = g.path + "/plan.json"
        guard let data = FileManager.default.contents(atPath: file) else {
            throw DirectoryError(.fileNotFound, "\(file): missing")
        }
        let plan: SlotPlan
        do {
            plan = try JSONDecoder().decode(SlotPlan.self, from: data)
        } catch {
            throw DirectoryError(.badManifest, "\(file): not a slot plan: \(error)")
        }
        try plan.validate(path: file)
        return plan
    }

    /// The settings of the current generation (defaults when nothing is installed).
    public func settings() throws(DirectoryError) -> FeedSettings {
        try withCurrent { (g, _) throws(DirectoryError) -> FeedSettings in
            guard let g else { return FeedSettings() }
            return try Self.readSettings(g)
        }
    }

    static func readSettings(_ g: Generation) throws(DirectoryError) -> FeedSettings {
        let file = g.path + "/settings.json"
        guard let data = FileManager.default.contents(atPath: file) else { return FeedSettings() }
        return try FeedSettings.decode(data, path: file)
    }

    /// Installs the set described by `buildDirectory/manifest.json` (a build output directory),
    /// with `settings` (default: the current generation's settings).
    ///
    /// Signatures: with `trust`, the set's `manifest.json.sig` must be that key's signature of
    /// its manifest. With `requireSignature`, the same, and the key is recorded in the store:
    /// from then on every install (this method, ``updateSettings(_:)``, ``DirectoryFetcher``)
    /// must be signed by it; a `requireSignature` other than the recorded key replaces it (key
    /// rotation: the set must be signed by the new key). Otherwise a store that recorded a key
    /// checks it whatever `trust` says. A signed set must list every file's SHA-256, and each
    /// staged file is checked against it.
    /// - Throws: ``DirectoryError``: `corrupt` for a file that fails verification, `badManifest`,
    ///   `badSignature`, `fileNotFound`, `budgetExceeded`, `io`. The store is unchanged when it
    ///   throws.
    @discardableResult
    public func install(from buildDirectory: String, settings: FeedSettings? = nil, trust: SigningPublicKey? = nil,
                        requireSignature: SigningPublicKey? = nil) throws(DirectoryError) -> InstallReport {
        // Everything that can be checked without the store is checked before the store folder
        // or its lock file is created: a mistyped source leaves no empty store behind.
        let source = try Self.readSource(buildDirectory)
        for key in [trust, requireSignature].compactMap({ $0 }) { try source.verifySignature(key) }
        if let settings { try Self.checkInstallable(settings) }
        return try withInstallLock { () throws(DirectoryError) -> InstallReport in
            try installLocked(source, settings: settings, recordKey: requireSignature)
        }
    }

    /// Creates the store folder when it does not exist yet.
    func makeFolder() throws(DirectoryError) {
        if !FileSystem.isDirectory(path) {
            if FileSystem.exists(path) { throw DirectoryError(.invalidArgument, "\(path): not a folder, cannot be a store") }
            try FileSystem.makeDirectory(path)
        }
    }

    /// Runs `body` holding the store's install lock (a fetch takes it for its install step
    /// only, never while downloading). Creates the store folder.
    func withInstallLock<R>(_ body: () throws(DirectoryError) -> R) throws(DirectoryError) -> R {
        try makeFolder()
        return try FileSystem.withLock(path + "/.lock", body)
    }

    /// An install from a source read and verified by the caller, under the lock the caller holds.
    func installHoldingLock(_ source: Source, settings: FeedSettings?) throws(DirectoryError) -> InstallReport {
        try installLocked(source, settings: settings, recordKey: nil)
    }

    /// ``FeedSettings/validate()``, and a budget CallKit can grant: at most
    /// ``CallDirectorySimulator/callKitMaximumEntries`` per extension.
    static func checkInstallable(_ settings: FeedSettings) throws(DirectoryError) {
        try settings.validate()
        let cap = CallDirectorySimulator.callKitMaximumEntries
        guard settings.maxEntries <= cap else {
            throw DirectoryError(.invalidArgument, "max entries \(grouped(settings.maxEntries)) per extension: above CallKit's cap of \(grouped(cap)); split the entries across more extensions (slots) instead")
        }
    }

    /// The blocking categories `settings` names must be blocking categories of `snapshot`'s
    /// databases or standard blocking names (``Category/blockingNames``).
    static func checkCategories(_ settings: FeedSettings, _ snapshot: DirectorySnapshot) throws(DirectoryError) {
        guard let names = settings.blockCategories else { return }
        var known = Category.blockingNames
        for db in snapshot.databases {
            for c in db.categories where c.action == .block { known.insert(c.name) }
        }
        let unknown = names.map { $0.lowercased() }.filter { !known.contains($0) }
        guard unknown.isEmpty else {
            throw DirectoryError(.invalidArgument, "block categories: \(unknown.map { "'\($0)'" }.joined(separator: ", ")) \(unknown.count == 1 ? "is not a blocking category" : "are not blocking categories"); known: \(known.sorted().joined(separator: ", "))")
        }
    }

    /// A build directory read and checked before anything is staged: manifest, and every file
    /// present with the size the manifest says.
    struct Source {
        var directory: String
        var manifestData: Data
        var manifest: DirectoryManifest
        /// `manifest.json.sig` when the directory has one.
        var signatureData: Data?
        /// The name errors give the source (a fetch's URL rather than its download folder).
        var reportedDirectory: String? = nil
        /// Hard-link new files from the source rather than copy them (a fetch's own downloads).
        var linkFromSource = false
        /// Files to take from elsewhere than `directory` (a repair: the previous generation's
        /// copy of a file missing from the current one), by name; hard-linked.
        var replacements: [String: String] = [:]
        /// Files to copy from elsewhere than `directory`, by name (a local source's files,
        /// renamed in a composed generation).
        var copies: [String: String] = [:]
        /// What errors call a file, by name, when not `reportedDirectory/name`.
        var reportedNames: [String: String] = [:]
        /// More files of the generation (path inside it, bytes): a composed generation's
        /// record of its sources and their own manifests.
        var extraFiles: [(path: String, data: Data)] = []
        /// A generation composed of sources: its manifest is the store's own, unsigned; each
        /// source's set was checked against its pinned key when it was put in.
        var isComposed = false

        /// Where the file `name` of the set is read from.
        func path(of name: String) -> String { replacements[name] ?? copies[name] ?? joinPath(directory, name) }

        /// What errors call the file `name`.
        func reportedName(of name: String) -> String { reportedNames[name] ?? joinPath(reportedDirectory ?? directory, name) }

        func verifySignature(_ key: SigningPublicKey) throws(DirectoryError) {
            try ManifestSignature.verify(manifest: manifestData, signature: signatureData, key: key, directory: directory)
            try ManifestSignature.requireHashes(manifest, path: joinPath(directory, "manifest.json"))
        }
    }

    /// Reads and checks a build directory. With `repairFrom`, a file missing from `directory`
    /// or of the wrong size is taken from that generation when it holds the same file (size,
    /// XXH3, SHA-256) instead of failing.
    static func readSource(_ directory: String, repairFrom spare: Generation? = nil) throws(DirectoryError) -> Source {
        guard FileSystem.exists(directory) else {
            throw DirectoryError(.fileNotFound, "\(directory): no such build directory")
        }
        guard FileSystem.isDirectory(directory) else {
            throw DirectoryError(.invalidArgument, """
                \(directory): a single database file, not a build directory; install takes the folder a \
                'lookup build -o DIR/' writes (manifest.json beside the databases)
                """)
        }
        let manifestData = try DirectoryManifest.readManifestBytes(directory: directory)
        let manifest = try DirectoryManifest.decode(manifestData, path: joinPath(directory, "manifest.json"))
        try manifest.requirePortableFileNames(path: joinPath(directory, "manifest.json"))
        // Cheap checks before copying anything: every file present with the size the manifest says.
        var replacements: [String: String] = [:]
        for f in manifest.files {
            let p = joinPath(directory, f.file)
            if let spare, !Self.intact(p, f), let copy = Self.copy(of: f, in: spare) {
                replacements[f.file] = copy
                continue
            }
            guard let size = FileSystem.fileSize(p) else {
                throw DirectoryError(.fileNotFound, "\(p): listed in the manifest but missing")
            }
            guard size == f.bytes else {
                throw DirectoryError(.corrupt, "\(p): \(size) bytes, the manifest says \(f.bytes) (truncated or incomplete download?)")
            }
        }
        var source = Source(directory: directory, manifestData: manifestData, manifest: manifest, signatureData: try readSignature(directory))
        source.replacements = replacements
        return source
    }

    /// True when the file at `p` has `f`'s size and whole-file XXH3.
    static func intact(_ p: String, _ f: DirectoryManifest.File) -> Bool {
        FileSystem.fileSize(p) == f.bytes && (try? Checksum.xxh3(fileAt: p)) == f.xxh3
    }

    /// Generation `g`'s intact copy of `f` (same size, XXH3 and SHA-256 in its manifest, and
    /// on disk with that size and XXH3), nil when it has none.
    static func copy(of f: DirectoryManifest.File, in g: Generation) -> String? {
        guard let manifest = try? DirectoryManifest.read(directory: g.path),
              let same = manifest.files.first(where: { $0.bytes == f.bytes && $0.xxh3 == f.xxh3 && $0.sha256 == f.sha256 }) else { return nil }
        let p = g.path + "/" + same.file
        return intact(p, f) ? p : nil
    }

    /// Installs the current data again with new settings (allow list, categories, rules,
    /// slots): a new generation whose files are hard links to the current ones (see
    /// ``reinstall(settings:trust:requireSignature:)``, which also repairs).
    @discardableResult
    public func updateSettings(_ settings: FeedSettings) throws(DirectoryError) -> InstallReport {
        try reinstall(settings: settings)
    }

    /// Installs the current generation's data again as a new generation, with `settings`
    /// (default: its own) and the signature checks of
    /// ``install(from:settings:trust:requireSignature:)``. It repairs the store: a file
    /// missing from the current generation, or whose size or XXH3 differs from its manifest
    /// (deleted, cut short or damaged in the store), is taken from the previous generation when
    /// that holds the same file intact (size, XXH3, SHA-256; unchanged files are hard links, so
    /// it usually does), and the slot plan is computed again.
    /// ``InstallReport/repairedFiles`` lists what was taken.
    /// - Throws: ``DirectoryError`` `fileNotFound` when nothing is installed, or when a file is
    ///   missing and the previous generation has no copy (the message says what to fetch);
    ///   as ``install(from:settings:trust:requireSignature:)`` otherwise.
    @discardableResult
    public func reinstall(settings: FeedSettings? = nil, trust: SigningPublicKey? = nil,
                          requireSignature: SigningPublicKey? = nil) throws(DirectoryError) -> InstallReport {
        guard let g = try current() else {
            throw DirectoryError(.fileNotFound, "\(path): nothing installed yet; settings are installed with a set: install a build directory, or fetch one (lookup fetch URL --store \(path) --trust KEY.pub, with --slots and --max-entries for the settings)")
        }
        if FileSystem.exists(g.path + "/" + SourcesRecord.fileName) {
            // A store of sources: each source's set was checked with its own pinned key.
            guard trust == nil && requireSignature == nil else {
                throw DirectoryError(.invalidArgument, "\(path): a store of sources checks each source with the key pinned when it was subscribed; --trust and --require-signature apply to a set installed without --source")
            }
            if let settings { try Self.checkInstallable(settings) }
            return try withInstallLock { () throws(DirectoryError) -> InstallReport in try composeLocked(.keep, settings: settings) }
        }
        let source: Source
        do {
            source = try Self.readSource(g.path, repairFrom: try previous())
        } catch {
            throw error.code == .fileNotFound || error.code == .corrupt ? damaged(g, error, hashing: true) : error
        }
        for key in [trust, requireSignature].compactMap({ $0 }) { try source.verifySignature(key) }
        if let settings { try Self.checkInstallable(settings) }
        var report: InstallReport
        do {
            report = try withInstallLock { () throws(DirectoryError) -> InstallReport in
                try installLocked(source, settings: settings, recordKey: requireSignature)
            }
        } catch {
            throw error.code == .corrupt ? damaged(g, error, hashing: true) : error
        }
        report.repairedFiles = source.manifest.files.map(\.file).filter { source.replacements[$0] != nil }
        return report
    }

    /// `error` (a file of generation `g` that cannot be read) with what is missing from `g` and
    /// what repairs it: installing again without a build directory when the previous
    /// generation holds every missing file, else fetching the set again. `hashing` also counts
    /// files whose XXH3 differs (damaged in place) as missing.
    func damaged(_ g: Generation, _ error: DirectoryError, hashing: Bool = false) -> DirectoryError {
        guard let manifest = try? DirectoryManifest.read(directory: g.path) else { return error }
        let lost = manifest.files.filter { f in
            hashing ? !Self.intact(g.path + "/" + f.file, f) : FileSystem.fileSize(g.path + "/" + f.file) != f.bytes
        }
        let names = lost.map(\.file) + (FileSystem.exists(g.path + "/plan.json") ? [] : ["plan.json"])
        guard !names.isEmpty else { return error }
        var message = "\(error.message) (generation \(g.id) of \(path) lacks \(names.joined(separator: ", ")): deleted, cut short or damaged in the store; "
        let spare = (try? previous()) ?? nil
        let unrecoverable = lost.filter { f in spare.flatMap { Self.copy(of: f, in: $0) } == nil }.map(\.file)
        if unrecoverable.isEmpty {
            message += "install again without a build directory (lookup install --store \(path)) to repair it"
            if let spare, !lost.isEmpty { message += ": the new generation takes \(lost.count == 1 ? "it" : "them") from generation \(spare.id)" }
        } else {
            message += "\(spare.map { "generation \($0.id)" } ?? "no earlier generation") holds no copy of \(unrecoverable.joined(separator: ", ")): "
                + "fetch the set again (lookup fetch URL --store \(path) --trust KEY.pub downloads only what is missing) or install a build directory"
        }
        return DirectoryError(error.code, message + ")")
    }

    private func installLocked(_ src: Source, settings newSettings: FeedSettings?, recordKey: SigningPublicKey?) throws(DirectoryError) -> InstallReport {
        let manifest = src.manifest, manifestData = src.manifestData
        // The store's own requirement, read under the lock: no install slips past it. An install
        // that records a key (checked against that key by the caller) replaces the requirement.
        let required = try requiredSigningKey()
        if let required, recordKey == nil, !src.isComposed { try src.verifySignature(required) }
        let keyToRecord = recordKey.flatMap { $0 == required ? nil : $0 }
        // A damaged pointer must not block the install that repairs the store.
        let pointer: (current: UInt64?, previous: UInt64?) = (try? readPointer()) ?? (nil, nil)
        let current = pointer.current.map { Generation(id: $0, path: generationPath($0)) }
        let currentManifest = current.flatMap { try? DirectoryManifest.read(directory: $0.path) }
        let currentSettings = try current.map { (g) throws(DirectoryError) -> FeedSettings in try Self.readSettings(g) }
        let settings = newSettings ?? currentSettings ?? FeedSettings()
        try Self.checkInstallable(settings)
        // A category choice is checked when it is made, not on every data update after it (a
        // dataset that drops a category must not block installs).
        let newCategoryChoice = settings.blockCategories != currentSettings?.blockCategories

        let newID = newGenerationID(above: pointer.current)
        for name in FileSystem.list(path) where name.hasPrefix(".staging-") {
            FileSystem.removeTree(path + "/" + name)
        }
        let staging = path + "/.staging-\(newID)"
        try FileSystem.makeDirectory(staging)
        var linked = 0, copied = 0
        let plan: SlotPlan
        do throws(DirectoryError) {
            (linked, copied) = try stageFiles(src, into: staging, current: current, currentManifest: currentManifest)
            try FileSystem.writeAtomically(manifestData, to: staging + "/manifest.json")
            if let sig = src.signatureData {
                try FileSystem.writeAtomically(sig, to: staging + "/" + ManifestSignature.fileName)
            }
            for (file, data) in src.extraFiles {
                let (folder, _) = OutputPath.split(staging + "/" + file)
                try FileSystem.makeDirectory(folder)
                try FileSystem.writeAtomically(data, to: staging + "/" + file)
            }
            try FileSystem.writeAtomically(settings.jsonData(), to: staging + "/settings.json")
            // Verify what will be used: the staged files, reported under the name the user gave.
            FileSystem.checkpoint("staged")
            for f in manifest.files {
                try Self.verify(staging + "/" + f.file, f, reportedAs: src.reportedName(of: f.file))
            }
            FileSystem.checkpoint("verified")
            let snapshot = try DirectorySnapshot(directory: staging, settings: settings)
            if newCategoryChoice { try Self.checkCategories(settings, snapshot) }
            // The previous plan kept where it still fits (the one place a generation's plan is made).
            plan = try SlotPlan.stable(snapshot, generation: newID, after: .read(current), slots: settings.slots, maxEntries: settings.maxEntries)
            try Self.writePlan(plan, in: staging)
            try FileSystem.sync(staging, directory: true)
            FileSystem.checkpoint("planned")
            // The requirement is recorded before the switch: a crash in between leaves a store
            // stricter than asked, never laxer.
            if let keyToRecord { try FileSystem.writeAtomically(Data(keyToRecord.fileText.utf8), to: signingKeyPath) }
            try FileSystem.rename(staging, generationPath(newID))
            try FileSystem.sync(path, directory: true)
            FileSystem.checkpoint("renamed")
        } catch {
            FileSystem.removeTree(staging)
            throw error
        }
        // The switch: one rename of the pointer file.
        do {
            try writePointer(current: newID, previous: pointer.current)
            FileSystem.checkpoint("switched")
        } catch {
            FileSystem.removeTree(generationPath(newID))
            throw error
        }
        pruneGenerations(keeping: [newID] + (pointer.current.map { [$0] } ?? []))
        return InstallReport(generation: Generation(id: newID, path: generationPath(newID)), previous: current,
                             changes: changedRegions(currentManifest, manifest), linkedFiles: linked, copiedFiles: copied,
                             plan: plan, settings: settings)
    }

    /// A fresh generation id above the current one and every generation folder on disk (a
    /// crashed install may have left one).
    private func newGenerationID(above current: UInt64?) -> UInt64 {
        var newID = (current ?? 0) + 1
        for name in FileSystem.list(path) where name.hasPrefix("gen-") {
            if let id = UInt64(name.dropFirst(4)), id >= newID { newID = id + 1 }
        }
        return newID
    }

    /// Puts the source's database files into `staging`: a hard link to the source's file when
    /// allowed (a fetch's checked downloads, whose reused files are themselves links to the
    /// current generation's; a repair's copy from the previous generation), else a hard link to
    /// the current generation's file when it is the same (name, size, XXH3), else a copy.
    /// Returns the files that are the current generation's and the files brought anew.
    private func stageFiles(_ src: Source, into staging: String, current: Generation?,
                            currentManifest: DirectoryManifest?) throws(DirectoryError) -> (linked: Int, copied: Int) {
        var linked = 0, copied = 0
        for f in src.manifest.files {
            let to = staging + "/" + f.file
            let same = currentManifest?.files.first { $0.file == f.file && $0.bytes == f.bytes && $0.xxh3 == f.xxh3 }
            let from = src.path(of: f.file), old = current.map { $0.path + "/" + f.file }
            if (src.linkFromSource || src.replacements[f.file] != nil) && FileSystem.hardLink(from, to) {
            } else if let old, same != nil, FileSystem.hardLink(old, to) {
            } else {
                try FileSystem.copy(from, to)
            }
            // The current generation's file, under its name or another (a pack renamed when the
            // set installed without a source became one source of several).
            if let old, let current, FileSystem.sameFile(old, to) || (from.hasPrefix(current.path + "/") && FileSystem.sameFile(from, to)) {
                linked += 1
            } else {
                copied += 1
            }
        }
        return (linked, copied)
    }

    private static func writePlan(_ plan: SlotPlan, in staging: String) throws(DirectoryError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let planData: Data
        do { planData = try encoder.encode(plan) } catch {
            throw DirectoryError(.io, "\(staging)/plan.json: cannot encode the slot plan: \(error)")
        }
        try FileSystem.writeAtomically(planData, to: staging + "/plan.json")
    }

    /// Drops generations other than `keeping`, and what killed writers left. Only after the
    /// switch, under the store lock (no other install is writing here).
    private func pruneGenerations(keeping: [UInt64]) {
        for name in FileSystem.list(path) {
            if name.hasPrefix("gen-"), let id = UInt64(name.dropFirst(4)), !keeping.contains(id) {
                FileSystem.removeTree(path + "/" + name)
            } else if FileSystem.isWriteLeftover(name) {
                FileSystem.removeTree(path + "/" + name)
            }
        }
    }

    /// Size, whole-file XXH3 and full database verification of one staged file; errors name
    /// `name` (the file the user gave), not the staging copy.
    static func verify(_ path: String, _ f: DirectoryManifest.File, reportedAs name: String) throws(DirectoryError) {
        guard let size = FileSystem.fileSize(path), size == f.bytes else {
            throw DirectoryError(.corrupt, "\(name): size differs from the manifest's \(f.bytes) bytes")
        }
        let hash: UInt64
        do {
            hash = try Checksum.xxh3(fileAt: path)
        } catch {
            throw DirectoryError(DirectoryError(error).code, renamed(error.message, path, name))
        }
        guard hash == f.xxh3 else {
            throw DirectoryError(.corrupt, "\(name): XXH3 \(hex16(hash)) differs from the manifest's \(hex16(f.xxh3)) (damaged file)")
        }
        if let expected = f.sha256 {
            let sha: String
            do { sha = try Crypto.sha256Hex(fileAt: path) } catch {
                throw DirectoryError(error.code, renamed(error.message, path, name))
            }
            guard sha == expected else {
                throw DirectoryError(.corrupt, "\(name): SHA-256 \(sha) differs from the manifest's \(expected) (altered file)")
            }
        }
        let db: Database
        do {
            db = try Database(path: path, verify: true)
        } catch {
            throw DirectoryError(DirectoryError(error).code, renamed(error.message, path, name))
        }
        // The bounds a query relies on to leave the file unopened must be true.
        let (folder, _) = OutputPath.split(name)
        do {
            try f.checkNumbers(of: db, manifestPath: joinPath(folder, "manifest.json"))
        } catch {
            throw DirectoryError(error.code, renamed(error.message, path, name))
        }
    }

    /// `message` with the staging path replaced by the name the user knows.
    private static func renamed(_ message: String, _ path: String, _ name: String) -> String {
        message.replacingOccurrences(of: path, with: name)
    }

    // MARK: Pointer file

    /// The ids `CURRENT` names, without checking that the folders exist.
    func readPointerIDs() throws(DirectoryError) -> (current: UInt64?, previous: UInt64?) {
        guard let data = FileManager.default.contents(atPath: pointerPath) else {
            if FileSystem.exists(pointerPath) { throw DirectoryError(.io, "\(pointerPath): cannot read") }
            return (nil, nil)
        }
        var current: UInt64? = nil, previous: UInt64? = nil
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let id = UInt64(parts[1]) else { continue }
            if parts[0] == "current" { current = id }
            if parts[0] == "previous" { previous = id }
        }
        guard current != nil else {
            throw DirectoryError(.badManifest, "\(pointerPath): does not name an installed generation")
        }
        return (current, previous)
    }

    func readPointer() throws(DirectoryError) -> (current: UInt64?, previous: UInt64?) {
        let ids = try readPointerIDs()
        guard let current = ids.current else { return ids }
        guard FileSystem.exists(generationPath(current) + "/manifest.json") else {
            throw DirectoryError(.badManifest, "\(pointerPath): does not name an installed generation")
        }
        return ids
    }

    /// Runs `body` on the generation `CURRENT` names (nil: nothing installed) and the previous
    /// one it names. Two installs that complete while `body` reads can remove that generation
    /// (only the current and the previous one are kept): when `body` fails and `CURRENT` has
    /// changed meanwhile, it runs again on the new current generation, a few times at most.
    /// Whatever `body` reads comes from one generation.
    func withCurrent<R>(_ body: (Generation?, Generation?) throws(DirectoryError) -> R) throws(DirectoryError) -> R {
        var attempts = 0
        while true {
            let ids = try readPointerIDs()
            do throws(DirectoryError) {
                guard let id = ids.current else { return try body(nil, nil) }
                guard FileSystem.exists(generationPath(id) + "/manifest.json") else {
                    throw DirectoryError(.badManifest, "\(pointerPath): does not name an installed generation")
                }
                return try body(Generation(id: id, path: generationPath(id)),
                                ids.previous.map { Generation(id: $0, path: generationPath($0)) })
            } catch {
                attempts += 1
                guard attempts < 16, let again = try? readPointerIDs(), again != ids else { throw error }
            }
        }
    }

    private func writePointer(current: UInt64, previous: UInt64?) throws(DirectoryError) {
        var text = "current \(current)\n"
        if let previous { text += "previous \(previous)\n" }
        try FileSystem.writeAtomically(Data(text.utf8), to: pointerPath)
    }
}

/// One installed generation, pinned: its manifest, settings, slot plan and opened databases,
/// all read from the same `gen-N` folder (see ``InstalledStore/pin()``). The databases stay
/// readable while this value lives, even when later installs remove the folder (they are
/// memory-mapped), so a feed built from it sends exactly this generation's entries.
public struct InstalledGeneration: Sendable {
    public let store: InstalledStore
    public let generation: InstalledStore.Generation
    /// The generation `CURRENT` named as previous when this one was pinned (it may be gone
    /// since); nil when none, or when the generation was pinned by id.
    public let previous: InstalledStore.Generation?
    /// The databases, opened, with this generation's settings.
    public let snapshot: DirectorySnapshot
    /// How the entries are split across extensions: the plan stored with the generation, or
    /// one computed from this generation's entries by ``replanned(slots:maxEntries:)``.
    public let plan: SlotPlan

    public var id: UInt64 { generation.id }
    public var settings: FeedSettings { snapshot.settings }
    public var manifest: DirectoryManifest { snapshot.manifest }

    init(store: InstalledStore, generation: InstalledStore.Generation, previous: InstalledStore.Generation?) throws(DirectoryError) {
        self.store = store
        self.generation = generation
        self.previous = previous
        // Plan first: a generation folder is complete before it is renamed into place, and
        // the snapshot's databases are the last thing read, so a folder removed meanwhile
        // fails here rather than yielding a mixture.
        do throws(DirectoryError) {
            let plan = try InstalledStore.readPlan(generation)
            // A generation composed of sources serves every pack it can open: one source's
            // missing pack is named in `snapshot.unreadable`, the others keep serving.
            snapshot = try DirectorySnapshot(directory: generation.path,
                                             skippingUnreadable: FileSystem.exists(generation.path + "/" + SourcesRecord.fileName))
            self.plan = plan
        } catch {
            // A file missing from a generation still in place: say which, and what repairs it.
            guard error.code == .fileNotFound, FileSystem.exists(generation.path + "/manifest.json") else { throw error }
            throw store.damaged(generation, error)
        }
    }

    private init(_ base: InstalledGeneration, plan: SlotPlan) {
        store = base.store
        generation = base.generation
        previous = base.previous
        snapshot = base.snapshot
        self.plan = plan
    }

    /// The same generation split anew across `slots` extensions of at most `maxEntries`,
    /// computed from this generation's own entries.
    /// - Throws: ``DirectoryError`` `budgetExceeded` when they do not fit, `invalidArgument`.
    public func replanned(slots: Int, maxEntries: Int) throws(DirectoryError) -> InstalledGeneration {
        InstalledGeneration(self, plan: try SlotPlan.make(snapshot, slots: slots, maxEntries: maxEntries))
    }
}
