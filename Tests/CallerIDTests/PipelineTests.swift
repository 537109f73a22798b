import Testing
import Foundation
@testable import CallerID
@testable import CallerIDPipeline

// MARK: - Helpers

/// ../shared/data beside the package (CI lays it there too).
let sharedData: URL = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("shared/data")

/// True when ../shared/data is there (CI, developers); a user's fresh clone has no ../shared,
/// and the real-data suite is then skipped, visibly, by Swift Testing.
let sharedDataAvailable = FileManager.default.fileExists(atPath: sharedData.path)

func write(_ bytes: [UInt8], _ path: String) throws { try Data(bytes).write(to: URL(fileURLWithPath: path)) }
func write(_ text: String, _ path: String) throws { try write(Array(text.utf8), path) }

/// Runs a pipeline over `files`; returns it and what it rejected.
func runPipeline(_ files: [String], _ options: PipelineOptions, to output: String? = nil) throws
    -> (pipeline: Pipeline, rejected: [RejectedRow], warnings: [RowWarning], summary: PipelineSummary?)
{
    let p = try Pipeline(options: options)
    var rejected: [RejectedRow] = []
    var warnings: [RowWarning] = []
    p.onRejected = { rejected.append($0) }
    p.onWarning = { warnings.append($0) }
    for f in files { try p.add(file: f) }
    let summary = try output.map { try p.write(to: $0) }
    return (p, rejected, warnings, summary)
}

/// Random records (runs, duplicates, all test categories) moved into valid Russian numbers,
/// labels as the pipeline cleans them; the expected map keeps the last record per number.
func russianRecords(count: Int, seed: UInt64) -> (records: [Entry], expected: [UInt64: Entry]) {
    let (raw, _) = randomRecords(count: count, seed: seed)
    var records: [Entry] = []
    var expected: [UInt64: Entry] = [:]
    for r in raw {
        let e = Entry(number: 79_000_000_000 + r.number % 999_999_999, label: (try? LabelCleaner().clean(r.label))!.label, category: r.category)
        records.append(e)
        expected[e.number] = e
    }
    return (records, expected)
}

func lenient() -> PipelineOptions {
    var o = PipelineOptions()
    o.maxBadRows = .unlimited
    return o
}

func entries(_ path: String) throws -> [Entry] { Array(try Database(path: path, verify: true).entries()) }

func manifest(_ dir: String) throws -> [String: Any] {
    let data = try Data(contentsOf: URL(fileURLWithPath: dir + "/manifest.json"))
    return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
}

// MARK: - Formats and encodings

