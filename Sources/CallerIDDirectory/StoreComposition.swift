import CallerID
import Foundation

// A store composed of sources (docs/CALL-DIRECTORY.md, "Sources and packs"): every step —
// subscribe, add regions, update, unsubscribe, remove a source, install a local folder as a
// source — is one new generation made by the install path (staging, verification, slot plan,
// one atomic switch of CURRENT) under the store's lock. The generation's manifest lists every
// pack of every source (`SOURCE.FILE`, with `source` and a composed priority), so lookups,
// verify, the merged stream and the feed read it as any other.

extension InstalledStore {
    /// A source's set to put into the store: a subscription, an update, more regions, another
    /// priority or origin.
    struct SourceInput {
        var name: String
        var url: String?
        var folder: String?
        /// The key the caller checked the set's signature with; nil when it did not.
        var key: SigningPublicKey?
        /// Regions to add to the subscription; nil keeps it (a new source: every region).
        var regions: [String]?
        /// The source's priority; nil keeps it (a new source: the default of its kind).
        var priority: Int?
        /// The folder holding the set's files under their names in its manifest, and what
        /// errors call that folder (a fetch's URL).
        var directory: String
        var reportedDirectory: String
        var manifestData: Data
        var manifest: DirectoryManifest
        var signatureData: Data?
        /// Hard-link the files (a fetch's checked downloads) rather than copy them.
        var linkFiles: Bool
    }

    /// What one step does to the sources.
    enum SourceChange {
        case put(SourceInput)
        case unsubscribe(source: String, regions: [String])
        case remove(source: String)
        /// The same sources again: new settings, or a repair.
        case keep
    }

    // MARK: The calls an app makes

    /// Installs the build directory `folder` as source `name` (subscribes to it, or updates
    /// it): one new generation, atomic as every install.
    ///
    /// - Parameters:
    ///   - regions: regions to add to the subscription (each must be one the set offers); nil
    ///     keeps the subscription, or subscribes a new source to every region.
    ///   - priority: the source's precedence (nil: keep; a new local source gets
    ///     ``StoreSource/defaultLocalPriority``, below fetched sources).
    ///   - trust: the key the set must be signed by; pinned for the source when it is new.
    ///     A source with a pinned key must be signed by it whatever `trust` says; a new source
    ///     without `trust` is pinned to the store's required key (`signing-key.pub`) when there
    ///     is one, else unsigned.
    ///   - settings: the settings to install with (default: the current generation's).
    /// - Throws: ``DirectoryError``: `invalidArgument` for a bad name or an unknown region;
    ///   `badSignature`; `fileNotFound`, `corrupt`, `badManifest` for the folder's set;
    ///   `budgetExceeded`; `io`. The current generation stays in use when it throws.
    @discardableResult
    public func installSource(_ name: String, from folder: String, regions: [String]? = nil, priority: Int? = nil,
                              trust: SigningPublicKey? = nil, settings: FeedSettings? = nil) throws(DirectoryError) -> InstallReport {
        try StoreSource.checkName(name)
        if let priority { try StoreSource.checkPriority(priority) }
        guard FileSystem.isDirectory(folder) else {
            throw DirectoryError(FileSystem.exists(folder) ? .invalidArgument : .fileNotFound,
                                 "\(folder): \(FileSystem.exists(folder) ? "not a build directory (manifest.json beside the databases)" : "no such build directory")")
        }
        let manifestPath = joinPath(folder, "manifest.json")
        let manifestData = try DirectoryManifest.readManifestBytes(directory: folder)
        let manifest = try DirectoryManifest.decode(manifestData, path: manifestPath)
        try manifest.requirePortableFileNames(path: manifestPath)
        let signature = try Self.readSignature(folder)
        if let trust {
            try ManifestSignature.verify(manifest: manifestData, signature: signature, key: trust, directory: folder)
            try ManifestSignature.requireHashes(manifest, path: manifestPath)
        }
        if let settings { try Self.checkInstallable(settings) }
        let absolute = folder.hasPrefix("/") ? folder : FileManager.default.currentDirectoryPath + "/" + folder
        let input = SourceInput(name: name, url: nil, folder: OutputPath.withoutTrailingSlashes(absolute), key: trust, regions: regions,
                                priority: priority, directory: folder, reportedDirectory: folder, manifestData: manifestData,
                                manifest: manifest, signatureData: signature, linkFiles: false)
        return try withInstallLock { () throws(DirectoryError) -> InstallReport in try composeLocked(.put(input), settings: settings) }
    }

