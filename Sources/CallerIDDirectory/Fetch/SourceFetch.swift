import CallerID
import Foundation

// A fetch for one source of a store composed of sources (docs/CALL-DIRECTORY.md, "Sources and
// packs"): the source's signed manifest, only the files of its subscribed regions, and one new
// generation that holds them beside the other sources' packs.

extension DirectoryFetcher {
    /// What the source at `baseURL` offers: the regions of its signed manifest (names, entries,
    /// bytes, number bounds) and its dataset version, for a region picker. Reads nothing of a
    /// store and writes nothing.
    /// - Throws: ``DirectoryError`` `unreachable`, `badSignature`, `badManifest` as
    ///   ``fetch()`` does for the manifest.
    public static func offer(baseURL: String, trust: SigningPublicKey, client: any HTTPClient,
                             deadline: TransferDeadline = TransferDeadline(), maxManifestBytes: Int = 8 << 20) throws(DirectoryError) -> SourceOffer {
        var received = 0
        let signed = try SetServer(baseURL: baseURL, client: client, deadline: deadline)
            .signed(trust: trust, maxManifestBytes: maxManifestBytes, received: &received)
        return SourceOffer(signed.manifest)
    }

    /// Subscribes the store to `regions` of this fetcher's server as source `source` (every
    /// region when nil and the source is new), or adds them to its subscription, and brings
    /// the subscribed regions up to date: one call, one new generation (see ``fetch()``).
    @discardableResult
    public func subscribe(_ source: String, regions: [String]? = nil, priority: Int? = nil) throws(DirectoryError) -> Report {
        var fetcher = self
        fetcher.source = source
        fetcher.regions = regions
        fetcher.priority = priority
        return try fetcher.fetch()
    }

    /// Brings the subscribed regions of source `source` up to date from this fetcher's server.
    @discardableResult
    public func update(_ source: String) throws(DirectoryError) -> Report {
        try subscribe(source)
    }

    /// The source this fetch is for (see ``source``), nil for the whole set of a store
    /// installed without a source.
    func sourceName() throws(DirectoryError) -> String? {
        if let source {
            try StoreSource.checkName(source)
            return source
        }
        let current = (try? store.current()) ?? nil
        let composed = current.map { FileSystem.exists($0.path + "/" + SourcesRecord.fileName) } ?? false
        guard composed || regions != nil || priority != nil else { return nil }
        let sets = (try? InstalledStore.sourceSets(current, requiredKey: nil)) ?? []
        if let same = sets.first(where: { $0.record.url.map(OutputPath.withoutTrailingSlashes) == OutputPath.withoutTrailingSlashes(baseURL) }) {
            return same.record.name
        }
        // The same publisher at another address (a mirror, `localhost` for `127.0.0.1`): a
        // source pinned to this key is that publisher's; a second source named after the URL
        // would hold its regions twice.
        if let pinned = sets.first(where: { (try? $0.record.publicKey()) == trust }) {
            throw DirectoryError(.invalidArgument, """
                \(store.path): source \(pinned.record.name) is pinned to this key (\(trust.keyID)) and fetched from \(pinned.record.url ?? pinned.record.folder ?? "a folder"); \
                give --source \(pinned.record.name) to fetch it from \(baseURL) instead (the source then follows that address)
                """)
        }
        return StoreSource.name(forURL: baseURL)
    }