@Suite struct PipelineInputTests {
    @Test func csvQuotingDelimitersAndLineBreaks() throws {
        let dir = TempDir()
        let csv = dir.path("in.csv")
        try write("number,label,category\r\n"
                  + "+7 913 123-45-67,\"Pizza, Hut\",identify\r\n"
                  + "79131234568,\"Say \"\"hi\"\"\",spam\r\n"
                  + "79131234569,\"two\r\nlines\",\r\n"
                  + "\r\n"
                  + "79131234570,plain,block", csv)
        let r = try runPipeline([csv], PipelineOptions(), to: dir.path("out.cid"))
        #expect(r.rejected.isEmpty, "\(r.rejected)")
        #expect(try entries(dir.path("out.cid")) == [
            Entry(number: 79131234567, label: "Pizza, Hut"),
            Entry(number: 79131234568, label: "Say \"hi\"", category: try Category("spam", action: .block)),
            Entry(number: 79131234569, label: "two lines"),
            Entry(number: 79131234570, label: "plain", category: .block),
        ])
        // Semicolons, no header, positions; syntax errors reject their record only.
        let semi = dir.path("semi.csv")
        try write("79131234567;\"A;B\"\n79131234568;\"bad\"junk\n79131234569;x\"y\n79131234571;ok\n79131234572;\"never closed\n", semi)
        var o = lenient()
        o.format = .csv(delimiter: UInt8(ascii: ";"))
        let s = try runPipeline([semi], o)
        #expect(s.pipeline.numbers == [79131234567, 79131234571])
        #expect(s.rejected.map(\.line) == [2, 3, 5])
        #expect(s.rejected.allSatisfy { $0.reason == .syntax })
        #expect(s.rejected.map(\.message).contains { $0.contains("unterminated") })
    }

    @Test func tsvKeepsTheCoreLayout() throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv")
        try write("# comment\n79131234567\tPizza Hut\n\n79131234568\tCollector\tcollector\n79131234569\n", tsv)
        let r = try runPipeline([tsv], PipelineOptions(), to: dir.path("o.cid"))
        #expect(r.rejected.isEmpty)
        #expect(try entries(dir.path("o.cid")).map(\.label) == ["Pizza Hut", "Collector", ""])
    }

    @Test func jsonArrayOfObjects() throws {
        let dir = TempDir()
        let json = dir.path("in.json")
        // The Korean write-up's shape, JSON numbers, escapes, a nested value, null.
        try write("""
            [{"phoneNumber":"8211111111","name":"Type_1"},
             {"phoneNumber": 8222222222, "name": "\\uc2a4\\ud0c0\\ubc85\\uc2a4 \\"A\\"", "extra": {"x": [1, "}"]}},
             {"name": "no number"},
             {"phoneNumber": "+82 2-758-8163", "name": null, "category": "spam"},
             {"phoneNumber": "8223333333", "name": {"nested": true}}
            ]
            """, json)
        var o = lenient()
        o.labels.replacements = [("_", " ")]
        let r = try runPipeline([json], o, to: dir.path("o.cid"))
        // No number on line 3; a nested label on line 5 is rejected too (it used to
        // become an empty label).
        #expect(r.rejected.map(\.reason) == [.missingField, .missingField])
        #expect(r.rejected.map(\.line) == [3, 5])
        #expect(try entries(dir.path("o.cid")) == [
            Entry(number: 8211111111, label: "Type 1"),
            Entry(number: 8222222222, label: "스타벅스 \"A\""),
            Entry(number: 8227588163, label: "", category: try Category("spam", action: .block)),
        ])
        // A broken array is a file error naming the line.
        let bad = dir.path("bad.json")
        try write("[{\"number\": \"1\"},\n{\"number\" \"2\"}]", bad)
        #expect { try runPipeline([bad], lenient()) } throws: { error in
            let e = error as? PipelineError
            return e?.code == .invalidInput && e?.message.contains(":2:") == true
        }
        try write("{\"number\": \"79131234567\"}", bad)
        #expect(throws: PipelineError.self) { try runPipeline([bad], lenient()) }
    }

    @Test func jsonLinesRejectsBadLinesOnly() throws {
        let dir = TempDir()
        let path = dir.path("in.jsonl")
        try write("{\"number\":\"79131234567\",\"label\":\"A\"}\n\n{\"number\":\"79131234568\",\"label\":}\n{\"number\":79131234569,\"label\":\"C\",\"category\":\"scam\"}\n", path)
        let r = try runPipeline([path], lenient())
        #expect(r.pipeline.numbers == [79131234567, 79131234569])
        #expect(r.rejected.map(\.line) == [3])
        #expect(r.rejected.first?.reason == .syntax)
    }

    static let legacyEncodings: [(TextEncoding, String)] = [
        (.windows1251, "Сбербанк №1"), (.koi8R, "Сбербанк"), (.windows1252, "Café “Zoë” €"), (.iso8859_1, "Café Zoë ß"),
    ]

    @Test(arguments: legacyEncodings)
    func singleByteEncodings(_ encoding: TextEncoding, _ label: String) throws {
        let pyName = ["windows-1251": String.Encoding.windowsCP1251, "koi8-r": .init(rawValue: 0x80000A02),
                      "windows-1252": .windowsCP1252, "iso-8859-1": .isoLatin1][encoding.rawValue]!
        let dir = TempDir()
        let path = dir.path("in.csv")
        let body = try #require("number;label\n79131234567;\(label)\n".data(using: pyName), "Foundation cannot encode \(encoding)")
        try body.write(to: URL(fileURLWithPath: path))
        var o = PipelineOptions()
        o.encoding = encoding
        o.format = .csv(delimiter: UInt8(ascii: ";"))
        let r = try runPipeline([path], o, to: dir.path("o.cid"))
        #expect(r.rejected.isEmpty)
        #expect(try entries(dir.path("o.cid")).first?.label == label)
    }

    @Test(arguments: [
        (TextEncoding.windows1251, [UInt8]([0x98])),   // the one byte windows-1251 leaves undefined
        (.windows1252, [0x81]),
        (.utf8, [0xC3, 0x28]),
        (.utf8, [0xFF]),
    ])
    func undefinedBytesRejectTheRow(_ encoding: TextEncoding, _ bad: [UInt8]) throws {
        let dir = TempDir()
        let path = dir.path("in.tsv")
        try write(Array("79131234567\tgood\n79131234568\tbad ".utf8) + bad + Array("\n79131234569\tgood too\n".utf8), path)
        var o = lenient()
        o.encoding = encoding
        let r = try runPipeline([path], o)
        #expect(r.pipeline.numbers == [79131234567, 79131234569])
        #expect(r.rejected.map(\.reason) == [.invalidEncoding])
        #expect(r.rejected.first?.line == 2)
        #expect(r.rejected.first?.message.contains(encoding.rawValue) == true)
    }

    @Test func utf16WithBOMAndUTF8BOM() throws {
        let dir = TempDir()
        let text = "number\tlabel\n+82 2-758-8163\t스타벅스 😀\n"
        for (name, bom, enc) in [("le", [UInt8]([0xFF, 0xFE]), String.Encoding.utf16LittleEndian),
                                 ("be", [0xFE, 0xFF], .utf16BigEndian)] {
            let path = dir.path("in-\(name).tsv")
            try write(bom + [UInt8](text.data(using: enc)!), path)
            for declared in [nil, TextEncoding.utf16] {
                var o = PipelineOptions()
                o.encoding = declared
                let r = try runPipeline([path], o, to: dir.path("o.cid"))
                #expect(r.rejected.isEmpty, "\(name): \(r.rejected)")
                #expect(try entries(dir.path("o.cid")) == [Entry(number: 8227588163, label: "스타벅스 😀")])
            }
        }
        // An unpaired surrogate is an invalid-encoding row, not a replacement character.
        let broken = dir.path("broken.tsv")
        var bytes: [UInt8] = [0xFF, 0xFE] + [UInt8]("1\ta\n79131234567\tx".data(using: .utf16LittleEndian)!)
        bytes += [0x00, 0xD8]   // lone high surrogate
        bytes += [UInt8]("\n".data(using: .utf16LittleEndian)!)
        try write(bytes, broken)
        var o = lenient()
        o.header = .absent
        let r = try runPipeline([broken], o)
        #expect(r.rejected.map(\.reason).contains(.invalidEncoding))
        // UTF-8 with a BOM.
        let bom8 = dir.path("bom8.csv")
        try write([0xEF, 0xBB, 0xBF] + Array("number,label\n79131234567,Café\n".utf8), bom8)
        #expect(try runPipeline([bom8], PipelineOptions(), to: dir.path("b.cid")).rejected.isEmpty)
        #expect(try entries(dir.path("b.cid")).first?.label == "Café")
    }

    @Test func utf16TranscoderAcrossChunkBoundaries() {
        let text = "a😀Б\u{FFFF}z"
        let units = Array(text.utf16)
        var le: [UInt8] = []
        for u in units { le.append(UInt8(u & 0xFF)); le.append(UInt8(u >> 8)) }
        for split in 0...le.count {
            var t = UTF16Transcoder(bigEndian: false)
            var out: [UInt8] = []
            le[..<split].withUnsafeBytes { t.transcode($0, into: &out) }
            le[split...].withUnsafeBytes { t.transcode($0, into: &out) }
            t.finish(into: &out)
            #expect(out == Array(text.utf8), "split at \(split)")
        }
    }

    /// A stream larger than one read chunk, with a quoted CSV field and a JSON string spanning
    /// the 1 MiB chunk boundary.
    @Test func recordsSpanningChunks() throws {
        let dir = TempDir()
        // 13,000 rows of about 90 bytes: more than a chunk, cut inside a label in each format
        // (checked below); 40,000 short rows cost three times as much.
        let n = 13_000
        var csv = "number,label\n"
        var jsonl = ""
        var json = "["
        for i in 0..<n {
            let label = "Label \(i) \(String(repeating: "x", count: 40 + i % 37)), \"q\""
            csv += "7913\(String(format: "%07d", i)),\"\(label.replacingOccurrences(of: "\"", with: "\"\""))\"\n"
            let jl = "{\"number\":\"7913\(String(format: "%07d", i))\",\"label\":\"\(label.replacingOccurrences(of: "\"", with: "\\\""))\"}"
            jsonl += jl + "\n"
            json += (i == 0 ? "" : ",\n") + jl
        }
        json += "]"
        try write(csv, dir.path("a.csv"))
        try write(jsonl, dir.path("a.jsonl"))
        try write(json, dir.path("a.json"))
        #expect(csv.utf8.count > ByteSource.chunkSize)
        // In each file the first chunk ends inside a row's label (the quoted field, the string).
        for text in [csv, jsonl, json] {
            let bytes = Array(text.utf8), cut = ByteSource.chunkSize
            let lineStart = (bytes[..<cut].lastIndex(of: 0x0A) ?? -1) + 1
            let lineEnd = bytes[cut...].firstIndex(of: 0x0A) ?? bytes.count
            let line = bytes[lineStart..<lineEnd]
            let labelStart = line.indices.first { line[$0...].starts(with: "Label ".utf8) } ?? lineEnd
            #expect(labelStart < cut && cut < lineEnd - 3, "the chunk ends at byte \(cut - lineStart) of a \(lineEnd - lineStart)-byte row")
        }
        var results: [[UInt8]] = []
        for f in ["a.csv", "a.jsonl", "a.json"] {
            let r = try runPipeline([dir.path(f)], PipelineOptions(), to: dir.path(f + ".cid"))
            #expect(r.rejected.isEmpty)
            #expect(r.pipeline.rowsRead == n)
            results.append(Array(try Data(contentsOf: URL(fileURLWithPath: dir.path(f + ".cid")))))
        }
        #expect(results[0] == results[1] && results[1] == results[2])
    }

    /// The same generated data written as TSV, CSV, JSON and JSON Lines gives byte-identical databases.
    @Test(arguments: [UInt64(1), 2, 3])
    func formatRoundTrips(seed: UInt64) throws {
        let dir = TempDir()
        var rng = SeededGenerator(seed: seed)
        let labels = ["Pizza Hut", "ООО «Ромашка»", "Say \"hi\", ok", "스타벅스", "tab\tinside", "back\\slash", "", "Ünïcödé ✓"]
        let cats = ["identify", "spam", "collector", "taxi", ""]
        var rows: [(String, String, String, Int)] = []
        for _ in 0..<3000 {
            let n = UInt64.random(in: 7_900_000_0000...7_999_999_9999, using: &rng)
            rows.append(("+" + String(n), labels.randomElement(using: &rng)!, cats.randomElement(using: &rng)!, Int.random(in: 0...1000, using: &rng)))
        }
        func csvQ(_ s: String) -> String { "\"" + s.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
        func jq(_ s: String) -> String { jsonQuote(s) }
        let tsv = rows.map { "\($0.0)\t\($0.1.replacingOccurrences(of: "\t", with: " "))\t\($0.2)\t\($0.3)" }.joined(separator: "\n")
        let csv = "number,label,category,weight\r\n" + rows.map { "\($0.0),\(csvQ($0.1)),\($0.2),\($0.3)" }.joined(separator: "\r\n")
        let objects = rows.map { "{\"number\":\(jq($0.0)),\"label\":\(jq($0.1)),\"category\":\(jq($0.2)),\"weight\":\($0.3)}" }
        try write(tsv, dir.path("d.tsv"))
        try write(csv, dir.path("d.csv"))
        try write("[\n" + objects.joined(separator: ",\n") + "\n]\n", dir.path("d.json"))
        try write(objects.joined(separator: "\n") + "\n", dir.path("d.jsonl"))
        var images: [Data] = []
        for f in ["d.tsv", "d.csv", "d.json", "d.jsonl"] {
            var o = PipelineOptions()
            if f.hasSuffix("tsv") { o.weightField = .position(4) } else { o.weightField = .name("weight") }
            o.top = 100
            o.buildTime = 0
            let r = try runPipeline([dir.path(f)], o, to: dir.path(f + ".out"))
            #expect(r.rejected.isEmpty, "\(f): \(r.rejected.prefix(3))")
            images.append(try Data(contentsOf: URL(fileURLWithPath: dir.path(f + ".out/all.cid"))))
            images.append(try Data(contentsOf: URL(fileURLWithPath: dir.path(f + ".out/top.cid"))))
        }
        #expect(images[0] == images[2] && images[0] == images[4] && images[0] == images[6])
        #expect(images[1] == images[3] && images[1] == images[5] && images[1] == images[7])
    }
}

