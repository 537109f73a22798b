import Foundation
import Testing
@testable import CallerID
@testable import CallerIDDirectory

// `lookup export --live-caller-id`: the datasets are decoded with the real protoc (Debian's
// protobuf-compiler, installed by tools/setup.sh) against the .proto files in
// Tests/LiveCallerIDProto, and compared row for row with the databases.

/// protoc, found on PATH, and the schemas it decodes the export with.
enum Protoc {
    static let path: String? = {
        let dirs = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        return dirs.map { "\($0)/protoc" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    static let schemas = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("LiveCallerIDProto").path

    static func require(sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        try #require(path, """
            protoc not found on PATH: these tests decode the export with the real protobuf compiler.
            Install Debian's protobuf-compiler (apt-get install protobuf-compiler; bash tools/setup.sh does it).
            """, sourceLocation: sourceLocation)
    }

    /// Runs `protoc -I schemas ARGS < input` and returns its standard output; a failure fails the test.
    static func run(_ args: [String], input: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Data {
        let protoc = try require(sourceLocation: sourceLocation)
        let dir = TempDir()
        let out = dir.path("out"), err = dir.path("err")
        _ = FileManager.default.createFile(atPath: out, contents: nil)
        _ = FileManager.default.createFile(atPath: err, contents: nil)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: protoc)
        process.arguments = ["-I", schemas] + args
        process.standardInput = try FileHandle(forReadingFrom: URL(fileURLWithPath: input))
        process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: err))
        try process.run()
        let status = waitForEnd(process)
        let errText = String(decoding: try Data(contentsOf: URL(fileURLWithPath: err)), as: UTF8.self)
        #expect(status == 0, "protoc \(args.joined(separator: " ")) failed: \(errText)", sourceLocation: sourceLocation)
        return try Data(contentsOf: URL(fileURLWithPath: out))
    }

    static func decode(_ type: String, _ proto: String, _ file: String) throws -> [TextNode] {
        try parseTextFormat(run(["--decode=\(type)", proto], input: file))
    }
}

/// A field of protoc's text output: a scalar (string values unescaped to their bytes, other
/// values as written) or a message.
struct TextNode: Equatable {
    var name: String
    var value: [UInt8]? = nil
    var children: [TextNode] = []

    func child(_ name: String) -> TextNode? { children.first { $0.name == name } }
    func string(_ name: String) -> [UInt8]? { child(name)?.value }
    func text(_ name: String) -> String? { child(name)?.value.map { String(decoding: $0, as: UTF8.self) } }
}

/// Parses the text format protoc prints (one field per line, `name {` … `}` for messages).
func parseTextFormat(_ data: Data) -> [TextNode] {
    var stack: [TextNode] = [TextNode(name: "")]
    for raw in String(decoding: data, as: UTF8.self).split(separator: "\n") {
        let line = raw.trimmingCharacters(in: .whitespaces)
        if line == "}" {
            let done = stack.removeLast()
            stack[stack.count - 1].children.append(done)
        } else if line.hasSuffix(" {") {
            stack.append(TextNode(name: String(line.dropLast(2))))
        } else if let colon = line.firstIndex(of: ":") {
            let name = String(line[..<colon])
            let rest = line[line.index(colon, offsetBy: 2)...]
            let value = rest.hasPrefix("\"") ? unescapeC(Array(rest.utf8.dropFirst().dropLast())) : Array(rest.utf8)
            stack[stack.count - 1].children.append(TextNode(name: name, value: value))
        }
    }
    return stack[0].children
}

/// Undoes protoc's C escapes: `\n \r \t \" \' \\`, octal `\NNN` and hex `\xHH`.
func unescapeC(_ s: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    var i = 0
    func isOctal(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x37 }
    while i < s.count {
        let b = s[i]
        guard b == 0x5C, i + 1 < s.count else { out.append(b); i += 1; continue }
        let e = s[i + 1]
        i += 2
        switch e {
        case UInt8(ascii: "n"): out.append(0x0A)
        case UInt8(ascii: "r"): out.append(0x0D)
        case UInt8(ascii: "t"): out.append(0x09)
        case UInt8(ascii: "x"):
            var v = 0, n = 0
            while n < 2, i < s.count, let d = Int(String(UnicodeScalar(s[i])), radix: 16) { v = v * 16 + d; i += 1; n += 1 }
            out.append(UInt8(v))
        case _ where isOctal(e):
            var v = Int(e - 0x30), n = 1
            while n < 3, i < s.count, isOctal(s[i]) { v = v * 8 + Int(s[i] - 0x30); i += 1; n += 1 }
            out.append(UInt8(v))
        default: out.append(e)
        }
    }
    return out
}

/// A row of the identity dataset, as decoded or as expected.
struct IdentityRow: Equatable, CustomStringConvertible {
    var keyword: String
    var name: [UInt8]
    var icon: [UInt8]?
    var expiry: String?
    var category: String?
    var description: String {
        "\(keyword) name=\(String(decoding: name, as: UTF8.self).prefix(40)) (\(name.count) B) icon=\(icon?.count ?? -1) expiry=\(expiry ?? "-") category=\(category ?? "-")"
    }
}

@Suite struct LiveCallerIDExportTests {
    static let pirDatabase = "apple.swift_homomorphic_encryption.pir.v1.KeywordDatabase"

    /// Decoded block dataset: keyword → value byte, in file order.
    static func blockRows(_ dir: String) throws -> [(String, [UInt8])] {
        try Protoc.decode(pirDatabase, "pir_database.proto", dir + "/block.binpb").map { row in
            #expect(row.name == "rows")
            return (row.text("keyword") ?? "", row.string("value") ?? [])
        }
    }

    /// Decoded identity dataset, in file order.
    static func identityRows(_ dir: String) throws -> [IdentityRow] {
        try Protoc.decode("callerid.test.IdentityDatabase", "decode_views.proto", dir + "/identity.binpb").map { row in
            let v = row.child("value")
            let icon = v?.child("icon")
            if let icon { #expect(icon.text("format") == "IMAGE_FORMAT_HEIC") }
            return IdentityRow(keyword: row.text("keyword") ?? "", name: v?.string("name") ?? [], icon: icon.map { $0.string("image") ?? [] },
                               expiry: v?.text("cache_expiry_minutes"), category: v?.text("category"))
        }
    }

    /// What the export must hold: the entries of `databases`, first database wins, ascending.
    static func expected(_ databases: [Database]) throws -> [Entry] {
        var merged: [UInt64: Entry] = [:]
        for db in databases.reversed() {
            for e in db.entries() { merged[e.number] = e }
        }
        return merged.keys.sorted().map { merged[$0]! }
    }

    static func expectedIdentities(_ entries: [Entry], expiry: UInt32 = 1440, categories: [String: String] = [:],
                                   icons: [UInt64: [UInt8]] = [:]) -> [IdentityRow] {
        entries.compactMap { e in
            // A row whenever the CallIdentity has a field set, as Apple's ConstructDatabase writes them.
            let icon = icons[e.number]
            let category = categories[e.category.name]
            guard !e.label.isEmpty || icon != nil || expiry > 0 || category != nil else { return nil }
            return IdentityRow(keyword: "+\(e.number)", name: Array(e.label.utf8), icon: icon,
                               expiry: expiry == 0 ? nil : "\(expiry)", category: category)
        }
    }

    static func expectSame<T: Equatable>(_ got: [T], _ want: [T], _ what: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(got.count == want.count, "\(what): \(got.count) rows, expected \(want.count)", sourceLocation: sourceLocation)
        if let i = got.indices.first(where: { $0 < want.count && got[$0] != want[$0] }) {
            Issue.record("\(what): row \(i) is \(got[i]), expected \(want[i])", sourceLocation: sourceLocation)
        }
    }

    // MARK: Round trips through protoc

    @Test func randomDataRoundTripsThroughProtoc() throws {
        let dir = TempDir()
        var (records, _) = randomRecords(count: 3000, seed: 17)
        let odd = ["He said \"hi\" \\ twice", "Tab-free ‘quotes’ and \\n literally", "Emoji 📞☎️", "'single'", "  spaced  "]
        for (i, label) in odd.enumerated() {
            records.append(Entry(number: 33_100_000_000 + UInt64(i), label: label, category: i % 2 == 0 ? .identify : testCategories[2]))
        }
        let path = dir.path("a.cid")
        _ = try buildDatabase(records, at: path)
        var options = LiveCallerIDExportOptions()
        options.identityCategories = ["taxi": .business, "identify": .person]
        let out = dir.path("out")
        let report = try LiveCallerIDExport.write(databases: [path], to: out, options: options)

        let db = try Database(path: path)
        let entries = try Self.expected([db])
        #expect(entries.count > 2000 && entries.contains { $0.label.isEmpty } && entries.contains { $0.category.action == .block })
        let blocks = try Self.blockRows(out)
        Self.expectSame(blocks.map { "\($0.0)=\($0.1)" }, entries.map { "+\($0.number)=\([$0.category.action == .block ? 1 : 0] as [UInt8])" }, "block")
        let identities = try Self.identityRows(out)
        let want = Self.expectedIdentities(entries, categories: ["taxi": "IDENTITY_CATEGORY_BUSINESS", "identify": "IDENTITY_CATEGORY_PERSON"])
        Self.expectSame(identities, want, "identity")
        #expect(report.numbers == entries.count && report.identities == want.count)
        #expect(report.blocked == entries.filter { $0.category.action == .block }.count && report.blocked > 0)
        #expect(report.files.map(\.bytes) == [try fileData(out + "/block.binpb").count, try fileData(out + "/identity.binpb").count])
        #expect(report.configurations == [out + "/block-config.json", out + "/identity-config.json"])
        // Nothing but the two datasets and their configurations in the folder (no temporary file left).
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).sorted() == ["block-config.json", "block.binpb", "identity-config.json", "identity.binpb"])
    }

    @Test func edgeCasesRoundTrip() throws {
        let dir = TempDir()
        let longest = String(repeating: "Ж", count: 32_767) + "x"          // 65,535 bytes, the label limit
        #expect(longest.utf8.count == 65_535)
        let spam = testCategories[2]
        let records = [
            Entry(number: 1, label: "smallest", category: .identify),
            Entry(number: 9, label: "", category: .identify),                      // empty label, no icon: no identity
            Entry(number: 10, label: "", category: spam),                          // empty label, blocked: block row only
            Entry(number: 11, label: "", category: .identify),                     // empty label with an icon
            Entry(number: 12, label: "with icon", category: .block),
            Entry(number: 13, label: longest, category: .identify),
            Entry(number: 99_999_999_999_999, label: "14 digits", category: .identify),
            Entry(number: 100_000_000_000_000, label: "15 digits", category: .identify),
            Entry(number: PhoneNumber.maximum, label: "largest", category: spam),
        ]
        let path = dir.path("edge.cid")
        _ = try buildDatabase(records, at: path)
        let icons = dir.path("icons")
        try FileManager.default.createDirectory(atPath: icons, withIntermediateDirectories: true)
        var rng = SeededGenerator(seed: 5)
        let small = (0..<700).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let biggest = (0..<LiveCallerIDExport.maxIconBytes).map { _ in UInt8.random(in: 0...255, using: &rng) }
        _ = FileManager.default.createFile(atPath: icons + "/+11.heic", contents: Data(small))
        _ = FileManager.default.createFile(atPath: icons + "/+12.heic", contents: Data(biggest))
        _ = FileManager.default.createFile(atPath: icons + "/+77.heic", contents: Data(small))       // no such number
        _ = FileManager.default.createFile(atPath: icons + "/12.heic", contents: Data(small))        // no '+': ignored
        _ = FileManager.default.createFile(atPath: icons + "/readme.txt", contents: Data("x".utf8))  // not .heic: not counted

        var options = LiveCallerIDExportOptions()
        options.iconDirectory = icons
        options.cacheExpiryMinutes = 0                                                         // left out of every identity
        options.identityCategories = ["spam": .business]
        let out = dir.path("out")
        let report = try LiveCallerIDExport.write(databases: [path], to: out, options: options)

        let entries = try Self.expected([try Database(path: path)])
        #expect(entries.map(\.number) == records.map(\.number))
        let blocks = try Self.blockRows(out)
        Self.expectSame(blocks.map { "\($0.0)=\($0.1)" }, entries.map { "+\($0.number)=\([$0.category.action == .block ? 1 : 0] as [UInt8])" }, "block")
        #expect(blocks.last?.0 == "+999999999999999" && blocks.first?.0 == "+1")
        let identities = try Self.identityRows(out)
        let want = Self.expectedIdentities(entries, expiry: 0, categories: ["spam": "IDENTITY_CATEGORY_BUSINESS"],
                                           icons: [11: small, 12: biggest])
        Self.expectSame(identities, want, "identity")
        #expect(!identities.contains { $0.keyword == "+9" }, "no field set: no row")
        #expect(identities.first { $0.keyword == "+10" } == IdentityRow(keyword: "+10", name: [], icon: nil, expiry: nil,
                                                                         category: "IDENTITY_CATEGORY_BUSINESS"))
        #expect(identities.first { $0.keyword == "+13" }?.name.count == 65_535)
        #expect(report.icons == 2 && report.unusedIcons == 1 && report.ignoredIconFiles == 1 && report.firstIgnoredIconFile == "12.heic")
        // The longest label and the largest icon make CallIdentity values over 65,535 bytes: reported.
        #expect(report.oversizedIdentities == 2 && report.firstOversizedNumber == 12)
    }

    @Test func textFormatParsesWithProtoc() throws {
        let dir = TempDir()
        let records = [
            Entry(number: 14_085_551_212, label: "Acme \"Best\" Shop \\ Co", category: try Category("shop", action: .identify)),
            Entry(number: 14_085_551_213, label: "Спам ☎", category: testCategories[2]),
            Entry(number: 14_085_551_214, label: "", category: .block),
            Entry(number: 14_085_551_215, label: "", category: .identify),
            Entry(number: PhoneNumber.maximum, label: "Ünïcödé '…'", category: .identify),
        ]
        let path = dir.path("t.cid")
        _ = try buildDatabase(records, at: path)
        var options = LiveCallerIDExportOptions()
        options.output = .text
        options.cacheExpiryMinutes = 30
        options.identityCategories = ["shop": .business, "identify": .person]
        let out = dir.path("out")
        let report = try LiveCallerIDExport.write(databases: [path], to: out, options: options)
        #expect(try FileManager.default.contentsOfDirectory(atPath: out) == ["input.txtpb"])
        // ConstructDatabase writes an identity row for each: every one has a cache expiry.
        #expect(report.numbers == 5 && report.blocked == 2 && report.identities == 5)

        // protoc parses the text file (--encode), and its binary decodes to the same identities.
        let binary = dir.path("input.binpb")
        try Protoc.run(["--encode=InputIdentities", "input_identities.proto"], input: out + "/input.txtpb").write(to: URL(fileURLWithPath: binary))
        let decoded = try Protoc.decode("InputIdentities", "input_identities.proto", binary)
        let got = decoded.map { node -> String in
            let v = node.child("value")
            return "\(node.text("key") ?? "?") name=\(v?.text("name") ?? "") expiry=\(v?.text("cache_expiry_minutes") ?? "-") block=\(v?.text("block") ?? "false") category=\(v?.text("category") ?? "-")"
        }
        let want = records.map { e -> String in
            let category = ["shop": "IDENTITY_CATEGORY_BUSINESS", "identify": "IDENTITY_CATEGORY_PERSON"][e.category.name] ?? "-"
            return "+\(e.number) name=\(e.label) expiry=30 block=\(e.category.action == .block) category=\(category)"
        }
        Self.expectSame(got, want, "input.txtpb")
    }

    /// Every byte a label could hold (control bytes included, which only a damaged database
    /// has) survives the text-format escaping: protoc --encode reads back the same bytes.
    @Test func textEscapingOfEveryByte() throws {
        let dir = TempDir()
        var name: [UInt8] = Array(0..<0x80)                                  // every ASCII byte, NUL and DEL included
        name += Array("é ☎ 📞 \"q\" \\".utf8)
        var text: [UInt8] = Array("name: ".utf8)
        name.withUnsafeBytes { appendTextFormatString($0, to: &text) }
        text += Array("\n".utf8)
        let input = dir.path("identity.txtpb"), binary = dir.path("identity.binpb")
        _ = FileManager.default.createFile(atPath: input, contents: Data(text))
        #expect(!text.contains { $0 < 0x20 && $0 != 0x0A }, "control bytes are escaped")
        try Protoc.run(["--encode=CallIdentity", "call_identity.proto"], input: input).write(to: URL(fileURLWithPath: binary))
        let decoded = try Protoc.decode("CallIdentity", "call_identity.proto", binary)
        #expect(decoded.first { $0.name == "name" }?.value == name)
    }

    /// Before: a number without a label got no identity row, so a device was told "absent"
    /// where Apple's `ConstructDatabase` gives it a row with the cache expiry and category
    /// (its rule: a row whenever `identity != CallIdentity()`; 604 of 20,000 rows of a test).
    @Test func numbersWithoutALabelGetTheirCacheExpiryAndCategory() throws {
        let dir = TempDir()
        let spam = testCategories[2]
        let records = [
            Entry(number: 14_085_551_201, label: "Acme", category: .identify),
            Entry(number: 14_085_551_202, label: "", category: .identify),
            Entry(number: 14_085_551_203, label: "", category: spam),
        ]
        let path = dir.path("e.cid")
        _ = try buildDatabase(records, at: path)
        let entries = try Self.expected([try Database(path: path)])
        for (expiry, categories) in [(UInt32(1440), [String: LiveCallerIDCategory]()), (0, ["spam": .business]), (0, [:]), (30, ["identify": .person])] {
            var options = LiveCallerIDExportOptions()
            options.cacheExpiryMinutes = expiry
            options.identityCategories = categories
            let out = dir.path("out-\(expiry)-\(categories.count)")
            let report = try LiveCallerIDExport.write(databases: [path], to: out, options: options)
            let names = Dictionary(uniqueKeysWithValues: categories.map { ($0.key, $0.value == .business ? "IDENTITY_CATEGORY_BUSINESS" : "IDENTITY_CATEGORY_PERSON") })
            let want = Self.expectedIdentities(entries, expiry: expiry, categories: names)
            Self.expectSame(try Self.identityRows(out), want, "identity, expiry \(expiry), \(categories)")
            #expect(report.identities == want.count)
            // The text file for ConstructDatabase counts the rows that tool will write from it.
            options.output = .text
            #expect(try LiveCallerIDExport.write(databases: [path], to: out + "-text", options: options).identities == want.count)
        }
        // Through the tool, with the default expiry: every number has its row; the empty ones
        // carry the expiry only.
        let out = dir.path("default")
        let r = try lookup(["export", "--live-caller-id", out, "--db", path])
        #expect(r.status == 0 && r.stdout.contains("3 numbers, 1 blocked, 3 identities"), "\(r.stdout)")
        #expect(try Self.identityRows(out).map(\.keyword) == ["+14085551201", "+14085551202", "+14085551203"])
        #expect(try Self.identityRows(out).dropFirst().first == IdentityRow(keyword: "+14085551202", name: [], icon: nil, expiry: "1440", category: nil))
    }

    // MARK: Identity sizes and PIRProcessDatabase

    /// Before: nothing told the user how large the identity rows were, and the configuration
    /// docs/LIVE-CALLER-ID.md gave let `PIRProcessDatabase` pick a 1,024-byte bucket in a
    /// growing table, which drops the 1,000-byte labels' rows without an error. Now the report
    /// gives the sizes, and identity-config.json sets a fixed-size table of buckets four times
    /// the largest row (whole plaintexts) at 3/4 load: every row placed, or an error.
    @Test func reportGivesTheIdentitySizesAndTheBucketSizeToSet() throws {
        let dir = TempDir()
        var records = (0..<200).map { Entry(number: 14_085_550_000 + UInt64($0), label: "Shop \($0)", category: .identify) }
        records[7].label = String(repeating: "L", count: 1000)
        records[90].label = String(repeating: "M", count: 1000)
        let path = dir.path("s.cid")
        _ = try buildDatabase(records, at: path)
        let out = dir.path("out")
        let report = try LiveCallerIDExport.write(databases: [path], to: out)
        let sizes = report.identitySizes
        // name: 1 + 2 + 1000 bytes; cache_expiry_minutes 1440: 1 + 2.
        #expect(sizes.rows == 200 && sizes.largest == 1006 && sizes.largestNumber == 14_085_550_007)
        #expect(sizes.classes[0] == 198 && sizes.classes[6] == 2)   // <= 16 bytes; <= 1024
        #expect(sizes.defaultBucketSize == 1024 && sizes.recommendedBucketSize == 4096)

        let r = try lookup(["export", "--live-caller-id", dir.path("cli"), "--db", path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("identity values: <= 16 B: 198, <= 1024 B: 2; largest 1006 B (+14085550007)"), "\(r.stdout)")
        #expect(r.stdout.contains("\"maxSerializedBucketSize\": 4096, a fixed 4 buckets per shard (1 shard)")
                && r.stdout.contains("its defaults (1024-byte buckets, a growing table) can drop rows silently"), "\(r.stdout)")
        let json = try lookup(["export", "--live-caller-id", dir.path("cli"), "--db", path, "--json"])
        let object = try #require(try jsonObjects(json.stdout).first?["identity_sizes"] as? [String: Any])
        #expect(object["largest"] as? Int == 1006 && object["recommended_bucket_size"] as? Int == 4096 && object["default_bucket_size"] as? Int == 1024)
        #expect(object["bucket_count"] as? Int == sizes.recommendedBucketCount && object["shards"] as? Int == 1)

        // The configuration written beside the datasets: a fixed-size table of that bucket size,
        // large enough for the largest shard at 3/4 load.
        let config = try #require(try JSONSerialization.jsonObject(with: fileData(out + "/identity-config.json")) as? [String: Any])
        #expect(config["inputDatabase"] as? String == "identity.binpb" && config["rlweParameters"] as? String == "n_4096_logq_27_28_28_logt_5")
        #expect((config["sharding"] as? [String: Any])?["entryCountPerShard"] as? Int == 5000)
        let cuckoo = try #require(config["cuckooTableArguments"] as? [String: Any])
        #expect(cuckoo["maxSerializedBucketSize"] as? Int == 4096)
        let fixed = ((cuckoo["bucketCount"] as? [String: Any])?["fixedSize"] as? [String: Any])?["bucketCount"] as? Int
        // 1 + 198 rows of 10 + 11…13 bytes + 2 rows of 10 + 1006: 7,150 bytes; / (0.75 × 4096) = 2.3.
        var shardBytes = 1 + 2 * (10 + 1006)
        for k in 0..<200 where k != 7 && k != 90 { shardBytes += 10 + 5 + "Shop \(k)".utf8.count }
        #expect(sizes.shards == 1 && sizes.largestShardBytes == shardBytes)
        #expect(fixed == sizes.recommendedBucketCount && fixed == 4)
        let block = try #require(try JSONSerialization.jsonObject(with: fileData(out + "/block-config.json")) as? [String: Any])
        #expect(block["inputDatabase"] as? String == "block.binpb" && block["cuckooTableArguments"] == nil)
    }

    /// The shard sizes are measured by reading the written dataset back in chunks (256 KiB):
    /// rows of 60,000 bytes that cross chunk boundaries are counted whole.
    @Test func shardSizesAreMeasuredAcrossReadChunks() throws {
        let dir = TempDir()
        let records = (0..<60).map { k in
            Entry(number: 14_085_550_000 + UInt64(k), label: k % 3 == 0 ? String(repeating: "W", count: 60_000) : "Shop \(k)", category: .identify)
        }
        let path = dir.path("w.cid")
        _ = try buildDatabase(records, at: path)
        let report = try LiveCallerIDExport.write(databases: [path], to: dir.path("out"))
        #expect(try fileData(dir.path("out/identity.binpb")).count > 1 << 20)
        // Each value: name (1 + varint length + bytes) and cache_expiry_minutes 1440 (3 bytes).
        let expected = records.reduce(1) { sum, e in
            let n = e.label.utf8.count
            return sum + 10 + 1 + (n < 128 ? 1 : n < 16_384 ? 2 : 3) + n + 3
        }
        #expect(report.identitySizes.shards == 1 && report.identitySizes.largestShardBytes == expected)
    }

    /// tools/pir_cuckoo_sim.py replays Apple's cuckoo insertion (release/1.1): with the bucket
    /// size and growing table PIRProcessDatabase picks by default it loses the 1,000-byte rows
    /// without an error (what a device saw as "absent"); with the configuration the export
    /// writes (identity-config.json) it places every row.
    @Test func theWrittenConfigurationPlacesEveryRowWhereTheDefaultLosesSome() throws {
        let dir = TempDir()
        var records = (0..<3000).map { Entry(number: 14_085_550_000 + UInt64($0 * 3), label: "Shop number \($0 * 7919 % 1000)", category: .identify) }
        for k in [7, 900, 1800, 2500] { records[k].label = String(repeating: "L", count: 1000) }
        let path = dir.path("s.cid")
        _ = try buildDatabase(records, at: path)
        let out = dir.path("out")
        #expect(try lookup(["export", "--live-caller-id", out, "--db", path]).status == 0)
        let config = try #require(try JSONSerialization.jsonObject(with: fileData(out + "/identity-config.json")) as? [String: Any])
        let cuckoo = try #require(config["cuckooTableArguments"] as? [String: Any])
        let bucketSize = try #require(cuckoo["maxSerializedBucketSize"] as? Int)
        let bucketCount = try #require(((cuckoo["bucketCount"] as? [String: Any])?["fixedSize"] as? [String: Any])?["bucketCount"] as? Int)
        let script = BuiltProducts.packageRoot.appendingPathComponent("tools/pir_cuckoo_sim.py").path
        func simulate(_ extra: [String]) throws -> (status: Int32, output: String) {
            let process = Python.process(script, [out + "/identity.binpb", "--runs", "4", "--seed", "2"] + extra)
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: data, as: UTF8.self))
        }
        let byDefault = try simulate([])
        #expect(byDefault.status == 1 && byDefault.output.contains("(1006-byte value)"), "\(byDefault.output)")
        let configured = try simulate(["--max-bucket", "\(bucketSize)", "--bucket-count", "\(bucketCount)"])
        #expect(configured.status == 0 && configured.output.contains("run 4: 0 of 3000 rows lost"), "\(configured.output)")
    }

    // MARK: Several databases

    /// A number present in two databases comes out once, as the phone treats it and `lookup
    /// NUMBER --db` answers it (each list merged on its own: a number one database identifies
    /// and another blocks is blocked, with the identifying label), through the CLI with
    /// repeated --db, with a build directory, and with a store whose settings unblock it.
    @Test func eachNumberIsExportedAsThePhoneAndLookupTreatIt() throws {
        let dir = TempDir()
        let a = dir.path("a.cid"), b = dir.path("b.cid")
        _ = try buildDatabase([Entry(number: 79_131_234_567, label: "from A"), Entry(number: 79_131_234_568, label: "only A")], at: a)
        _ = try buildDatabase([Entry(number: 79_131_234_567, label: "from B", category: .block), Entry(number: 79_131_234_569, label: "only B")], at: b)

        // Either order: A's identification and B's block of 79131234567 are in different lists.
        for (out, args) in [(dir.path("ab"), ["--db", a, "--db", b]), (dir.path("ba"), ["--db", b, a, "--json"])] {
            let r = try lookup(["export", "--live-caller-id", out] + args)
            #expect(r.status == 0, "\(r.stderr)")
            #expect(r.stdout.contains("3 numbers, 1 blocked, 3 identities") || r.stdout.contains("\"numbers\":3,\"blocked\":1,\"identities\":3"), "\(r.stdout)")
            #expect(try Self.blockRows(out).map { "\($0.0)=\($0.1)" } == ["+79131234567=[1]", "+79131234568=[0]", "+79131234569=[0]"])
            #expect(try Self.identityRows(out).map { String(decoding: $0.name, as: UTF8.self) } == ["from A", "only A", "only B"])
            let dbs = args.filter { $0 != "--json" && $0 != "--db" }.flatMap { ["--db", $0] }
            #expect(try lookup(["79131234567"] + dbs).stdout == "79131234567\tfrom A\tblock\n")
        }

        // A build directory: the higher priority's block, the lower one's label, as lookup answers.
        let build = dir.path("build")
        try writeBuildDirectory(build, [DirectoryTestFile(name: "x.cid", region: "x", entries: [Entry(number: 79_131_234_567, label: "low")]),
                                        DirectoryTestFile(name: "y.cid", region: "y", entries: [Entry(number: 79_131_234_567, label: "high", category: .block)],
                                                          priority: 5)])
        let fromBuild = dir.path("fromBuild")
        let r3 = try lookup(["export", "--live-caller-id", fromBuild, "--db", build])
        #expect(r3.status == 0, "\(r3.stderr)")
        #expect(try lookup(["79131234567", "--db", build]).stdout == "79131234567\tlow\tblock\n")
        #expect(try Self.identityRows(fromBuild).map { String(decoding: $0.name, as: UTF8.self) } == ["low"])
        #expect(try Self.blockRows(fromBuild).map { $0.1 } == [[1]])

        // A store whose allow list unblocks the number: identified, not blocked, as on the phone;
        // with other --db beside it the store's settings could not apply as they do: refused.
        let store = dir.path("store")
        #expect(try lookup(["install", "--store", store, build]).status == 0)
        try "79131234567\n".write(toFile: dir.path("allow.txt"), atomically: true, encoding: .utf8)
        #expect(try lookup(["install", "--store", store, "--allow", dir.path("allow.txt")]).status == 0)
        let fromStore = dir.path("fromStore")
        let r4 = try lookup(["export", "--live-caller-id", fromStore, "--db", store])
        #expect(r4.status == 0, "\(r4.stderr)")
        #expect(try Self.blockRows(fromStore).map { $0.1 } == [[0]])
        #expect(try lookup(["79131234567", "--db", store]).stdout == "79131234567\tlow\tidentify\n")
        let mixed = try lookup(["export", "--live-caller-id", dir.path("mixed"), "--db", store, "--db", a])
        #expect(mixed.status == 64 && mixed.stderr.contains("export it alone"), "\(mixed.stderr)")
    }

    // MARK: Failures

    /// A database that fails in the middle of the export (a sealed block whose keys are out of
    /// order) leaves the previous datasets in place and no temporary file.
    @Test func failedExportReplacesNothing() throws {
        let dir = TempDir()
        var e = ImageEditor(HostileSample.image)
        e.makeKeysEqual(block: 2)
        e.seal()
        let path = dir.path("damaged.cid")
        _ = FileManager.default.createFile(atPath: path, contents: Data(e.bytes))
        let out = dir.path("out")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: out + "/block.binpb", contents: Data("previous block".utf8))
        _ = FileManager.default.createFile(atPath: out + "/identity.binpb", contents: Data("previous identity".utf8))

        #expect { try LiveCallerIDExport.write(databases: [path], to: out) } throws: { error in
            let e = error as? DirectoryError
            return e?.code == .corrupt && e?.message.contains("out of order") == true
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).sorted() == ["block.binpb", "identity.binpb"])
        #expect(try fileData(out + "/block.binpb") == Data("previous block".utf8))
        #expect(try fileData(out + "/identity.binpb") == Data("previous identity".utf8))

        let r = try lookup(["export", "--live-caller-id", out, "--db", path])
        #expect(r.status == 65 && r.stderr.contains("out of order"))
    }

    /// Before: a damaged file whose hot label held NUL and ESC (valid UTF-8, refused by
    /// `verify`) exported with exit 0, and the bytes reached `CallIdentity.name` and the text
    /// format. Now every label is checked as `verify` checks it: exit 65, nothing written. The
    /// same for a hidden character (a file built before labels were held to that rule).
    @Test(arguments: [false, true])
    func exportRefusesALabelThatVerifyRefuses(text: Bool) throws {
        let dir = TempDir()
        for bad in ["A\u{0}B\u{1B}[2J", "Pay\u{202E}dsu\u{202C} Bank"] {
            let path = dir.path("bad.cid")
            try Data(try HostileFileTests.imageWithLabels([Array("Fine".utf8), Array(bad.utf8)], hot: true)).write(to: URL(fileURLWithPath: path))
            #expect(try lookup(["verify", path]).status == 65)
            let out = dir.path("out")
            let r = try lookup(["export", "--live-caller-id", out, "--db", path] + (text ? ["--text"] : []))
            #expect(r.status == 65, "\(r.stdout) \(r.stderr)")
            #expect(r.stderr.contains("number 2: label has") && r.stderr.contains(bad.contains("\u{0}") ? "control character U+0000" : "hidden character U+202E"),
                    "\(r.stderr)")
            #expect(r.stderr.contains("lookup verify"))
            #expect((try? FileManager.default.contentsOfDirectory(atPath: out))?.isEmpty ?? true, "nothing written")
        }
    }

    @Test func badOptionsAndIconsAreRefusedBeforeWriting() throws {
        let dir = TempDir()
        let path = dir.path("a.cid")
        _ = try buildDatabase([Entry(number: 14_085_551_212, label: "A")], at: path)
        let icons = dir.path("icons")
        try FileManager.default.createDirectory(atPath: icons, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: icons + "/+14085551212.heic", contents: Data(count: LiveCallerIDExport.maxIconBytes + 1))
        let out = dir.path("out")

        let big = try lookup(["export", "--live-caller-id", out, "--db", path, "--icons", icons])
        #expect(big.status == 65 && big.stderr.contains("under 64 KB"), "\(big.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
        _ = FileManager.default.createFile(atPath: icons + "/+14085551212.heic", contents: Data())
        #expect(try lookup(["export", "--live-caller-id", out, "--db", path, "--icons", icons]).stderr.contains("empty icon"))

        for bad in [["--identity-category", "shop=robot"], ["--identity-category", "shop"], ["--cache-expiry-minutes", "-1"],
                    ["--cache-expiry-minutes", "4294967296"], ["--text", "--icons", icons]] {
            let r = try lookup(["export", "--live-caller-id", out, "--db", path] + bad)
            #expect(r.status == 64, "\(bad): \(r.stderr)")
        }
        #expect(try lookup(["export", "--db", path]).status == 64)
        #expect(try lookup(["export", "--live-caller-id", out, "--db", dir.path("missing.cid")]).status == 66)
        #expect(!FileManager.default.fileExists(atPath: out))

        let help = try lookup(["export", "--help"])
        #expect(help.status == 0 && help.stdout.contains("--live-caller-id") && help.stdout.contains("--identity-category"))
        #expect(try lookup(["--help"]).stdout.contains("lookup export"))
        // An unknown category in --identity-category is a warning, not an error.
        let r = try lookup(["export", "--live-caller-id", out, "--db", path, "--identity-category", "nosuch=person"])
        #expect(r.status == 0 && r.stderr.contains("nosuch"))
    }
}
