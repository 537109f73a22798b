import Foundation
import CallerID

/// One source of a store composed of sources: a publisher's signed set at a URL, or a folder
/// on disk (the app bundle's starter set), with the key its sets must be signed by, the
/// regions the store is subscribed to and its precedence. The record of every source of a
/// generation is `gen-N/sources.json`; each source's own manifest and signature, as installed,
/// are kept beside it in `gen-N/sources/` (docs/CALL-DIRECTORY.md, "Sources and packs").
public struct StoreSource: Sendable, Equatable, Codable {
    /// 1 to 48 of `a–z 0–9 - _`, starting with a letter or a digit (``isValidName(_:)``). The
    /// prefix of its packs' names in the generation: `NAME.FILE`.
    public var name: String
    /// Where the source's set is fetched from (a web folder), nil for a local folder.
    public var url: String?
    /// The folder it was installed from, nil for a fetched source.
    public var folder: String?
    /// The key its sets must be signed by, pinned when the source was first subscribed (the
    /// text of a `NAME.pub` file); nil for an unsigned local source.
    public var key: String?
    /// The 16 hex digits naming ``key``.
    public var keyID: String?
    /// The regions subscribed to (``DirectoryManifest/File/regionKey``), sorted; nil: every
    /// region the source offers.
    public var regions: [String]?
    /// Precedence against the other sources: higher wins; at equal priorities the source
    /// subscribed first (``order``). Inside a source its own files' priorities keep their
    /// order. From -1,000,000 to 1,000,000.
    public var priority: Int
    /// When the source was subscribed, against the others (0, 1, 2…: never renumbered while
    /// the order of the sources allows it): the tie-break of equal priorities. A source added
    /// later never takes a number from one that was there before.
    public var order: Int = 0
    /// The installed set's dataset version and build time, from its manifest.
    public var datasetVersion: String?
    public var buildTime: String?
    /// SHA-256 of the source's manifest as installed (`sources/NAME.manifest.json`).
    public var manifestSHA256: String?
    /// True for the set of a store installed without a source, named ``implicitName``: it has
    /// no record of its own (a generation without `sources.json`).
    public var isImplicit: Bool = false

    public init(name: String, url: String? = nil, folder: String? = nil, key: SigningPublicKey? = nil, regions: [String]? = nil,
                priority: Int = 0) {
        self.name = name
        self.url = url
        self.folder = folder
        self.key = key?.fileText
        self.keyID = key?.keyID
        self.regions = regions
        self.priority = priority
    }

    // `isImplicit` is not recorded: a generation with a record has no implicit source.
    enum CodingKeys: String, CodingKey {
        case name, url, folder, key, regions, priority, order
        case keyID = "key_id", datasetVersion = "dataset_version", buildTime = "build_time", manifestSHA256 = "manifest_sha256"
    }

    /// The pinned key, nil for an unsigned source.
    /// - Throws: ``DirectoryError`` `badSignature` when the recorded key text is damaged.
    public func publicKey() throws(DirectoryError) -> SigningPublicKey? {
        guard let key else { return nil }
        return try SigningPublicKey(fileText: key, path: "source \(name)")
    }

    /// The name the set of a store installed without a source takes when a source joins it.
    public static let implicitName = "default"

    /// The default priority of a fetched source and of a local folder's: a set on disk (the
    /// app bundle's starter set) answers below every fetched source left at its default.
    public static let defaultPriority = 0
    public static let defaultLocalPriority = -1
    /// The largest priority (and the smallest is its negative).
    public static let maxPriority = 1_000_000

    /// Refuses a priority outside ±``maxPriority``.
    public static func checkPriority(_ priority: Int) throws(DirectoryError) {
        guard abs(priority) <= maxPriority else {
            throw DirectoryError(.invalidArgument, "source priority \(priority): give -\(grouped(maxPriority)) to \(grouped(maxPriority))")
        }
    }

    /// 1 to 48 of `a–z 0–9 - _`, starting with a letter or a digit: no `.` (the separator of a
    /// pack's name, `NAME.FILE`), one spelling on case-insensitive file systems.
    public static func isValidName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 48, let first = name.utf8.first, isLowerAlphanumeric(first) else { return false }
        return name.utf8.allSatisfy { isLowerAlphanumeric($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") }
    }

    private static func isLowerAlphanumeric(_ b: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(b) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b)
    }