// MARK: - Rows, ranges, categories

@Suite struct PipelineRowTests {
    @Test func fieldSelectionByNameAndPositionAndHeaderModes() throws {
        let dir = TempDir()
        let csv = dir.path("stores.csv")
        try write("Store,Phone Number,Country,Kind\nA,02-758-8163,KR,\nB,(403) 945-8107,CA,spam\nC,8 913 123 45 67,,\n", csv)
        var o = PipelineOptions()
        o.labelField = .name("store")           // loose match: case-insensitive
        o.numberField = .name("Phone Number")
        o.countryField = .name("Country")
        o.categoryField = .position(4)
        o.country = "RU"                        // for rows with no country
        let r = try runPipeline([csv], o, to: dir.path("o.cid"))
        #expect(r.rejected.isEmpty, "\(r.rejected)")
        #expect(try entries(dir.path("o.cid")).map { "\($0.number) \($0.label) \($0.category.name)" } ==
                ["8227588163 A identify", "14039458107 B spam", "79131234567 C identify"])
        // A missing column name is a file error; names without a header are refused.
        o.weightField = .name("weight")
        #expect(throws: PipelineError.self) { try runPipeline([csv], o) }
        o.weightField = nil
        o.header = .absent
        #expect(throws: PipelineError.self) { try runPipeline([csv], o) }
        // A declared header is skipped even when it has digits.
        let tsv = dir.path("h.tsv")
        try write("n1\tl2\n79131234567\tA\n", tsv)
        var h = PipelineOptions()
        h.header = .present
        h.numberField = .position(1)
        #expect(try runPipeline([tsv], h).pipeline.numbers == [79131234567])
    }

    @Test func missingFieldsAndBadValues() throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv")
        try write("79131234567\tA\tspam\t5\n79131234568\n79131234569\tB\tNot A Name!\t1\n79131234570\tC\tspam\tlots\n79131234571\tD\u{01}\tspam\t2\n", tsv)
        var o = lenient()
        o.weightField = .position(4)
        o.top = 2
        let r = try runPipeline([tsv], o)
        #expect(r.rejected.map(\.reason) == [.missingField, .badCategory, .badWeight, .badLabel])
        #expect(r.rejected.map(\.line) == [2, 3, 4, 5])
        #expect(r.pipeline.numbers == [79131234567])
    }

    @Test func rangesExpandUpToTheLimit() throws {
        let dir = TempDir()
        let csv = dir.path("plan.csv")
        try write("code;from;to;operator\n913;1234500;1234509;Op A\n913;0;99999;Op B\n913;20;10;Op C\n495;7;7;Op D\n", csv)
        var o = lenient()
        o.format = .csv(delimiter: UInt8(ascii: ";"))
        o.numberPrefixField = .name("code")
        o.numberField = .name("from")
        o.rangeEndField = .name("to")
        o.labelField = .name("operator")
        o.padNumber = 7
        o.country = "RU"
        o.maxRangeExpansion = 10
        let r = try runPipeline([csv], o, to: dir.path("o.cid"))
        #expect(r.rejected.map(\.reason) == [.rangeTooLarge, .badRange])
        #expect(r.rejected[0].message.contains("100000 numbers"))
        let e = try entries(dir.path("o.cid"))
        #expect(e.map(\.number) == [74950000007] + Array(79131234500...79131234509))
        #expect(r.pipeline.rangeRows == 2 && r.pipeline.rangeNumbers == 11)
    }

    @Test func identifiedAndBlockedWithSeparateBlockLists() throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv")
        try write("79131234567\tPizza Hut\n79131234567\tCollector\tcollector\n79131234568\tTaxi\n", tsv)
        var o = PipelineOptions()
        o.blockList = .separate
        let r = try runPipeline([tsv], o, to: dir.path("out"))
        #expect(r.summary?.isDirectory == true)
        #expect(try entries(dir.path("out/all.cid")).map(\.number) == [79131234567, 79131234568])
        #expect(try entries(dir.path("out/all-block.cid")) == [Entry(number: 79131234567, label: "Collector", category: try Category("collector", action: .block))])
        // Combined (default): the last row wins.
        let c = try runPipeline([tsv], PipelineOptions(), to: dir.path("one.cid"))
        #expect(c.summary?.duplicatesMerged == 1)
        #expect(try entries(dir.path("one.cid")).first?.category.name == "collector")
    }

    @Test func fixedCategoryAndCategoryMap() throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv")
        try write("79131234567\tA\tКоллектор\n", tsv)
        var o = PipelineOptions()
        var map = CategoryMap()
        map.set("Коллектор", to: try Category("collector", action: .block))
        o.categories = map
        _ = try runPipeline([tsv], o, to: dir.path("a.cid"))
        #expect(try entries(dir.path("a.cid")).first?.category == (try Category("collector", action: .block)))
        o.fixedCategory = try Category("spam", action: .block)
        _ = try runPipeline([tsv], o, to: dir.path("b.cid"))
        #expect(try entries(dir.path("b.cid")).first?.category.name == "spam")
    }

    @Test func badRowLimitsAbortAndWriteNothing() throws {
        let dir = TempDir()
        let tsv = dir.path("in.tsv")
        try write((0..<100).map { $0 % 10 == 0 ? "bad\(String($0))\tX" : "7913123\(String(format: "%04d", $0))\tX" }.joined(separator: "\n"), tsv)
        let out = dir.path("out.cid")
        try write("old", out)
        for (limit, ok) in [(BadRowLimit.count(0), false), (.count(9), false), (.count(10), true),
                            (.percent(9.5), false), (.percent(10), true), (.unlimited, true)] {
            var o = PipelineOptions()
            o.maxBadRows = limit
            let p = try Pipeline(options: o)
            var thrown: PipelineError? = nil
            do {
                try p.add(file: tsv)
                try p.write(to: dir.path("new-\(ok).cid"))
            } catch {
                thrown = error
            }
            #expect((thrown == nil) == ok, "\(limit): \(thrown?.message ?? "ok")")
            if let thrown { #expect(thrown.code == .tooManyBadRows) }
        }
        #expect(try String(contentsOfFile: out, encoding: .utf8) == "old")
        let listing = try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted()
        #expect(listing == ["in.tsv", "new-true.cid", "out.cid"], "temporary files left behind: \(listing)")
    }
}