    /// Drops `regions` from source `source`'s subscription: a new generation without their
    /// packs. A source left with no region stays (its key pinned); ``removeSource(_:settings:)``
    /// drops it.
    /// - Throws: ``DirectoryError`` `invalidArgument` for an unknown source or a region it is
    ///   not subscribed to; as an install otherwise.
    @discardableResult
    public func unsubscribe(_ source: String, regions: [String], settings: FeedSettings? = nil) throws(DirectoryError) -> InstallReport {
        guard !regions.isEmpty else { throw DirectoryError(.invalidArgument, "no region to unsubscribe from given") }
        if let settings { try Self.checkInstallable(settings) }
        return try withInstallLock { () throws(DirectoryError) -> InstallReport in
            try composeLocked(.unsubscribe(source: source, regions: regions), settings: settings)
        }
    }

    /// Drops source `source` and its packs (and its pinned key): a new generation.
    /// - Throws: ``DirectoryError`` `invalidArgument` for an unknown source; as an install otherwise.
    @discardableResult
    public func removeSource(_ source: String, settings: FeedSettings? = nil) throws(DirectoryError) -> InstallReport {
        if let settings { try Self.checkInstallable(settings) }
        return try withInstallLock { () throws(DirectoryError) -> InstallReport in try composeLocked(.remove(source: source), settings: settings) }
    }

    /// The sources of a generation (default: the current one), in precedence order, with the
    /// regions installed of each. A generation installed without a source is one source,
    /// ``StoreSource/implicitName`` (``StoreSource/isImplicit``). Empty when nothing is installed.
    public func sources(_ generation: Generation? = nil) throws(DirectoryError) -> [InstalledSource] {
        if let generation { return try Self.installedSources(generation, requiredKey: requiredSigningKey()) }
        return try withCurrent { (g, _) throws(DirectoryError) -> [InstalledSource] in
            guard let g else { return [] }
            return try Self.installedSources(g, requiredKey: requiredSigningKey())
        }
    }

    /// The source set `name` of the current generation, nil when there is none such.
    func sourceSet(_ name: String, in g: Generation?) throws(DirectoryError) -> SourceSet? {
        try Self.sourceSets(g, requiredKey: requiredSigningKey()).first { $0.record.name == name }
    }

    // MARK: Reading a generation's sources

    /// `folder/manifest.json.sig` when there is one.
    static func readSignature(_ folder: String) throws(DirectoryError) -> Data? {
        let sigPath = joinPath(folder, ManifestSignature.fileName)
        guard FileSystem.exists(sigPath) else { return nil }
        guard let size = FileSystem.fileSize(sigPath), size <= 4096, let data = FileManager.default.contents(atPath: sigPath) else {
            throw DirectoryError(.badSignature, "\(sigPath): not a readable signature file")
        }
        return data
    }