    /// Refuses a name outside ``isValidName(_:)``.
    public static func checkName(_ name: String) throws(DirectoryError) {
        guard isValidName(name) else {
            throw DirectoryError(.invalidArgument, "source name \(quotedInput(name.utf8)): give 1 to 48 of a-z 0-9 - _, starting with a letter or a digit")
        }
    }

    /// The name a source fetched from `url` takes when none is given: its host and path in
    /// lower case, every run of other characters than `a–z 0–9` made one `-`, cut to 48
    /// (`https://example.org/callerid/` → `example-org-callerid`).
    public static func name(forURL url: String) -> String {
        var rest = Substring(url)
        if let scheme = rest.range(of: "://") { rest = rest[scheme.upperBound...] }
        var out: [UInt8] = []
        for b in rest.lowercased().utf8 {
            if isLowerAlphanumeric(b) { out.append(b) } else if out.last != UInt8(ascii: "-") { out.append(UInt8(ascii: "-")) }
        }
        while out.first == UInt8(ascii: "-") { out.removeFirst() }
        if out.count > 48 { out = Array(out.prefix(48)) }
        while out.last == UInt8(ascii: "-") { out.removeLast() }
        return out.isEmpty ? "source" : String(decoding: out, as: UTF8.self)
    }

    /// The name of a source's file `file` in a composed generation.
    public static func packName(source: String, file: String) -> String { source + "." + file }

    /// The source's own name of pack `pack` (``packName(source:file:)`` undone).
    public static func sourceFileName(ofPack pack: String, source: String) -> String {
        pack.hasPrefix(source + ".") ? String(pack.dropFirst(source.utf8.count + 1)) : pack
    }
}

/// `gen-N/sources.json`: the sources of a composed generation, in precedence order.
struct SourcesRecord: Codable, Equatable {
    var version = 1
    var sources: [StoreSource]

    static let fileName = "sources.json"
    /// The folder of the sources' own manifests and signatures in a generation.
    static let folder = "sources"

    static func manifestPath(_ name: String) -> String { folder + "/" + name + ".manifest.json" }
    static func signaturePath(_ name: String) -> String { folder + "/" + name + ".manifest.json.sig" }

    enum CodingKeys: String, CodingKey {
        case version = "sources_version", sources
    }

    /// Reads `generation/sources.json`, nil when the generation has none (installed without
    /// a source).
    static func read(generation: String) throws(DirectoryError) -> SourcesRecord? {
        let path = generation + "/" + fileName
        guard FileSystem.exists(path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path) else { throw DirectoryError(.io, "\(path): cannot read") }
        let record: SourcesRecord
        do { record = try JSONDecoder().decode(SourcesRecord.self, from: data) } catch {
            throw DirectoryError(.badManifest, "\(path): not a record of sources: \(error)")
        }
        var seen: Set<String> = []
        for s in record.sources {
            guard StoreSource.isValidName(s.name), seen.insert(s.name).inserted else {
                throw DirectoryError(.badManifest, "\(path): source name \(quotedInput(s.name.utf8)) is not valid or listed twice")
            }
        }
        return record
    }

    func jsonData() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        var data = (try? encoder.encode(self)) ?? Data()
        data.append(0x0A)
        return data
    }

    /// Sources in precedence order: higher priority first, then the one subscribed first.
    static func ordered(_ sources: [StoreSource]) -> [StoreSource] {
        sources.sorted { $0.priority != $1.priority ? $0.priority > $1.priority : $0.order < $1.order }
    }

    /// The ``StoreSource/order`` of a source subscribed now. Orders stay below 2^20 (the room
    /// the composed priority gives them): past it the sources are numbered again, 0, 1, 2…,
    /// in the same order.
    static func nextOrder(_ sources: inout [StoreSource]) -> Int {
        let next = (sources.map(\.order).max() ?? -1) + 1
        guard next >= 1 << 20 else { return next }
        let byOrder = sources.indices.sorted { sources[$0].order < sources[$1].order }
        for (rank, i) in byOrder.enumerated() { sources[i].order = rank }
        return sources.count
    }
}

