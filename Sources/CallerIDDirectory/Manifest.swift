public import Foundation
public import CallerID

/// `manifest.json` of a build output directory or of an installed generation: the one model
/// that CallerIDPipeline writes (``jsonData()``) and this module reads (``decode(_:path:)``).
/// Read tolerantly: unknown keys are ignored and every field except `file`, `bytes` and `xxh3`
/// may be missing or null (manifests written before `sha256` existed still read).
public struct DirectoryManifest: Sendable, Equatable {
    /// One database file of the set.
    public struct File: Sendable, Equatable {
        /// File name inside the directory (no `/`).
        public var file: String
        public var region: String?
        /// `all`, `identify`, `block` or `top`.
        public var kind: String?
        public var shard: Int?
        public var shards: Int?
        public var entries: Int?
        /// The smallest and the largest number of the file's entries (nil when it has none, or
        /// in manifests written without them). A lookup asks the file only for numbers between
        /// them; `lookup verify` checks that every entry lies there.
        public var firstNumber: UInt64?
        public var lastNumber: UInt64?
        /// The slice of the number line this shard answers for: the shards of one region and
        /// kind tile it without gaps, so it holds ``firstNumber``...``lastNumber``. Says nothing
        /// of ranges (see ``ranges``).
        public var rangeStart: UInt64?
        public var rangeEnd: UInt64?
        /// How many ranges the file stores as ranges (`lookup build --keep-ranges`), 0 when
        /// none. Nil in manifests written before this field existed: a lookup then asks the file
        /// for a range answer whenever no file has an entry for the number.
        public var ranges: Int?
        public var categories: [String: Int]?
        public var actions: [String: Int]?
        /// Size of the file in bytes.
        public var bytes: Int
        /// XXH3-64 (seed 0) of the whole file: the fast damage check.
        public var xxh3: UInt64
        /// SHA-256 of the whole file, 64 lowercase hex digits: what a signature covers
        /// (``ManifestSignature``). Nil in manifests written before it existed.
        public var sha256: String?
        /// The file's own format version, as its header says: `2.0`, or `3.0` when its keys use
        /// key codec 2, which only 3.0 readers read (docs/FORMAT.md §9).
        public var formatVersion: String?
        /// Precedence when several files hold a number: higher wins (default 0), then the file
        /// listed earlier. See ``DirectorySnapshot``.
        public var priority: Int?
        /// The source the file came from, in a store composed of sources (docs/CALL-DIRECTORY.md,
        /// "Sources and packs"): the file is that source's pack, renamed `SOURCE.FILE`. Nil in
        /// a build directory and in a store generation installed without a source.
        public var source: String?

        public init(file: String, region: String? = nil, kind: String? = nil, entries: Int? = nil,
                    bytes: Int, xxh3: UInt64, sha256: String? = nil, priority: Int? = nil) {
            self.file = file
            self.region = region
            self.kind = kind
            self.entries = entries
            self.bytes = bytes
            self.xxh3 = xxh3
            self.sha256 = sha256
            self.priority = priority
        }

        /// The region this file belongs to (its file name when the manifest names none).
        public var regionKey: String { region ?? file }

        /// The region as a store composed of sources names it: `SOURCE/REGION` for a source's
        /// pack (the region, or the file name the source gave it), ``regionKey`` otherwise.
        public var sourceRegionKey: String {
            guard let source else { return regionKey }
            return source + "/" + (region ?? StoreSource.sourceFileName(ofPack: file, source: source))
        }
    }

    /// The newest ``File/formatVersion`` of ``files`` (versions compared as numbers, major then
    /// minor); nil when no file names its version.
    public var newestFileFormat: String? {
        func parts(_ v: String) -> (Int, Int) {
            let p = v.split(separator: ".")
            return (p.first.flatMap { Int($0) } ?? 0, p.count > 1 ? Int(p[1]) ?? 0 : 0)
        }
        return files.compactMap(\.formatVersion).max { parts($0) < parts($1) }
    }

    public var manifestVersion: Int?
    /// The newest format version of the manifest's files (``newestFileFormat``): a reader that
    /// reads it reads every file. Nil when no file says.
    public var formatVersion: String?
    /// The publisher's name for this data (`--dataset-version`, or a content hash). Fetches
    /// refuse an older one than installed (``DirectoryFetcher``).
    public var datasetVersion: String?
    /// When the set was built (its creation time): ISO 8601 UTC, `2026-12-01T04:00:00Z`.
    public var buildTime: String?
    /// The program that wrote the manifest (`CallerID 1.2.3`).
    public var generator: String?
    /// The entries per database the build used.
    public var maxEntries: Int?
    public var files: [File]