    /// The sources of generation `g` with their manifests, in precedence order; a generation
    /// installed without a source is one implicit source of every file it holds, pinned to
    /// `requiredKey` (the store's `signing-key.pub`).
    static func sourceSets(_ g: Generation?, requiredKey: SigningPublicKey?) throws(DirectoryError) -> [SourceSet] {
        guard let g else { return [] }
        if let record = try SourcesRecord.read(generation: g.path) {
            var sets: [SourceSet] = []
            for s in record.sources {
                let manifestPath = g.path + "/" + SourcesRecord.manifestPath(s.name)
                guard let data = FileManager.default.contents(atPath: manifestPath) else {
                    throw DirectoryError(.badManifest, "\(manifestPath): missing (the record of source \(s.name))")
                }
                let manifest = try DirectoryManifest.decode(data, path: manifestPath)
                let signature = FileManager.default.contents(atPath: g.path + "/" + SourcesRecord.signaturePath(s.name))
                sets.append(SourceSet(record: s, manifestData: data, manifest: manifest, signatureData: signature))
            }
            sets = SourcesRecord.ordered(sets.map(\.record)).map { r in sets.first { $0.record.name == r.name }! }
            SourceSet.claimRegions(&sets)
            return sets
        }
        let data = try DirectoryManifest.readManifestBytes(directory: g.path)
        let manifest = try DirectoryManifest.decode(data, path: g.path + "/manifest.json")
        var record = StoreSource(name: StoreSource.implicitName, key: requiredKey, priority: StoreSource.defaultPriority)
        record.isImplicit = true
        record.datasetVersion = manifest.datasetVersion
        record.buildTime = manifest.buildTime
        record.manifestSHA256 = (try? Crypto.sha256(Array(data))).map(hexString)
        let signature = FileManager.default.contents(atPath: g.path + "/" + ManifestSignature.fileName)
        return [SourceSet(record: record, manifestData: data, manifest: manifest, signatureData: signature)]
    }

    /// Where pack `f` of `set` lies in generation `g`: `SOURCE.FILE` in a composed one, its
    /// own name in one installed without a source.
    static func packPath(_ set: SourceSet, _ f: DirectoryManifest.File, in g: Generation) -> String {
        g.path + "/" + (set.record.isImplicit ? f.file : StoreSource.packName(source: set.record.name, file: f.file))
    }

    static func installedSources(_ g: Generation, requiredKey: SigningPublicKey?) throws(DirectoryError) -> [InstalledSource] {
        let manifest = try DirectoryManifest.read(directory: g.path)
        let listed = Set(manifest.files.map(\.file))
        return try sourceSets(g, requiredKey: requiredKey).map { set in
            var present: [DirectoryManifest.File] = [], missing: [String] = []
            for f in set.selectedFiles {
                let path = packPath(set, f, in: g)
                var pack = f
                pack.file = String(path.dropFirst(g.path.utf8.count + 1))
                if listed.contains(pack.file) && FileSystem.fileSize(path) == f.bytes { present.append(pack) } else { missing.append(pack.file) }
            }
            return InstalledSource(source: set.record, regions: SourceOffer(DirectoryManifest(files: present)).regions,
                                   offered: set.offeredRegions, unavailable: set.unavailableRegions, missingPacks: missing,
                                   shadowed: set.shadowedRegions.sorted())
        }
    }

    // MARK: One step