/// One source's set as a store composes it: the record and the source's own manifest.
struct SourceSet {
    var record: StoreSource
    /// The source's manifest (its bytes as signed) and signature, when it has one.
    var manifestData: Data
    var manifest: DirectoryManifest
    var signatureData: Data?

    /// The regions `manifest` offers, sorted.
    var offeredRegions: [String] { Set(manifest.files.map(\.regionKey)).sorted() }

    /// The subscribed regions (every offered one when the record says all).
    var subscribedRegions: [String] { record.regions ?? offeredRegions }

    /// Subscribed regions that a source of higher precedence is subscribed to as well: that
    /// source answers for them, this one's packs of them are left out (``claimRegions(_:)``).
    var shadowedRegions: Set<String> = []

    /// The files of the subscribed regions this source answers for (not shadowed), in the
    /// source's manifest order.
    var selectedFiles: [DirectoryManifest.File] {
        let wanted = record.regions.map(Set.init)
        return manifest.files.filter { (wanted?.contains($0.regionKey) ?? true) && !shadowedLists.contains(Self.listKey($0)) }
    }

    /// The (region, list) pairs of ``shadowedRegions``: which of the region's lists another
    /// source answers for.
    var shadowedLists: Set<String> = []

    /// A pack's claim: its region and the list it feeds: `block` for a block list (every entry
    /// blocks: a toxic pack, a `REGION-block` file), `identify` for the rest (identification
    /// entries, with or without blocking ones).
    static func listKey(_ f: DirectoryManifest.File) -> String {
        let blockList = f.kind == "block" || ((f.actions?["identify"] ?? 0) == 0 && (f.actions?["block"] ?? 0) > 0)
        return f.regionKey + "\t" + (blockList ? "block" : "identify")
    }

    /// One source answers for a region's list: of the sources subscribed to a region of the
    /// same name, the one of highest precedence (`sets` in precedence order) whose packs of it
    /// feed that list. A region's numbers change with each of its sets — numbers are deleted
    /// as well as added — so a source of lower precedence (the starter set shipped in the app,
    /// built per region with the publisher's region names) must not answer for a number of a
    /// region another source now delivers: its packs of that region are left out, and come
    /// back when that region is unsubscribed. Block lists (``listKey(_:)``) claim apart: a toxic
    /// pack blocks beside a directory of the same region name, as a blocking source is meant
    /// to. Sets each source's ``shadowedLists`` and ``shadowedRegions``.
    static func claimRegions(_ sets: inout [SourceSet]) {
        var claimed = Set<String>()
        for i in sets.indices {
            let subscribed = Set(sets[i].subscribedRegions)
            let files = sets[i].manifest.files.filter { subscribed.contains($0.regionKey) }
            let lists = Set(files.map(listKey))
            sets[i].shadowedLists = lists.intersection(claimed)
            sets[i].shadowedRegions = Set(files.filter { sets[i].shadowedLists.contains(listKey($0)) }.map(\.regionKey))
            claimed.formUnion(lists)
        }
    }

    /// Subscribed regions the manifest does not offer (any more).
    var unavailableRegions: [String] {
        let offered = Set(manifest.files.map(\.regionKey))
        return (record.regions ?? []).filter { !offered.contains($0) }
    }
}

/// The manifest of a composed generation: every source's selected files (`sets` in precedence
/// order, ``SourcesRecord/ordered(_:)``), renamed `SOURCE.FILE`, with `source` set and the
/// priority ``composedPriority(_:fileRank:)``. The files are listed in that order, each
/// source's in its own manifest's order, so equal priorities (inside one source) fall back to
/// the source's order, as in its own set.
func composedManifest(_ sets: [SourceSet]) throws(DirectoryError) -> DirectoryManifest {
    var files: [DirectoryManifest.File] = []
    for set in sets {
        // The source's own priorities, ranked from 0 (lowest); at most 256 files, so < 2^9.
        let levels = Set(set.selectedFiles.map { $0.priority ?? 0 }).sorted()
        for f in set.selectedFiles {
            var pack = f
            pack.file = StoreSource.packName(source: set.record.name, file: f.file)
            pack.source = set.record.name
            pack.priority = composedPriority(set.record, fileRank: levels.firstIndex(of: f.priority ?? 0)!)
            files.append(pack)
        }
    }
    var manifest = DirectoryManifest(files: files)
    manifest.formatVersion = manifest.newestFileFormat
    manifest.generator = "CallerID \(CallerIDVersion.library) store"
    guard files.count <= DirectoryManifest.maxFiles else {
        throw DirectoryError(.budgetExceeded, "the sources' subscribed regions make \(files.count) packs; a store holds at most \(DirectoryManifest.maxFiles): unsubscribe regions or remove a source")
    }
    for f in files where !DirectoryManifest.isPortableFileName(f.file) {
        throw DirectoryError(.badManifest, "source \(f.source ?? "?"): pack name \(quotedInput(f.file.utf8)) is not a portable file name (too long, or a name the store keeps for itself)")
    }
    return manifest
}

