package import CallerID
import Foundation

/// The category of an identity in Live Caller ID Lookup (`IdentityCategory` of the example
/// server's `CallIdentity.proto`).
package enum LiveCallerIDCategory: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case unspecified = 0
    case person = 1
    case business = 2

    /// `person`, `business` or `unspecified`; nil for anything else.
    package init?(name: String) {
        switch name.lowercased() {
        case "unspecified": self = .unspecified
        case "person": self = .person
        case "business": self = .business
        default: return nil
        }
    }

    package var description: String {
        switch self {
        case .unspecified: "unspecified"
        case .person: "person"
        case .business: "business"
        }
    }

    /// The enum value's name in the text format.
    var protoName: String {
        switch self {
        case .unspecified: "IDENTITY_CATEGORY_UNSPECIFIED"
        case .person: "IDENTITY_CATEGORY_PERSON"
        case .business: "IDENTITY_CATEGORY_BUSINESS"
        }
    }
}

/// What ``LiveCallerIDExport/write(databases:to:options:)`` writes and how.
package struct LiveCallerIDExportOptions: Sendable, Equatable {
    package enum Output: Sendable, Equatable {
        /// `block.binpb` and `identity.binpb`: two `KeywordDatabase` messages, the input of
        /// Apple's `PIRProcessDatabase`.
        case datasets
        /// `input.txtpb`: one `InputIdentities` message in the text format, the input of the
        /// example server's `ConstructDatabase`.
        case text
    }

    package var output: Output = .datasets
    /// `cache_expiry_minutes` of every identity: how long a device reuses an answer.
    package var cacheExpiryMinutes: UInt32 = 1440
    /// The identity category of the entries of a CallerID category (by category name);
    /// categories not listed are ``LiveCallerIDCategory/unspecified``.
    package var identityCategories: [String: LiveCallerIDCategory] = [:]
    /// A folder of `+NUMBER.heic` files (each under 64 KB) attached to those numbers'
    /// identities. Only with ``Output/datasets`` (the text format has no icons).
    package var iconDirectory: String? = nil

    package init() {}
}

/// What an export wrote.
package struct LiveCallerIDExportReport: Sendable, Equatable {
    /// A file written: its path, rows (numbers) and size.
    package struct File: Sendable, Equatable {
        package var path: String
        package var rows: Int
        package var bytes: Int
    }

    package var files: [File] = []
    /// Numbers exported (rows of the block dataset / identities of the text file).
    package var numbers = 0
    /// Numbers whose category blocks.
    package var blocked = 0
    /// Rows of the identity dataset: numbers whose `CallIdentity` has a field set (a label, an
    /// icon, a cache expiry or a category), as Apple's `ConstructDatabase` writes them.
    package var identities = 0
    /// The sizes of the identity rows' values (binary datasets only): what `PIRProcessDatabase`'s
    /// cuckoo tables must hold, and the bucket size to give it.
    package var identitySizes = LiveCallerIDValueSizes()
    /// The configurations of `PIRProcessDatabase` written beside the datasets
    /// (``LiveCallerIDExport/blockConfigFileName``, ``LiveCallerIDExport/identityConfigFileName``).
    package var configurations: [String] = []
    /// Icons attached.
    package var icons = 0
    /// Icons of numbers that no database holds (not exported).
    package var unusedIcons = 0
    /// `.heic` files of the icon folder whose name is not `+NUMBER.heic` (ignored), and the first.
    package var ignoredIconFiles = 0
    package var firstIgnoredIconFile: String? = nil
    /// Identities whose serialized `CallIdentity` is over 65,535 bytes (Apple's example server
    /// encodes value sizes in 16 bits), and the first such number. They are written as they are.
    package var oversizedIdentities = 0
    package var firstOversizedNumber: UInt64? = nil
    /// Names given in ``LiveCallerIDExportOptions/identityCategories`` that no database has.
    package var unknownCategories: [String] = []
}