    public init(files: [File], datasetVersion: String? = nil) {
        self.files = files
        self.datasetVersion = datasetVersion
        manifestVersion = 1
    }

    /// The most files a merge reads at once.
    public static let maxFiles = 256

    /// Which fields of the manifest ``decode(_:path:fields:)`` reads.
    public enum Fields: Sendable {
        /// Every field of the model.
        case all
        /// What a lookup needs of each file, read by a scan that costs an eighth of the full
        /// decode's instructions on a manifest of 217 files: ``File/file``, ``File/bytes``,
        /// ``File/xxh3``, ``File/priority``, ``File/firstNumber``, ``File/lastNumber`` and
        /// ``File/ranges``. The other fields of the files and of the manifest are nil; a
        /// manifest the scan cannot read plainly (an escape in a name, a number written with a
        /// fraction or exponent, a duplicate key) is decoded in full instead, so it is accepted or
        /// refused, with the same message, as by ``all``. Wrong types in fields it does not
        /// read go unnoticed: ``all`` (used by `lookup verify`, install and feed) reports them.
        case lookup
    }

    /// Reads `directory/manifest.json`.
    public static func read(directory: String, fields: Fields = .all) throws(DirectoryError) -> DirectoryManifest {
        try decode(try readManifestBytes(directory: directory), path: directory + "/manifest.json", fields: fields)
    }

    /// Decodes and validates manifest bytes; `path` names them in errors.
    public static func decode(_ data: Data, path: String, fields: Fields = .all) throws(DirectoryError) -> DirectoryManifest {
        if fields == .lookup, let files = ManifestScan.lookupFields(data) {
            var manifest = DirectoryManifest(files: files)
            manifest.manifestVersion = nil
            try manifest.validate(path: path)
            return manifest
        }
        let manifest: DirectoryManifest
        do {
            manifest = try JSONDecoder().decode(DirectoryManifest.self, from: data)
        } catch let error as DirectoryError {
            throw DirectoryError(.badManifest, "\(path): \(error.message)")
        } catch let DecodingError.keyNotFound(key, context) {
            throw DirectoryError(.badManifest, "\(path): missing \"\(key.stringValue)\"\(where_(context.codingPath))")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            throw DirectoryError(.badManifest, "\(path): wrong type\(where_(context.codingPath)): \(context.debugDescription)")
        } catch let DecodingError.dataCorrupted(context) {
            throw DirectoryError(.badManifest, "\(path): \(context.debugDescription)\(where_(context.codingPath))")
        } catch {
            throw DirectoryError(.badManifest, "\(path): not a manifest: \(error)")
        }
        try manifest.validate(path: path)
        return manifest
    }

    func validate(path: String) throws(DirectoryError) {
        guard files.count <= Self.maxFiles else {
            throw DirectoryError(.badManifest, "\(path): \(files.count) files; a merge reads at most \(Self.maxFiles)")
        }
        var seen: Set<String> = []
        for (i, f) in files.enumerated() {
            guard Self.isPlainFileName(f.file) else {
                throw DirectoryError(.badManifest, "\(path): files[\(i)]: \(quotedInput(f.file.utf8)) is not a plain file name")
            }
            guard seen.insert(f.file).inserted else {
                throw DirectoryError(.badManifest, "\(path): files[\(i)]: \(quotedInput(f.file.utf8)) is listed twice")
            }
            guard f.bytes >= 0 else { throw DirectoryError(.badManifest, "\(path): files[\(i)]: negative size") }
            if let sha = f.sha256, !isLowerHex(sha, count: 64) {
                throw DirectoryError(.badManifest, "\(path): files[\(i)]: sha256 '\(sha.prefix(80))' is not 64 lowercase hex digits")
            }
        }
    }

    /// A name without `/`, NUL or a leading `.`, not a name the store uses for itself: what any
    /// manifest read may list (sets built or installed before ``isPortableFileName(_:)`` still read).
    static func isPlainFileName(_ name: String) -> Bool {
        // Bytes, not Foundation's `contains` (a CFString search: most of a query's manifest check).
        !name.isEmpty && name.utf8.count <= 255 && !name.hasPrefix(".") && !name.utf8.contains(0x2F) && !name.utf8.contains(0)
            && !reservedNames.contains(name)
    }

    /// The names a store keeps for its own files.
    static let reservedNames: Set<String> = ["manifest.json", "manifest.json.sig", "settings.json", "plan.json", "CURRENT", "signing-key.pub",
                                             "sources.json", "sources"]