// MARK: - Outputs

@Suite struct PipelineOutputTests {
    /// Shards cover the input exactly: each ≤ N, ascending, contiguous ranges, nothing lost
    /// or duplicated; the manifest lists them with their hashes.
    @Test(arguments: [(UInt64(11), 97), (12, 500), (13, 2_000), (14, 5_000)])
    func shardsCoverTheInputExactly(seed: UInt64, maxEntries: Int) throws {
        let dir = TempDir()
        let (records, expected) = russianRecords(count: 3000, seed: seed)
        let tsv = dir.path("in.tsv")
        try writeTSV(records, to: tsv)
        var o = PipelineOptions()
        o.maxEntries = maxEntries
        o.buildTime = 1_700_000_000
        let r = try runPipeline([tsv], o, to: dir.path("out"))
        let summary = try #require(r.summary)
        let sorted = expected.values.sorted { $0.number < $1.number }
        #expect(summary.isDirectory)   // a maxEntries asks for a build directory, even for one shard
        var all: [Entry] = []
        var previousEnd: UInt64? = nil
        for f in summary.files {
            let path = summary.isDirectory ? dir.path("out/\(f.file)") : dir.path("out")
            let e = try entries(path)
            #expect(e.count <= maxEntries && e.count == f.entries)
            #expect(e.first?.number == f.firstNumber && e.last?.number == f.lastNumber)
            if let previousEnd { #expect(f.rangeStart == previousEnd + 1, "gap or overlap between shards") }
            previousEnd = f.rangeEnd
            #expect(e.allSatisfy { f.rangeStart! <= $0.number && $0.number <= f.rangeEnd! })
            #expect(try Checksum.xxh3(fileAt: path) == f.xxh3)
            all += e
        }
        #expect(all == sorted)
        #expect(summary.duplicatesMerged == records.count - expected.count)
        if summary.isDirectory {
            let m = try manifest(dir.path("out"))
            let files = try #require(m["files"] as? [[String: Any]])
            #expect(files.count == summary.files.count)
            let versions = try summary.files.map { try Database(path: dir.path("out/\($0.file)")).info.formatVersion }
            #expect(m["format_version"] as? String == (versions.contains("3.0") ? "3.0" : "2.0"))
            #expect(m["build_time"] as? String == "2023-11-14T22:13:20Z")
            #expect((m["dataset_version"] as? String)?.hasPrefix("xxh3-") == true)
            for (f, j) in zip(summary.files, files) {
                #expect(j["file"] as? String == f.file)
                #expect(j["xxh3"] as? String == Pipeline.hex(f.xxh3))
                #expect(j["format_version"] as? String == (try Database(path: dir.path("out/\(f.file)")).info.formatVersion))
                #expect(j["bytes"] as? Int == (try FileManager.default.attributesOfItem(atPath: dir.path("out/\(f.file)"))[.size] as? Int))
                #expect((j["categories"] as? [String: Int])?.values.reduce(0, +) == f.entries)
                #expect(j["region"] as? String == "all" && j["shards"] as? Int == summary.files.count)
            }
        }
    }

    /// Each file of a build directory is listed with its own format version, and the manifest
    /// with the newest of them: a region whose numbers come in short runs is written 3.0 (key
    /// codec 2), a region of scattered numbers 2.0, which a 2.0 reader still reads. Before: every
    /// file and the manifest said the library's newest version, 3.0, whatever was written.
    @Test func theManifestNamesEachFilesOwnFormatVersion() throws {
        let dir = TempDir()
        var rng = SeededGenerator(seed: 77)
        var rows = ""
        var n: UInt64 = 79_130_000_000
        for _ in 0..<1_000 {   // runs of 1 to 4 consecutive numbers, far apart: most gaps are 1
            n += UInt64.random(in: 20...2_000, using: &rng)
            for k in 0..<UInt64.random(in: 1...4, using: &rng) { rows += "\(n + k)\tRun\n" }
            n += 4
        }
        for _ in 0..<3_000 { rows += "\(UInt64.random(in: 74_950_000_000...74_959_999_999, using: &rng))\tScattered\n" }
        try write(rows, dir.path("in.tsv"))
        try write("7913\truns\n7495\tscattered\n", dir.path("prefixes.tsv"))
        var o = lenient()
        o.split = .prefix
        o.regionMap = try RegionMap(contentsOf: dir.path("prefixes.tsv"))
        func versions(_ output: String) throws -> (manifest: String?, files: [String: String]) {
            let m = try manifest(output)
            var files: [String: String] = [:]
            for f in try #require(m["files"] as? [[String: Any]]) {
                let name = try #require(f["file"] as? String)
                let said = try #require(f["format_version"] as? String)
                #expect(said == (try Database(path: output + "/" + name).info.formatVersion), "\(name)")
                files[name] = said
            }
            return (m["format_version"] as? String, files)
        }
        _ = try runPipeline([dir.path("in.tsv")], o, to: dir.path("both"))
        let both = try versions(dir.path("both"))
        #expect(both.files == ["runs.cid": "3.0", "scattered.cid": "2.0"])
        #expect(both.manifest == "3.0")
        // The bounded build (spilled runs, streamed writer) writes the same.
        var bounded = o
        bounded.buildOptions.memoryLimit = 16 * 1024
        let pipeline = try Pipeline(options: bounded)
        pipeline.prepare(output: dir.path("bounded"))
        try pipeline.add(file: dir.path("in.tsv"))
        _ = try pipeline.write(to: dir.path("bounded"))
        #expect(try versions(dir.path("bounded")).files == both.files)
        // Scattered numbers alone: a 2.0 set.
        try write(rows.split(separator: "\n").filter { $0.hasSuffix("Scattered") }.map { $0 + "\n" }.joined(), dir.path("scattered.tsv"))
        _ = try runPipeline([dir.path("scattered.tsv")], o, to: dir.path("old"))
        let old = try versions(dir.path("old"))
        #expect(old.files == ["scattered.cid": "2.0"] && old.manifest == "2.0")
    }