/// The sizes of the identity dataset's values (serialized `CallIdentity` messages), and the
/// cuckoo-table configuration of Apple's `PIRProcessDatabase` that places every row.
///
/// `PIRProcessDatabase` (swift-homomorphic-encryption 1.1) puts each row of a shard in one of
/// two buckets of a cuckoo table, a bucket holding rows of 10 + value bytes up to
/// `maxSerializedBucketSize` in all. When a row fits in neither bucket even by moving one row
/// out (`CuckooTable.insertLoop`: no `swapIndices`), a table that may grow (`allowExpansion`,
/// the default) grows and that row is **not inserted again**: it is lost without an error, and
/// a device asking for that number gets no answer. It happens to rows larger than the others
/// of two nearly full buckets: with the default size (half a plaintext, 1,024 bytes for
/// `n_4096_logq_27_28_28_logt_5`) to 1,000-byte labels, and to a few rows in a million of
/// ordinary ones. A table of fixed size (`fixedSize`) cannot grow, so the same step stops the
/// tool with an error instead: nothing is lost silently. The configuration written beside the
/// export (``LiveCallerIDExport/identityConfigFileName``) is such a table, sized from these
/// figures (docs/LIVE-CALLER-ID.md gives the measurements).
package struct LiveCallerIDValueSizes: Sendable, Equatable {
    /// Rows counted.
    package private(set) var rows = 0
    /// The largest value in bytes, and its number.
    package private(set) var largest = 0
    package private(set) var largestNumber: UInt64? = nil
    /// The largest value of at most ``LiveCallerIDExport/identityValueLimit`` bytes (a larger
    /// one cannot be served: `PIRProcessDatabase` refuses the dataset, and the export warns).
    package private(set) var largestServable = 0
    /// Rows per size class: `classes[k]` counts values of at most `16 << k` bytes (and more than
    /// the class before); the last class counts the rest.
    package private(set) var classes = [Int](repeating: 0, count: 14)
    /// Shards `PIRProcessDatabase` makes of the rows with
    /// ``LiveCallerIDExport/identityEntriesPerShard``, and the serialized size of the largest
    /// (1 + the rows' 10 + value bytes), measured on the written dataset.
    package internal(set) var shards = 0
    package internal(set) var largestShardBytes = 0

    package init() {}

    /// The upper bound of size class `k` (nil for the last, unbounded one).
    package static func classLimit(_ k: Int) -> Int? { k < 13 ? 16 << k : nil }

    mutating func add(_ size: Int, number: UInt64) {
        rows += 1
        if size > largest || largestNumber == nil {
            largest = size
            largestNumber = number
        }
        if size <= LiveCallerIDExport.identityValueLimit { largestServable = max(largestServable, size) }
        var k = 0
        while k < 13 && size > 16 << k { k += 1 }
        classes[k] += 1
    }

    /// Bytes of a plaintext of `n_4096_logq_27_28_28_logt_5`, the parameters of Apple's example
    /// configuration (4,096 coefficients of 4 bits).
    package static let bytesPerPlaintext = 2048

    /// What `PIRProcessDatabase` takes without the setting (`Arguments.resolve`): half a
    /// plaintext, or the bucket of the largest row alone (1 + 10 + value) rounded up to whole
    /// plaintexts when that is larger.
    package var defaultBucketSize: Int {
        let single = 11 + largest
        let p = Self.bytesPerPlaintext
        return single >= p / 2 ? (single + p - 1) / p * p : p / 2
    }

    /// The `maxSerializedBucketSize` to set: four times the bucket of the largest servable row
    /// alone (11 + value bytes), rounded up to whole plaintexts, at least one: room to move rows.
    package var recommendedBucketSize: Int {
        let p = Self.bytesPerPlaintext
        return max(p, (4 * (11 + largestServable) + p - 1) / p * p)
    }

    /// The share of the largest shard's buckets the fixed-size table fills.
    package static let loadFactor = 0.75

    /// The fixed bucket count to set: the largest shard fills ``loadFactor`` of its
    /// ``recommendedBucketSize`` buckets (an even count: two tables).
    package var recommendedBucketCount: Int {
        let n = Int((Double(largestShardBytes) / (Self.loadFactor * Double(recommendedBucketSize))).rounded(.up))
        return max(2, n + n % 2)
    }
}