    /// A name of the closed set a set that is signed, installed or fetched may list: 1 to 255
    /// of `A–Z a–z 0–9 . _ -`, not starting with `.`, not a name the store uses for itself. No
    /// byte of it can drive a terminal, reorder a line or mean something to a shell or a file
    /// system (`lookup build` names region files so: docs/PIPELINE.md).
    public static func isPortableFileName(_ name: String) -> Bool {
        guard !name.isEmpty, name.utf8.count <= 255, name.utf8.first != UInt8(ascii: ".") else { return false }
        for b in name.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                continue
            default:
                return false
            }
        }
        return !reservedNames.contains(name)
    }

    /// Refuses a manifest listing a name outside ``isPortableFileName(_:)``: the check of
    /// `lookup sign`, `lookup install` and `lookup fetch`, so that such a name is never
    /// published, installed or printed.
    public func requirePortableFileNames(path: String) throws(DirectoryError) {
        for (i, f) in files.enumerated() where !Self.isPortableFileName(f.file) {
            throw DirectoryError(.badManifest, """
                \(path): files[\(i)]: \(quotedInput(f.file.utf8)) is not a portable file name (1 to 255 of A-Z a-z 0-9 . _ -, \
                not starting with '.'); rebuild the set with this version of 'lookup build', which names its files so
                """)
        }
    }

    static func readManifestBytes(directory: String) throws(DirectoryError) -> Data {
        let path = directory + "/manifest.json"
        guard FileManager.default.fileExists(atPath: path) else {
            throw DirectoryError(.fileNotFound, "\(path): no manifest.json (not a build output directory or store generation)")
        }
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw DirectoryError(.io, "\(path): cannot read: \(error.localizedDescription)")
        }
    }

    /// The JSON text of this manifest (only the known fields, keys sorted, indented, a final
    /// newline): what a build writes. An install copies a build's manifest verbatim instead, so
    /// unknown fields survive and a signature over its bytes stays valid.
    public func jsonData() -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        var data = (try? encoder.encode(self)) ?? Data()
        data.append(0x0A)
        return data
    }

    private static func where_(_ path: [any CodingKey]) -> String {
        path.isEmpty ? "" : " at " + path.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
    }
}

extension DirectoryManifest: Codable {
    enum CodingKeys: String, CodingKey {
        case manifestVersion = "manifest_version", formatVersion = "format_version"
        case datasetVersion = "dataset_version", buildTime = "build_time", generator
        case maxEntries = "max_entries", files
    }
}

extension DirectoryManifest.File: Codable {
    enum CodingKeys: String, CodingKey {
        case file, region, kind, shard, shards, entries, categories, actions, bytes, xxh3, sha256, priority, ranges, source
        case firstNumber = "first_number", lastNumber = "last_number"
        case rangeStart = "range_start", rangeEnd = "range_end", formatVersion = "format_version"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        file = try c.decode(String.self, forKey: .file)
        region = try c.decodeIfPresent(String.self, forKey: .region)
        kind = try c.decodeIfPresent(String.self, forKey: .kind)
        shard = try c.decodeIfPresent(Int.self, forKey: .shard)
        shards = try c.decodeIfPresent(Int.self, forKey: .shards)
        entries = try c.decodeIfPresent(Int.self, forKey: .entries)
        firstNumber = try c.decodeIfPresent(UInt64.self, forKey: .firstNumber)
        lastNumber = try c.decodeIfPresent(UInt64.self, forKey: .lastNumber)
        rangeStart = try c.decodeIfPresent(UInt64.self, forKey: .rangeStart)
        rangeEnd = try c.decodeIfPresent(UInt64.self, forKey: .rangeEnd)
        ranges = try c.decodeIfPresent(Int.self, forKey: .ranges)
        categories = try c.decodeIfPresent([String: Int].self, forKey: .categories)
        actions = try c.decodeIfPresent([String: Int].self, forKey: .actions)
        bytes = try c.decode(Int.self, forKey: .bytes)
        let hex = try c.decode(String.self, forKey: .xxh3)
        guard hex.utf8.count == 16, let h = UInt64(hex, radix: 16) else {
            throw DecodingError.dataCorruptedError(forKey: .xxh3, in: c, debugDescription: "xxh3 '\(hex)' is not 16 hex digits")
        }
        xxh3 = h
        sha256 = try c.decodeIfPresent(String.self, forKey: .sha256)
        formatVersion = try c.decodeIfPresent(String.self, forKey: .formatVersion)
        priority = try c.decodeIfPresent(Int.self, forKey: .priority)
        source = try c.decodeIfPresent(String.self, forKey: .source)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(file, forKey: .file)
        try c.encodeIfPresent(region, forKey: .region)
        try c.encodeIfPresent(kind, forKey: .kind)
        try c.encodeIfPresent(shard, forKey: .shard)
        try c.encodeIfPresent(shards, forKey: .shards)
        try c.encodeIfPresent(entries, forKey: .entries)
        try c.encodeIfPresent(firstNumber, forKey: .firstNumber)
        try c.encodeIfPresent(lastNumber, forKey: .lastNumber)
        try c.encodeIfPresent(rangeStart, forKey: .rangeStart)
        try c.encodeIfPresent(rangeEnd, forKey: .rangeEnd)
        try c.encodeIfPresent(ranges, forKey: .ranges)
        try c.encodeIfPresent(categories, forKey: .categories)
        try c.encodeIfPresent(actions, forKey: .actions)
        try c.encode(bytes, forKey: .bytes)
        try c.encode(hex16(xxh3), forKey: .xxh3)
        try c.encodeIfPresent(sha256, forKey: .sha256)
        try c.encodeIfPresent(formatVersion, forKey: .formatVersion)
        try c.encodeIfPresent(priority, forKey: .priority)
        try c.encodeIfPresent(source, forKey: .source)
    }
}