    /// ``fetch()`` for source `name`, holding `.fetch/`.
    func fetchSourceHoldingFolder(_ name: String) throws(DirectoryError) -> Report {
        if let priority { try StoreSource.checkPriority(priority) }
        var report = Report(upToDate: false)
        report.source = name
        // 1. Manifest and signature, verified with the trusted key, which must be the one
        //    pinned for the source (a set signed by another publisher's key is refused even when
        //    that key is trusted for its own source).
        let signed = try getSigned(&report, storeKey: false)
        report.datasetVersion = signed.manifest.datasetVersion
        let current = (try? store.current()) ?? nil
        let existing = try store.sourceSet(name, in: current)
        try checkPinnedKey(existing)
        if let old = existing?.record.url, OutputPath.withoutTrailingSlashes(old) != OutputPath.withoutTrailingSlashes(baseURL) {
            report.movedFrom = old
        }

        // 2. The subscription after this fetch, against what the current generation holds.
        let planned = try subscription(after: existing, signed.manifest)
        let offered = Set(signed.manifest.files.map(\.regionKey))
        report.regions = planned ?? offered.sorted()
        report.unavailableRegions = (planned ?? []).filter { !offered.contains($0) }
        let selected = planned.map { regions in signed.manifest.files.filter { regions.contains($0.regionKey) } } ?? signed.manifest.files
        if let current, isInstalled(existing, signed, planned, in: current) {
            report.upToDate = true
            report.install = try applySettings(to: current)
            FileSystem.removeTree(fetchFolder)   // what a killed fetch left: of no use now
            return report
        }
        if let existing { try refuseDowngrade(signed.manifest, from: existing.manifest) }

        // 3. Files of the subscribed regions: reuse what the current generation holds, download the rest.
        let currentManifest = current.flatMap { try? DirectoryManifest.read(directory: $0.path) }
        try installStaged(&report) { (set, report) throws(DirectoryError) -> InstalledStore.InstallReport? in
            try stage(signed, files: selected, into: set, current: current, currentManifest: currentManifest, &report)
            FileSystem.checkpoint("downloaded")
            // 4. The new generation: this source's files beside the other sources' packs.
            let input = InstalledStore.SourceInput(name: name, url: baseURL, folder: nil, key: trust, regions: regions, priority: priority,
                                                   directory: set, reportedDirectory: url(""), manifestData: signed.manifestData,
                                                   manifest: signed.manifest, signatureData: signed.signatureData, linkFiles: true)
            willInstall?()
            return try store.withInstallLock { () throws(DirectoryError) -> InstalledStore.InstallReport? in
                // Another step may have run since step 2: the same set installed by then is up to
                // date, a newer one refuses this one as a downgrade.
                let now = (try? store.current()) ?? nil
                if let now, now != current {
                    let again = try store.sourceSet(name, in: now)
                    try checkPinnedKey(again)
                    if isInstalled(again, signed, try subscription(after: again, signed.manifest), in: now) { return nil }
                    if let again { try refuseDowngrade(signed.manifest, from: again.manifest) }
                }
                return try store.composeLocked(.put(input), settings: settings)
            }
        }
        return report
    }

    /// Refuses a trusted key other than the one pinned for the source.
    private func checkPinnedKey(_ existing: SourceSet?) throws(DirectoryError) {
        guard let existing, let pinned = try existing.record.publicKey(), pinned != trust else { return }
        throw DirectoryError(.badSignature, """
            \(store.path): source \(existing.record.name) is pinned to key \(pinned.keyID), not the trusted key \(trust.keyID) given: \
            a source's sets must be signed by the key it was subscribed with (remove the source and subscribe again to change its key)
            """)
    }

    /// The regions subscribed after this fetch (nil: every region), ``regions`` checked
    /// against what `manifest` offers.
    private func subscription(after existing: SourceSet?, _ manifest: DirectoryManifest) throws(DirectoryError) -> [String]? {
        let offered = Set(manifest.files.map(\.regionKey))
        if let regions {
            let unknown = regions.filter { !offered.contains($0) }
            guard unknown.isEmpty else {
                throw DirectoryError(.invalidArgument, "\(url("manifest.json")): offers no region \(InstalledStore.quotedList(unknown)); it offers \(InstalledStore.quotedList(offered.sorted()))")
            }
        }
        guard let existing else { return regions.map { Set($0).sorted() } }
        guard let regions, let have = existing.record.regions else { return existing.record.regions }
        return Set(have + regions).sorted()
    }

    /// True when generation `g` holds this source's set as it would be installed: the same
    /// signed manifest, subscription, priority and URL, and every subscribed pack intact.
    private func isInstalled(_ existing: SourceSet?, _ signed: Signed, _ planned: [String]?, in g: InstalledStore.Generation) -> Bool {
        guard let existing, !existing.record.isImplicit, existing.manifestData == signed.manifestData, existing.record.regions == planned,
              priority == nil || priority == existing.record.priority,
              existing.record.url.map(OutputPath.withoutTrailingSlashes) == OutputPath.withoutTrailingSlashes(baseURL) else { return false }
        return existing.selectedFiles.allSatisfy { InstalledStore.intact(InstalledStore.packPath(existing, $0, in: g), $0) }
    }
}