/// Exports CallerID databases as the datasets of Apple's Live Caller ID Lookup example server
/// (apple/live-caller-id-lookup-example): the block dataset (`block.binpb`: one
/// `KeywordDatabaseRow` per number, keyword `+E164` in UTF-8, value one byte, 1 = block) and
/// the identity dataset (`identity.binpb`: one row per number whose `CallIdentity` has a field
/// set, as Apple's `ConstructDatabase` writes them, value a serialized `CallIdentity`), with
/// `PIRProcessDatabase`'s configurations beside them, or the example tool's text input
/// (`input.txtpb`).
///
/// - Numbers come out in ascending order, one row per number, each as the phone treats it and
///   `lookup NUMBER --db` answers it (``AnswerStream``: docs/CALL-DIRECTORY.md, "One answer for
///   a number"): blocked when the merged blocking list holds it, with the identifying label
///   where the identification list holds it too. A number in neither list (allow-listed, a
///   category not chosen) gets no row.
/// - A number's identity is its label, `cacheExpiryMinutes`, the identity category chosen for
///   its identifying entry's CallerID category (the blocking entry's when none identifies it)
///   and its icon.
/// - Streaming: each row is written as it is read, through a fixed buffer; heap use does not
///   grow with the databases (the icon folder's listing takes 8 bytes per icon). The files are
///   written under temporary names in the output folder and renamed into place at the end, so
///   a failed export leaves no partial file under a final name.
///
/// ```swift
/// var options = LiveCallerIDExportOptions()
/// options.identityCategories = ["shop": .business]
/// let report = try LiveCallerIDExport.write(databases: ["a.cid", "b.cid"], to: "out", options: options)
/// ```
package enum LiveCallerIDExport {
    /// Largest icon accepted, in bytes (icons must be under 64 KB).
    package static let maxIconBytes = 65_535
    /// Largest `CallIdentity` the example server handles (sizes are 16-bit there).
    package static let identityValueLimit = 65_535
    package static let blockFileName = "block.binpb"
    package static let identityFileName = "identity.binpb"
    package static let textFileName = "input.txtpb"
    /// The configurations of `PIRProcessDatabase` written beside the datasets.
    package static let blockConfigFileName = "block-config.json"
    package static let identityConfigFileName = "identity-config.json"
    /// `sharding.entryCountPerShard` of the configurations (those of Apple's example).
    package static let blockEntriesPerShard = 50_000
    package static let identityEntriesPerShard = 5_000
    /// The RLWE parameters of the configurations (those of Apple's example).
    package static let rlweParameters = "n_4096_logq_27_28_28_logt_5"

    /// Opens the database files (in precedence order: the first that holds a number answers)
    /// and exports them into `directory` (created when missing; its parent must exist).
    /// - Throws: ``DirectoryError``: `invalidArgument` for bad options, `fileNotFound` for a
    ///   missing database or icon folder, `corrupt` for a damaged database or an icon that is
    ///   empty or too big, `io` when writing fails (no output file is then replaced).
    /// - Parameter settings: the feed settings of the set (a store's: allow list, category
    ///   choice, rules), applied as the phone applies them; the defaults for files.
    package static func write(databases paths: [String], settings: FeedSettings = FeedSettings(), to directory: String,
                             options: LiveCallerIDExportOptions = LiveCallerIDExportOptions()) throws(DirectoryError) -> LiveCallerIDExportReport {
        var databases: [Database] = []
        for p in paths {
            do {
                databases.append(try Database(path: p))
            } catch {
                throw DirectoryError(error)
            }
        }
        guard !databases.isEmpty else { throw DirectoryError(.invalidArgument, "no database to export") }
        return try write(DirectorySnapshot(databases: databases, settings: settings), to: directory, options: options)
    }

    /// Exports open databases (precedence order: the first that holds a number in a list wins
    /// it) into `directory`, as the variant taking paths does.
    package static func write(databases: [Database], to directory: String,
                             options: LiveCallerIDExportOptions = LiveCallerIDExportOptions()) throws(DirectoryError) -> LiveCallerIDExportReport {
        guard !databases.isEmpty else { throw DirectoryError(.invalidArgument, "no database to export") }
        return try write(DirectorySnapshot(databases: databases), to: directory, options: options)
    }

    /// Exports a set with its feed settings (a store's generation: allow list, category choice,
    /// rules) into `directory`: the numbers the phone's two lists hold, as they hold them.
    package static func write(_ snapshot: DirectorySnapshot, to directory: String,
                              options: LiveCallerIDExportOptions = LiveCallerIDExportOptions()) throws(DirectoryError) -> LiveCallerIDExportReport {
        let databases = snapshot.databases
        guard !databases.isEmpty else { throw DirectoryError(.invalidArgument, "no database to export") }
        var report = LiveCallerIDExportReport()
        for name in options.identityCategories.keys.sorted() {
            guard (try? Category.named(name)) != nil else {
                throw DirectoryError(.invalidArgument, "'\(name)' is not a category name (1-64 characters a-z, 0-9, '-' or '_')")
            }
            if !databases.contains(where: { db in db.categories.contains { $0.name == name.lowercased() } }) {
                report.unknownCategories.append(name)
            }
        }
        if options.output == .text, options.iconDirectory != nil {
            throw DirectoryError(.invalidArgument,
                                 "the text format has no icons: pass the icon folder to ConstructDatabase (--icon-directory) instead")
        }
        let icons = try options.iconDirectory.map { d throws(DirectoryError) in try IconFolder(directory: d) }
        if let icons {
            report.ignoredIconFiles = icons.ignored
            report.firstIgnoredIconFile = icons.firstIgnored
        }
        if FileSystem.exists(directory) {
            guard FileSystem.isDirectory(directory) else {
                throw DirectoryError(.invalidArgument, "\(directory): exists and is not a folder")
            }
        } else {
            try FileSystem.makeDirectory(directory)
        }
        let identities = Dictionary(options.identityCategories.map { ($0.key.lowercased(), $0.value) }) { a, _ in a }
        var answers = AnswerStream(snapshot)
        do {
            switch options.output {
            case .datasets:
                try writeDatasets(&answers, snapshot, identities, icons: icons, directory: directory, options: options, report: &report)
                // Once the output buffers are freed: the heap holds one read buffer at a time.
                try measureShards(joinPath(directory, identityFileName), rows: report.identities, sizes: &report.identitySizes)
                report.configurations = try writeConfigurations(directory: directory, sizes: report.identitySizes)
            case .text:
                try writeText(&answers, snapshot, identities, directory: directory, options: options, report: &report)
            }
        } catch let error as DirectoryError {
            throw error
        } catch let error as CallerIDError {
            throw DirectoryError(error)
        } catch {
            throw DirectoryError(.io, "\(directory): \(error)")
        }
        return report
    }

    /// Every label written is held to the rule `verify` holds it to (``LabelText``): a label
    /// with invalid UTF-8, a control or a hidden character (a damaged file, or one built before
    /// the rule) stops the export before it reaches a phone's screen.
    private static func checkLabel(_ answers: AnswerStream, _ snapshot: DirectorySnapshot) throws(DirectoryError) {
        if let problem = LabelText.check(answers.label) {
            let file = snapshot.manifest.files[answers.labelFile].file
            throw DirectoryError(.corrupt, "\(snapshot.directory.isEmpty ? file : joinPath(snapshot.directory, file)): number \(answers.number): \(problem) "
                                 + "(the database fails 'lookup verify'; rebuild it with 'lookup build')")
        }
    }

    // MARK: Binary datasets

    /// The identity category of the current answer (`identities`: CallerID category name → identity).
    private static func identity(_ answers: AnswerStream, _ identities: [String: LiveCallerIDCategory]) -> LiveCallerIDCategory {
        identities[(answers.identifiedCategory ?? answers.category).name] ?? .unspecified
    }

    private static func writeDatasets(_ answers: inout AnswerStream, _ snapshot: DirectorySnapshot, _ identities: [String: LiveCallerIDCategory],
                                      icons: IconFolder?, directory: String, options: LiveCallerIDExportOptions,
                                      report: inout LiveCallerIDExportReport) throws {
        let blockPath = joinPath(directory, blockFileName)
        let identityPath = joinPath(directory, identityFileName)
        let blockFile = try AtomicOutputFile(path: blockPath)
        let identityFile = try AtomicOutputFile(path: identityPath)
        var blockRows = 0, identityRows = 0
        var row = ProtobufWriter(capacity: 1 << 16)
        var keyword = Keyword()
        let expiry = UInt64(options.cacheExpiryMinutes)
        let expirySize = expiry > 0 ? 1 + ProtobufWriter.varintSize(expiry) : 0
        var iconIndex = 0
        let iconNumbers = icons?.numbers ?? []
        do {
            while try answers.next() {
                try checkLabel(answers, snapshot)
                let n = answers.number
                let entry = (block: answers.isBlocked, identity: identity(answers, identities))
                keyword.set(n)
                let kwSize = ProtobufWriter.lengthDelimitedSize(keyword.count)

                // Block dataset: KeywordDatabase.rows { keyword, value = [0|1] }.
                row.reset()
                row.lengthDelimitedHeader(1, length: kwSize + ProtobufWriter.lengthDelimitedSize(1))
                keyword.withBytes { row.bytesField(1, $0) }
                row.lengthDelimitedHeader(2, length: 1)
                row.bytes.append(entry.block ? 1 : 0)
                try row.bytes.withUnsafeBytes { raw in Result { () throws(CallerIDError) in try blockFile.write(raw) } }.get()
                blockRows += 1
                if entry.block { report.blocked += 1 }

                // Identity dataset: rows { keyword, value = CallIdentity }.
                while iconIndex < iconNumbers.count && iconNumbers[iconIndex] < n {
                    report.unusedIcons += 1
                    iconIndex += 1
                }
                var image: Data? = nil
                if iconIndex < iconNumbers.count && iconNumbers[iconIndex] == n, let icons {
                    image = try icons.read(n)
                    iconIndex += 1
                }
                // A row whenever the CallIdentity has a field set, as ConstructDatabase writes
                // them (`identity != CallIdentity()`): a number without a label still gets its
                // cache expiry and category.
                let name = answers.label
                guard !name.isEmpty || image != nil || expiry > 0 || entry.identity != .unspecified else { continue }
                let iconSize = image.map { 2 + ($0.isEmpty ? 0 : ProtobufWriter.lengthDelimitedSize($0.count)) }
                let identitySize = (name.isEmpty ? 0 : ProtobufWriter.lengthDelimitedSize(name.count))
                    + (iconSize.map { ProtobufWriter.lengthDelimitedSize($0) } ?? 0)
                    + expirySize
                    + (entry.identity == .unspecified ? 0 : 2)
                if identitySize > identityValueLimit {
                    if report.oversizedIdentities == 0 { report.firstOversizedNumber = n }
                    report.oversizedIdentities += 1
                }
                report.identitySizes.add(identitySize, number: n)
                row.reset()
                row.lengthDelimitedHeader(1, length: kwSize + ProtobufWriter.lengthDelimitedSize(identitySize))
                keyword.withBytes { row.bytesField(1, $0) }
                row.lengthDelimitedHeader(2, length: identitySize)
                if !name.isEmpty { row.bytesField(1, name) }
                if let image, let iconSize {
                    row.lengthDelimitedHeader(2, length: iconSize)
                    row.varintField(1, 1)   // IMAGE_FORMAT_HEIC
                    if !image.isEmpty { image.withUnsafeBytes { row.bytesField(2, $0) } }
                    report.icons += 1
                }
                if expiry > 0 { row.varintField(3, expiry) }
                if entry.identity != .unspecified { row.varintField(4, UInt64(entry.identity.rawValue)) }
                try row.bytes.withUnsafeBytes { raw in Result { () throws(CallerIDError) in try identityFile.write(raw) } }.get()
                identityRows += 1
            }
            report.unusedIcons += iconNumbers.count - iconIndex
            try blockFile.commit()
            try identityFile.commit()
        } catch {
            blockFile.abandon()
            identityFile.abandon()
            throw error
        }
        report.numbers = blockRows
        report.identities = identityRows
        report.files = [
            .init(path: blockPath, rows: blockRows, bytes: blockFile.bytesWritten),
            .init(path: identityPath, rows: identityRows, bytes: identityFile.bytesWritten),
        ]
    }

    /// The shards `PIRProcessDatabase` makes of the written identity dataset (its
    /// `KeywordDatabase`: shard = the first 8 bytes of SHA-256(keyword), little-endian, modulo
    /// max(rows / entryCountPerShard, 1)) and the size of the largest, read back in 256 KiB chunks.
    static func measureShards(_ path: String, rows: Int, sizes: inout LiveCallerIDValueSizes) throws(DirectoryError) {
        let shards = max(rows / identityEntriesPerShard, 1)
        // Per shard, HashBucket.serializedSize of all its values (1 + 10 + value bytes each): the
        // figure CuckooTable sizes a growing table from.
        var bytes = [Int](repeating: 1, count: shards)
        try KeywordDatabaseRows.forEach(path) { (keyword, valueSize) throws(DirectoryError) in
            let h = try Crypto.sha256PrefixLE(keyword)
            bytes[Int(h % UInt64(shards))] += 10 + valueSize
        }
        sizes.shards = shards
        sizes.largestShardBytes = bytes.max() ?? 0
    }

    /// `block-config.json` and `identity-config.json`: Apple's example configurations, the
    /// identity one with a fixed-size cuckoo table sized for these rows (nothing can be dropped
    /// silently: PIRProcessDatabase places every row or stops with an error).
    static func writeConfigurations(directory: String, sizes: LiveCallerIDValueSizes) throws(DirectoryError) -> [String] {
        func config(_ stem: String, shard: Int, cuckoo: String?) -> String {
            """
            {
              "inputDatabase": "\(stem).binpb",
              "outputDatabase": "\(stem)-SHARD_ID.bin",
              "outputPirParameters": "\(stem)-SHARD_ID.params.txtpb",
              "rlweParameters": "\(rlweParameters)",
              "sharding": { "entryCountPerShard": \(shard) },\(cuckoo.map { "\n  \"cuckooTableArguments\": \($0)," } ?? "")
              "trialsPerShard": 5
            }

            """
        }
        // The block rows are all one byte: a row always fits where another was, so the example's
        // growing table loses none.
        let block = config("block", shard: blockEntriesPerShard, cuckoo: nil)
        let identity = config("identity", shard: identityEntriesPerShard, cuckoo: """
            { "maxSerializedBucketSize": \(sizes.recommendedBucketSize), \
            "bucketCount": { "fixedSize": { "bucketCount": \(sizes.recommendedBucketCount) } } }
            """)
        var files: [String] = []
        for (name, text) in [(blockConfigFileName, block), (identityConfigFileName, identity)] {
            let path = joinPath(directory, name)
            try FileSystem.writeAtomically(Data(text.utf8), to: path)
            files.append(path)
        }
        return files
    }

    // MARK: Text input of ConstructDatabase

    private static func writeText(_ answers: inout AnswerStream, _ snapshot: DirectorySnapshot, _ identities: [String: LiveCallerIDCategory],
                                  directory: String, options: LiveCallerIDExportOptions,
                                  report: inout LiveCallerIDExportReport) throws {
        let path = joinPath(directory, textFileName)
        let file = try AtomicOutputFile(path: path)
        var out: [UInt8] = []
        out.reserveCapacity(1 << 16)
        var keyword = Keyword()
        let expiryLine = options.cacheExpiryMinutes > 0 ? Array("    cache_expiry_minutes: \(options.cacheExpiryMinutes)\n".utf8) : []
        let categoryLines = LiveCallerIDCategory.allCases.map { Array("    category: \($0.protoName)\n".utf8) }
        let open = Array("identities {\n  key: \"".utf8)
        let value = Array("\"\n  value {\n".utf8)
        let name = Array("    name: ".utf8)
        let block = Array("    block: true\n".utf8)
        let close = Array("  }\n}\n".utf8)
        do {
            while try answers.next() {
                try checkLabel(answers, snapshot)
                let entry = (block: answers.isBlocked, identity: identity(answers, identities))
                let label = answers.label
                keyword.set(answers.number)
                out.removeAll(keepingCapacity: true)
                out.append(contentsOf: open)
                keyword.withBytes { out.append(contentsOf: $0) }
                out.append(contentsOf: value)
                if !label.isEmpty {
                    out.append(contentsOf: name)
                    appendTextFormatString(label, to: &out)
                    out.append(0x0A)
                }
                out.append(contentsOf: expiryLine)
                if entry.block {
                    out.append(contentsOf: block)
                    report.blocked += 1
                }
                if entry.identity != .unspecified { out.append(contentsOf: categoryLines[Int(entry.identity.rawValue)]) }
                out.append(contentsOf: close)
                try out.withUnsafeBytes { raw in Result { () throws(CallerIDError) in try file.write(raw) } }.get()
                report.numbers += 1
                // The rows ConstructDatabase makes of this file (no icons in the text format).
                if !label.isEmpty || options.cacheExpiryMinutes > 0 || entry.identity != .unspecified { report.identities += 1 }
            }
            try file.commit()
        } catch {
            file.abandon()
            throw error
        }
        report.files = [.init(path: path, rows: report.numbers, bytes: file.bytesWritten)]
    }
}