    @Test func regionsByFieldAndByPrefix() throws {
        let dir = TempDir()
        let csv = dir.path("in.csv")
        try write("number,label,region\n+74951234567,A,Москва |Московская область\n+74991234567,B,Москва\n+78121234567,C,Санкт - Петербург\n+79131234567,D,\n+74951234567,A2,Москва\n", csv)
        let map = dir.path("regions.tsv")
        try write("Москва\tmoscow\nСанкт - Петербург\tspb\n", map)
        var o = lenient()
        o.split = .field
        o.regionField = .name("region")
        o.regionMap = try RegionMap(contentsOf: map)
        let r = try runPipeline([csv], o, to: dir.path("by-field"))
        #expect(r.rejected.map(\.reason) == [.noRegion])
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path("by-field")).sorted()
        #expect(names == ["Moskva_Moskovskaya_oblast.cid", "manifest.json", "moscow.cid", "spb.cid"])
        #expect(try entries(dir.path("by-field/moscow.cid")).map(\.label) == ["A2", "B"])
        o.regionAfter = "|"
        _ = try runPipeline([csv], o, to: dir.path("after"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path("after")).contains("Moskovskaya_oblast.cid"))

        let prefixes = dir.path("prefixes.tsv")
        try write("7495\tmoscow\n7499\tmoscow\n7\trussia\n", prefixes)
        var p = lenient()
        p.split = .prefix
        p.regionMap = try RegionMap(contentsOf: prefixes)
        let tsv = dir.path("in.tsv")
        try write("74951234567\tA\n74991234567\tB\n79131234567\tC\n12125550100\tD\n", tsv)
        let pr = try runPipeline([tsv], p, to: dir.path("by-prefix"))
        #expect(pr.rejected.map(\.reason) == [.noRegion])
        #expect(try entries(dir.path("by-prefix/moscow.cid")).map(\.label) == ["A", "B"])
        #expect(try entries(dir.path("by-prefix/russia.cid")).map(\.label) == ["C"])
        let m = try manifest(dir.path("by-prefix"))
        #expect((m["files"] as? [[String: Any]])?.map { $0["region"] as? String } == ["moscow", "russia"])
    }

    @Test func topNIsTheHeaviestEntries() throws {
        let dir = TempDir()
        var rng = SeededGenerator(seed: 99)
        var lines: [String] = []
        var weight: [UInt64: Int] = [:]
        for i in 0..<2000 {
            let n = 79_130_000_000 + UInt64.random(in: 0..<5000, using: &rng)
            let w = Int.random(in: 0...100_000, using: &rng)
            lines.append("\(n)\tL\(i)\t\(i % 7 == 0 ? "spam" : "")\t\(w)")
            weight[n] = w   // the last row wins
        }
        try write(lines.joined(separator: "\n"), dir.path("in.tsv"))
        var o = PipelineOptions()
        o.weightField = .position(4)
        o.top = 100
        o.maxEntries = 500
        let r = try runPipeline([dir.path("in.tsv")], o, to: dir.path("out"))
        let top = try entries(dir.path("out/top.cid"))
        let expected = weight.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.prefix(100).map(\.key).sorted()
        #expect(top.map(\.number) == expected)
        #expect(r.summary!.files.filter { $0.kind == "all" }.count == (weight.count + 499) / 500)
        #expect(r.summary!.files.last?.file == "top.cid")
    }

    @Test func outputDirectoryIsReplacedWholeAndOnlyIfItIsABuild() throws {
        let dir = TempDir()
        try write("79131234567\tA\n", dir.path("a.tsv"))
        var o = PipelineOptions()
        o.maxEntries = 1
        o.blockList = .separate
        _ = try runPipeline([dir.path("a.tsv")], o, to: dir.path("out"))
        try write("stale", dir.path("out/stale.cid"))
        _ = try runPipeline([dir.path("a.tsv")], o, to: dir.path("out"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path("out")).sorted() == ["all.cid", "manifest.json"])
        try FileManager.default.createDirectory(atPath: dir.path("home"), withIntermediateDirectories: false)
        try write("precious", dir.path("home/notes.txt"))
        #expect(throws: PipelineError.self) { try runPipeline([dir.path("a.tsv")], o, to: dir.path("home")) }
        #expect(try String(contentsOfFile: dir.path("home/notes.txt"), encoding: .utf8) == "precious")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).sorted() == ["a.tsv", "home", "out"])
    }
}