/// The priority of a pack in a composed generation: the source's priority first, then its
/// ``StoreSource/order`` (subscribed first wins), then the rank of the file's own priority in
/// its source: `priority·2^30 + (2^20 − 1 − order)·2^9 + rank`. It depends on nothing but the
/// source and its own files, so adding, removing or updating another source never changes it
/// (and ``changedRegions(_:_:)`` sees only what did change). At most ±2^50: exact in JSON.
func composedPriority(_ source: StoreSource, fileRank: Int) -> Int {
    source.priority * (1 << 30) + ((1 << 20) - 1 - source.order) * (1 << 9) + fileRank
}

/// What a source offers: the regions of its signed manifest, as a region picker shows them
/// (``DirectoryFetcher/offer(baseURL:trust:client:deadline:)``, `lookup fetch URL --list`).
public struct SourceOffer: Sendable, Equatable {
    /// One region: its files' counts summed, and the number bounds of each file.
    public struct Region: Sendable, Equatable {
        public var name: String
        /// Its files (in an installed store, ``InstalledSource/regions``: the packs' names).
        public var files: [String]
        /// Entries of all its files; nil when the manifest does not say for every file.
        public var entries: Int?
        public var bytes: Int
        /// `first_number`…`last_number` of each file that states them, ascending.
        public var numbers: [ClosedRange<UInt64>]
        /// The files' kinds (`all`, `identify`, `block`, `top`), sorted.
        public var kinds: [String]
    }

    public var datasetVersion: String?
    public var buildTime: String?
    public var regions: [Region]

    /// The regions of `manifest`, sorted by name.
    public init(_ manifest: DirectoryManifest) {
        datasetVersion = manifest.datasetVersion
        buildTime = manifest.buildTime
        var byName: [String: Region] = [:]
        for f in manifest.files {
            var r = byName[f.regionKey] ?? Region(name: f.regionKey, files: [], entries: 0, bytes: 0, numbers: [], kinds: [])
            r.files.append(f.file)
            r.entries = r.entries.flatMap { total in f.entries.map { total + $0 } }
            r.bytes += f.bytes
            if let first = f.firstNumber, let last = f.lastNumber, first <= last { r.numbers.append(first...last) }
            if let kind = f.kind, !r.kinds.contains(kind) { r.kinds.append(kind) }
            byName[f.regionKey] = r
        }
        regions = byName.values.map { r in
            var r = r
            r.numbers.sort { $0.lowerBound < $1.lowerBound }
            r.kinds.sort()
            return r
        }.sorted { $0.name < $1.name }
    }
}

/// One source of an installed generation, as `lookup store list` shows it.
public struct InstalledSource: Sendable, Equatable {
    public var source: StoreSource
    /// The subscribed regions installed, sorted by name; a region's files are its packs'
    /// names in the generation.
    public var regions: [SourceOffer.Region]
    /// Every region the installed manifest of the source offers.
    public var offered: [String]
    /// Subscribed regions the installed manifest does not offer.
    public var unavailable: [String]
    /// Packs of the subscribed regions that are not in the generation: left out by a step of
    /// another source because they were missing or damaged (the source's next step brings
    /// them back), or missing or damaged since.
    public var missingPacks: [String]
    /// Subscribed regions that a source of higher precedence answers for (subscribed to a
    /// region of the same name): this source's packs of them are left out, sorted.
    public var shadowed: [String] = []
}