/// The rows of a `KeywordDatabase` file (field 1, each a `KeywordDatabaseRow`: keyword field 1,
/// value field 2), read in 256 KiB chunks: each row's keyword and value size. A value is
/// skipped, never held, so the buffer stays under two chunks whatever the rows' sizes.
struct KeywordDatabaseRows {
    private let handle: FileHandle
    private let path: String
    private var buffer: [UInt8] = []
    private var at = 0
    private var base = 0          // file offset of buffer[0]
    private var ended = false
    private var keyword: [UInt8] = []   // reused: no allocation per row
    private static let chunkBytes = 256 * 1024

    /// Calls `body` with each row's keyword (valid only during the call) and value size.
    static func forEach(_ path: String, _ body: (UnsafeRawBufferPointer, Int) throws(DirectoryError) -> Void) throws(DirectoryError) {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw DirectoryError(.io, "\(path): cannot open to read back") }
        defer { try? handle.close() }
        var rows = KeywordDatabaseRows(handle: handle, path: path)
        rows.keyword.reserveCapacity(32)
        rows.buffer.reserveCapacity(2 * chunkBytes)
        while try rows.next() {
            try rows.keyword.withUnsafeBytes { bytes in Result { () throws(DirectoryError) in try body(bytes, rows.valueSize) } }.get()
        }
    }

    private init(handle: FileHandle, path: String) {
        self.handle = handle
        self.path = path
    }

    private var valueSize = 0

    private func bad() -> DirectoryError { DirectoryError(.io, "\(path): not the KeywordDatabase just written") }

    /// Makes `n` bytes from `at` available; false at the end of the file.
    private mutating func need(_ n: Int) throws(DirectoryError) -> Bool {
        while buffer.count - at < n && !ended {
            let chunk: Data
            do { chunk = try handle.read(upToCount: Self.chunkBytes) ?? Data() } catch { throw DirectoryError(.io, "\(path): cannot read back: \(error)") }
            if chunk.isEmpty { ended = true; break }
            buffer.removeSubrange(0..<at)
            base += at
            at = 0
            buffer.append(contentsOf: chunk)
        }
        return buffer.count - at >= n
    }

    private mutating func varint() throws(DirectoryError) -> Int {
        var v = 0, shift = 0
        while true {
            if at >= buffer.count { guard try need(1) else { throw bad() } }
            guard shift < 63 else { throw bad() }
            let b = buffer[at]
            at += 1
            v |= Int(b & 0x7F) << shift
            if b < 0x80 { return v }
            shift += 7
        }
    }

    /// Reads the next row into `keyword` and `valueSize`; false at the end of the file.
    private mutating func next() throws(DirectoryError) -> Bool {
        guard try need(1) else { return false }
        guard try varint() == 0x0A else { throw bad() }
        let rowLength = try varint()
        let rowEnd = base + at + rowLength
        keyword.removeAll(keepingCapacity: true)
        valueSize = 0
        while base + at < rowEnd {
            let key = try varint()
            let n = try varint()
            if key == 0x0A {
                guard n <= 32, try need(n) else { throw bad() }   // "+" and at most 20 digits
                keyword.append(contentsOf: buffer[at..<(at + n)])
                at += n
                continue
            }
            if key == 0x12 { valueSize = n }
            // Skip the field's bytes (a value may be larger than what is buffered).
            var skip = n
            while skip > 0 {
                guard try need(1) else { throw bad() }
                let step = min(skip, buffer.count - at)
                at += step
                skip -= step
            }
        }
        guard base + at == rowEnd else { throw bad() }
        return true
    }
}