/// How the Starbucks store directory is read (the whole file and the fixture).
func starbucksOptions() -> PipelineOptions {
    var o = lenient()
    o.numberField = .name("Phone Number")
    o.labelField = .name("store_name")
    o.countryField = .name("Country")
    return o
}

/// How the tests read the Rossvyaz numbering plan expanded by region: the pipeline's preset
/// (`PipelinePreset.rossvyazRegions`: windows-1251, ';', an area code column, 7-digit range
/// numbers, operator in column 5, one database per region of column 6), every bad row tolerated.
func rossvyazOptions(maxRangeExpansion: Int) -> PipelineOptions {
    var o = PipelinePreset.rossvyazRegions.options
    o.maxBadRows = .unlimited
    o.maxRangeExpansion = maxRangeExpansion
    return o
}

// MARK: - Real data (../shared/data)

@Suite(.enabled(if: sharedDataAvailable, "needs ../shared/data beside the package (a fresh clone has none)"))
struct PipelineRealDataTests {
    /// The store directory: 25,600 rows, 18,739 with a phone, each read with its row's country
    /// by libphonenumber. `--validity valid` keeps exactly the README's 17,992 phones
    /// (libphonenumber's `is_valid_number`); `possible` keeps 18,220 (lengths only: 8-digit CN
    /// and BR numbers without their area code pass, as libphonenumber says); the default,
    /// `plausible`, keeps 18,218: of the 30 numbers with no shape of their country's numbers in
    /// libphonenumber's metadata (Qatar's 7-digit numbers of before 2010, Hanoi's `04` numbers of
    /// before 2017, Manila's 7-digit ones, a GB number missing a digit, `000-000-0000`;
    /// docs/PIPELINE.md lists them) the 28 read in their row's own country are kept with a
    /// warning (the metadata may predate a number); one dialled from China to Brazil and a Riyadh
    /// number a digit short, whose trunk 0 stays in it (`01 8396046`), are refused.
    /// The built-in table keeps 18,094 (docs/PIPELINE.md, "libphonenumber" has the difference).
    @Test func starbucksDirectory() throws {
        let path = sharedData.appendingPathComponent("starbucks/directory.csv").path
        try #require(FileManager.default.fileExists(atPath: path), "\(path) missing")
        let phones = 25_600 - 6_861
        func valid(_ validity: NumberValidity, _ rules: NumberRules) throws -> (Int, [RejectReason: Int]) {
            var o = starbucksOptions()
            o.validity = validity
            o.numberRules = rules
            let r = try runPipeline([path], o)
            #expect(r.pipeline.rejectedByReason[.noNumber] == 6_861)
            return (phones - (r.pipeline.rowsRejected - 6_861), r.pipeline.rejectedByReason)
        }
        let (allocated, validReasons) = try valid(.valid, .libphonenumber)
        #expect(allocated == 17_992)                       // README: libphonenumber's is_valid_number
        #expect(validReasons[.notAllocated] == 198)
        #expect(validReasons[.notPlausible] == 30)
        let (possible, _) = try valid(.possible, .libphonenumber)
        #expect(possible == 18_220)
        let (table, tableReasons) = try valid(.possible, .builtInTable)
        #expect(table == 18_094)   // row 3733, 00551-68136069 in CN, is +55 with 9 digits: too short
        #expect(Set(tableReasons.keys).isSubset(of: [.noNumber, .scientificNotation, .tooShort, .tooLong, .letters, .invalidLeadingDigit]))

        let dir = TempDir()
        var o = starbucksOptions()
        o.numberRules = .libphonenumber
        let r = try runPipeline([path], o, to: dir.path("stores.cid"))
        #expect(r.pipeline.rowsRead == 25_600)
        let byReason = r.pipeline.rejectedByReason
        #expect(byReason[.noNumber] == 6_861)             // no phone at all
        #expect(byReason[.scientificNotation] == 186)     // README: 186 mangled numbers
        #expect(phones == 18_739)
        #expect(phones - (r.pipeline.rowsRejected - 6_861) == 18_218)
        #expect(byReason[.notPlausible] == 2)              // 00551-68136069 in CN (+55), 01 8396046 in SA
        #expect(r.pipeline.warningsByKind[.notPlausibleKept] == 28)
        #expect(byReason[.localOnly] == 235)              // AR, CN…: a local number without its area code
        #expect(Set(byReason.keys).isSubset(of: [.noNumber, .scientificNotation, .tooShort, .tooLong, .letters,
                                                 .localOnly, .invalidLength, .notPlausible]))
        let db = try Database(path: dir.path("stores.cid"), verify: true)
        #expect(db.count == r.summary!.entries)
        #expect(try db.lookup(8227588163)?.label.isEmpty == false)        // 02-758-8163, KR
        #expect(try db.lookup(74959677853) != nil)                        // 7(495)9677853, RU
    }

    /// The numbering plan (windows-1251, ';', ranges: code + 7-digit range numbers).
    @Test func rossvyazNumberingPlan() throws {
        let path = sharedData.appendingPathComponent("rossvyaz/raw_Kody_ABC-3kh.csv").path
        try #require(FileManager.default.fileExists(atPath: path), "\(path) missing")
        func options(_ maxRange: Int) -> PipelineOptions { rossvyazOptions(maxRangeExpansion: maxRange) }
        // The whole file reads cleanly: every row is a range, none has a bad number or byte.
        let whole = try runPipeline([path], options(1))
        #expect(whole.pipeline.rowsRead == 19_702)
        #expect(Set(whole.pipeline.rejectedByReason.keys) == [.rangeTooLarge])
        #expect(whole.pipeline.rangeRows + whole.pipeline.rowsRejected == 19_702)

        // An excerpt (first 1,000 rows, raw bytes) split by region.
        let dir = TempDir()
        let raw = try Data(contentsOf: URL(fileURLWithPath: path))
        var lines = 0
        let cut = raw.firstIndex { b in if b == 0x0A { lines += 1 }; return lines == 1_001 }!
        try raw.prefix(upTo: cut + 1).write(to: URL(fileURLWithPath: dir.path("excerpt.csv")))
        let r = try runPipeline([dir.path("excerpt.csv")], options(1_000), to: dir.path("regions"))
        #expect(r.pipeline.rowsRead == 1_000)
        #expect(Set(r.pipeline.rejectedByReason.keys).isSubset(of: [.rangeTooLarge]))
        let s = try #require(r.summary)
        #expect(s.entries == r.pipeline.rangeNumbers)
        #expect(s.files.map(\.region).contains("Республика Бурятия"))
        let buryatia = try #require(s.files.first { $0.region == "Республика Бурятия" })
        #expect(try Checksum.xxh3(fileAt: dir.path("regions/\(buryatia.file)")) == buryatia.xxh3)
        // Ranges compress below one byte per entry: such a file holds more entries than bytes.
        let db = try Database(path: dir.path("regions/\(buryatia.file)"), verify: true)
        #expect(db.count > buryatia.bytes)
        #expect(try db.lookup(73012202000)?.label == "МОБИЛОН")      // 301;2202000;2202499;500;МОБИЛОН;Улан - Удэ |…
        #expect(try db.lookup(73012202499)?.label == "МОБИЛОН")
        #expect(try db.lookup(73012202500)?.label != "МОБИЛОН")
        #expect(try db.lookup(73012100000) == nil)                      // 301;2100000;2109999: 10,000 > the 1,000 limit
    }
}