    /// One step of a store of sources, under the install lock the caller holds: the current
    /// generation's sources changed by `change`, composed into one manifest, installed as a new
    /// generation by the install path. Packs of the sources the step does not change are
    /// hard-linked from the current generation; one that is missing or damaged there is taken
    /// from the previous generation when that holds it intact, and otherwise left out (named
    /// in ``InstallReport/missingPacks``): another source's damage never fails this step.
    func composeLocked(_ change: SourceChange, settings: FeedSettings?) throws(DirectoryError) -> InstallReport {
        // A damaged pointer must not block the step that repairs the store (as for an install).
        let pointer: (current: UInt64?, previous: UInt64?) = (try? readPointer()) ?? (nil, nil)
        let current = pointer.current.map { Generation(id: $0, path: generationPath($0)) }
        let previous = pointer.previous.flatMap { generation($0) }
        var sets = try Self.sourceSets(current, requiredKey: requiredSigningKey())
        var changed: String? = nil
        switch change {
        case .keep:
            break
        case .remove(let name):
            guard let i = sets.firstIndex(where: { $0.record.name == name }) else { throw noSource(name, sets) }
            sets.remove(at: i)
        case .unsubscribe(let name, let regions):
            guard let i = sets.firstIndex(where: { $0.record.name == name }) else { throw noSource(name, sets) }
            let have = sets[i].subscribedRegions
            let unknown = regions.filter { !have.contains($0) }
            guard unknown.isEmpty else {
                throw DirectoryError(.invalidArgument, "source \(name) is not subscribed to \(Self.quotedList(unknown)); subscribed: \(Self.quotedList(have))")
            }
            sets[i].record.regions = have.filter { !regions.contains($0) }
            sets[i].record.isImplicit = false
        case .put(let input):
            sets = try put(input, into: sets)
            changed = input.name
        }
        sets = SourcesRecord.ordered(sets.map(\.record)).map { r in sets.first { $0.record.name == r.name }! }
        SourceSet.claimRegions(&sets)

        // Where each pack comes from.
        var src = Source(directory: current?.path ?? path, manifestData: Data(), manifest: DirectoryManifest(files: []), signatureData: nil)
        src.isComposed = true
        var missing: [String] = [], repaired: [String] = []
        let composed = try composedManifest(sets)
        var kept: [DirectoryManifest.File] = []
        var fileIndex = 0
        for set in sets {
            for f in set.selectedFiles {
                var pack = composed.files[fileIndex]
                fileIndex += 1
                if set.record.name == changed, case .put(let input) = change {
                    let from = joinPath(input.directory, f.file)
                    guard let size = FileSystem.fileSize(from) else {
                        throw DirectoryError(.fileNotFound, "\(joinPath(input.reportedDirectory, f.file)): listed in the manifest but missing")
                    }
                    guard size == f.bytes else {
                        throw DirectoryError(.corrupt, "\(joinPath(input.reportedDirectory, f.file)): \(size) bytes, the manifest says \(f.bytes) (truncated or incomplete download?)")
                    }
                    if input.linkFiles { src.replacements[pack.file] = from } else { src.copies[pack.file] = from }
                    src.reportedNames[pack.file] = joinPath(input.reportedDirectory, f.file)
                } else if let current, Self.intact(Self.packPath(set, f, in: current), f) {
                    src.replacements[pack.file] = Self.packPath(set, f, in: current)
                } else if let previous, let copy = Self.copy(of: f, in: previous) {
                    src.replacements[pack.file] = copy
                    repaired.append(pack.file)
                } else if let folder = set.record.folder, Self.intact(joinPath(folder, f.file), f) {
                    // A local source's pack that was not in the generation (a region another
                    // source answered for until now): from its folder again.
                    src.copies[pack.file] = joinPath(folder, f.file)
                } else {
                    missing.append(pack.file)
                    continue
                }
                try Self.fillBounds(&pack, from: src.path(of: pack.file))
                kept.append(pack)
            }
        }
        var manifest = composed
        manifest.files = kept
        src.manifest = manifest
        src.manifestData = manifest.jsonData()
        src.extraFiles = [(SourcesRecord.fileName, SourcesRecord(sources: sets.map(\.record)).jsonData())]
        for set in sets {
            src.extraFiles.append((SourcesRecord.manifestPath(set.record.name), set.manifestData))
            if let signature = set.signatureData { src.extraFiles.append((SourcesRecord.signaturePath(set.record.name), signature)) }
        }
        var report = try installHoldingLock(src, settings: settings)
        report.missingPacks = missing
        report.repairedFiles = repaired
        report.sources = sets.map(\.record)
        return report
    }