/// `+` and the decimal digits of a number, in a reused buffer.
private struct Keyword {
    private var bytes = [0x2B] + [UInt8](repeating: 0, count: 20)   // "+" stays, digits follow
    private(set) var count = 0

    mutating func set(_ number: UInt64) {
        count = 1 + bytes.writeDecimal(number, at: 1)
    }

    func withBytes(_ body: (UnsafeRawBufferPointer) -> Void) {
        bytes.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
    }
}

/// The `+NUMBER.heic` files of an icon folder, listed once (8 bytes per icon), read when their
/// number is exported.
struct IconFolder {
    let directory: String
    /// Numbers with an icon, ascending.
    let numbers: [UInt64]
    /// `.heic` files whose name is not `+NUMBER.heic` with NUMBER an E.164 number.
    let ignored: Int
    let firstIgnored: String?

    init(directory: String) throws(DirectoryError) {
        guard FileSystem.isDirectory(directory) else {
            throw DirectoryError(.fileNotFound, "\(directory): no such icon folder")
        }
        self.directory = directory
        var numbers: [UInt64] = []
        var ignored: [String] = []
        for file in FileSystem.list(directory) where file.hasSuffix(".heic") {
            let stem = file.dropLast(5)
            guard stem.hasPrefix("+"), let n = UInt64(stem.dropFirst()), PhoneNumber.isValid(n), stem == "+\(n)" else {
                ignored.append(file)
                continue
            }
            let path = joinPath(directory, file)
            guard let size = FileSystem.fileSize(path) else {
                ignored.append(file)
                continue
            }
            try IconFolder.check(size: size, path: path)
            numbers.append(n)
        }
        numbers.sort()
        self.numbers = numbers
        self.ignored = ignored.count
        firstIgnored = ignored.min()
    }

    static func check(size: Int, path: String) throws(DirectoryError) {
        guard size > 0 else { throw DirectoryError(.corrupt, "\(path): empty icon") }
        guard size <= LiveCallerIDExport.maxIconBytes else {
            throw DirectoryError(.corrupt, "\(path): icon is \(grouped(size)) bytes; icons must be under 64 KB (at most \(grouped(LiveCallerIDExport.maxIconBytes)) bytes)")
        }
    }

    func read(_ number: UInt64) throws(DirectoryError) -> Data {
        let path = joinPath(directory, "+\(number).heic")
        guard let data = FileManager.default.contents(atPath: path) else {
            throw DirectoryError(.io, "\(path): cannot read the icon")
        }
        try IconFolder.check(size: data.count, path: path)
        return data
    }
}