/// 16 lowercase hex digits.
func hex16(_ v: UInt64) -> String {
    let s = String(v, radix: 16)
    return String(repeating: "0", count: 16 - s.count) + s
}

/// What changed between two installed sets, by region (files compared by name, size and XXH3).
public struct RegionChanges: Sendable, Equatable {
    public var added: [String] = []
    public var removed: [String] = []
    public var changed: [String] = []
    public var unchanged: [String] = []

    /// True when a reload is needed: a region was added, removed or changed.
    public var isEmpty: Bool { added.isEmpty && removed.isEmpty && changed.isEmpty }
}

/// Regions added, removed or changed from `old` (nil: nothing installed) to `new`, found by
/// comparing each region's files (name, size, XXH3) and priorities. Sorted by name. In a store
/// composed of sources a region is named `SOURCE/REGION` (``DirectoryManifest/File/sourceRegionKey``).
package func changedRegions(_ old: DirectoryManifest?, _ new: DirectoryManifest) -> RegionChanges {
    struct Key: Hashable { var file: String; var bytes: Int; var xxh3: UInt64; var priority: Int }
    func byRegion(_ m: DirectoryManifest?) -> [String: Set<Key>] {
        var out: [String: Set<Key>] = [:]
        for f in m?.files ?? [] {
            out[f.sourceRegionKey, default: []].insert(Key(file: f.file, bytes: f.bytes, xxh3: f.xxh3, priority: f.priority ?? 0))
        }
        return out
    }
    let a = byRegion(old), b = byRegion(new)
    var changes = RegionChanges()
    for region in Set(a.keys).union(b.keys).sorted() {
        switch (a[region], b[region]) {
        case (nil, _): changes.added.append(region)
        case (_, nil): changes.removed.append(region)
        case let (x?, y?): if x == y { changes.unchanged.append(region) } else { changes.changed.append(region) }
        }
    }
    return changes
}

extension DirectoryManifest {
    /// SHA-256 of a whole file as 64 lowercase hex digits (what ``File/sha256`` holds).
    package static func sha256Hex(fileAt path: String) throws(DirectoryError) -> String {
        try Crypto.sha256Hex(fileAt: path)
    }
}

extension DirectoryManifest.File {
    /// Checks what this entry says of the file's numbers against the file, opened as `db`:
    /// every entry lies between ``firstNumber`` and ``lastNumber`` and the file holds
    /// ``ranges`` ranges (each when given). A lookup relies on both to leave files unopened,
    /// so a manifest that misstates them would hide answers; `lookup verify` calls this.
    /// - Throws: ``DirectoryError`` `badManifest` naming `manifestPath`, the file and the
    ///   numbers that disagree; a core error (damage) met while reading the entries.
    public func checkNumbers(of db: Database, manifestPath: String) throws(DirectoryError) {
        func mismatch(_ what: String) -> DirectoryError {
            DirectoryError(.badManifest, "\(manifestPath): \(file): \(what); a lookup asks this file only for what the manifest says it holds")
        }
        if let first = firstNumber, let last = lastNumber, db.count > 0 {
            // The lowest entry, and the lowest above `last` (nil: none).
            let lowest: UInt64?, beyond: UInt64?
            do throws(CallerIDError) {
                var cursor = db.cursor(from: 0)
                lowest = try cursor.next()?.number
                var after = db.cursor(from: last == UInt64.max ? last : last + 1)
                beyond = last == UInt64.max ? nil : try after.next()?.number
            } catch {
                throw DirectoryError(error)
            }
            if let lowest, lowest < first || lowest > last {
                throw mismatch("first_number \(first) and last_number \(last), but the file holds \(lowest)")
            }
            if let beyond {
                throw mismatch("last_number \(last), but the file holds \(beyond)")
            }
        }
        if let ranges, ranges != db.rangeCount {
            throw mismatch("ranges \(ranges), but the file holds \(db.rangeCount)")
        }
    }
}