    /// The sources with `input` put in: its key checked against the one pinned for it (or
    /// pinned now), its regions added to the subscription, its record renewed.
    private func put(_ input: SourceInput, into sets: [SourceSet]) throws(DirectoryError) -> [SourceSet] {
        try StoreSource.checkName(input.name)
        let manifestPath = joinPath(input.reportedDirectory, "manifest.json")
        try input.manifest.requirePortableFileNames(path: manifestPath)
        var sets = sets
        let existing = sets.firstIndex { $0.record.name == input.name }
        if let priority = input.priority { try StoreSource.checkPriority(priority) }
        var record: StoreSource
        if let existing {
            record = sets[existing].record
        } else {
            record = StoreSource(name: input.name, priority: input.url == nil ? StoreSource.defaultLocalPriority : StoreSource.defaultPriority)
            var records = sets.map(\.record)
            record.order = SourcesRecord.nextOrder(&records)
            for i in sets.indices { sets[i].record = records[i] }
        }
        // Keys: the one pinned for the source decides; a new or unsigned source is pinned to the
        // key its set was checked with, else to the store's required key.
        let pinned = try record.publicKey()
        func check(_ key: SigningPublicKey) throws(DirectoryError) {
            try ManifestSignature.verify(manifest: input.manifestData, signature: input.signatureData, key: key, directory: input.reportedDirectory)
            try ManifestSignature.requireHashes(input.manifest, path: manifestPath)
        }
        let required = input.key == nil ? try requiredSigningKey() : nil
        if let pinned {
            if let given = input.key, given != pinned {
                throw DirectoryError(.badSignature, "source \(input.name) is pinned to key \(pinned.keyID), not the trusted key \(given.keyID) given: a source's sets must be signed by the key it was subscribed with (remove the source and subscribe again to change its key)")
            }
            try check(pinned)
        } else if let key = input.key ?? required {
            try check(key)
            record.key = key.fileText
            record.keyID = key.keyID
        }
        let offered = Set(input.manifest.files.map(\.regionKey))
        if let regions = input.regions {
            let unknown = regions.filter { !offered.contains($0) }
            guard unknown.isEmpty else {
                throw DirectoryError(.invalidArgument, "\(manifestPath): source \(input.name) offers no region \(Self.quotedList(unknown)); it offers \(Self.quotedList(offered.sorted()))")
            }
            if existing == nil {
                record.regions = Set(regions).sorted()
            } else if let have = record.regions {
                record.regions = Set(have + regions).sorted()
            }
        }
        if let priority = input.priority { record.priority = priority }
        record.url = input.url
        record.folder = input.folder
        record.datasetVersion = input.manifest.datasetVersion
        record.buildTime = input.manifest.buildTime
        record.manifestSHA256 = hexString(try Crypto.sha256(Array(input.manifestData)))
        record.isImplicit = false
        let set = SourceSet(record: record, manifestData: input.manifestData, manifest: input.manifest, signatureData: input.signatureData)
        if let existing { sets[existing] = set } else { sets.append(set) }
        return sets
    }

    /// Fills what a query and the slot plan rely on when the source's manifest lacks it (sets
    /// built before these fields existed): entries, first and last number, ranges.
    private static func fillBounds(_ pack: inout DirectoryManifest.File, from path: String) throws(DirectoryError) {
        guard pack.entries == nil || pack.firstNumber == nil || pack.lastNumber == nil || pack.ranges == nil else { return }
        let db: Database
        do { db = try Database(path: path) } catch { throw DirectoryError(error) }
        pack.entries = db.count
        pack.ranges = db.rangeCount
        if db.count > 0, pack.firstNumber == nil || pack.lastNumber == nil {
            let bounds: (first: UInt64, last: UInt64)?
            do { bounds = try db.numberBounds() } catch { throw DirectoryError(error) }
            pack.firstNumber = bounds?.first
            pack.lastNumber = bounds?.last
        }
    }

    private func noSource(_ name: String, _ sets: [SourceSet]) -> DirectoryError {
        DirectoryError(.invalidArgument, "\(path): no source named \(quotedInput(name.utf8)); "
            + (sets.isEmpty ? "the store has none" : "its sources: \(sets.map(\.record.name).joined(separator: ", "))"))
    }

    /// Names from files or the user, quoted and escaped, at most 20 of them.
    static func quotedList(_ names: [String]) -> String {
        let shown = names.prefix(20).map { quotedInput($0.utf8) }.joined(separator: ", ")
        return names.count > 20 ? shown + ", … (\(names.count) in all)" : shown
    }
}
