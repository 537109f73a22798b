import Foundation
import Testing
@testable import CallerID
@testable import CallerIDPipeline

// The Rossvyaz excerpts (Fixtures/README.md) built with --keep-ranges and two label fields
// (operator, region): every range stays a range. Expected answers come from this test's own
// reading of the cp1251 files, never from the pipeline.

private let fixtureDir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
private let rossvyazFixtures = ["rossvyaz-ABC-3kh-excerpt.csv", "rossvyaz-ABC-8kh-excerpt.csv", "rossvyaz-DEF-9kh-excerpt.csv"]

private struct PlanRow { var first: UInt64; var last: UInt64; var label: String }

private func collapse(_ s: String) -> String { s.split(whereSeparator: \.isWhitespace).joined(separator: " ") }

/// One CSV line's fields (RFC 4180 quoting: `"…"` with `""` for a quote; no line breaks inside).
private func csvFields(_ line: Substring, _ separator: Character) -> [String] {
    var fields: [String] = [], field = "", quoted = false, afterQuote = false
    for c in line {
        if quoted {
            if c == "\"" { quoted = false; afterQuote = true } else { field.append(c) }
            continue
        }
        if c == "\"" {
            if afterQuote { field.append("\"") }
            quoted = true; afterQuote = false
        } else if c == separator {
            fields.append(field); field = ""; afterQuote = false
        } else {
            field.append(c); afterQuote = false
        }
    }
    fields.append(field)
    return fields
}

/// Every row of the three excerpts: `7` + code + the range ends padded to 7 digits; the label
/// "operator, region" (each with its whitespace collapsed).
private func planRows() throws -> [PlanRow] {
    var rows: [PlanRow] = []
    for name in rossvyazFixtures {
        let data = try Data(contentsOf: fixtureDir.appendingPathComponent(name))
        let text = try #require(String(data: data, encoding: .windowsCP1251))
        for line in text.split(separator: "\n").dropFirst() {
            let f = csvFields(line, ";")
            try #require(f.count == 6)
            func number(_ s: String) -> UInt64 {
                let t = s.trimmingCharacters(in: .whitespaces)
                return UInt64("7" + f[0].trimmingCharacters(in: .whitespaces) + String(repeating: "0", count: 7 - t.count) + t)!
            }
            let parts = [collapse(f[4]), collapse(f[5])].filter { !$0.isEmpty }
            rows.append(PlanRow(first: number(f[1]), last: number(f[2]), label: parts.joined(separator: ", ")))
        }
    }
    return rows
}

/// The pipeline's preset for the plan as ranges (`lookup build --preset rossvyaz`).
private func keepRangesOptions() -> PipelineOptions {
    var o = PipelinePreset.rossvyaz.options
    o.maxRangeExpansion = 1        // the limit must not matter with --keep-ranges
    o.maxExpandedTotal = 100_000   // one-number rows still count here
    o.maxBadRows = .unlimited
    return o
}

@Suite struct RangeFixtureTests {
    @Test func rossvyazExcerptsKeepRanges() throws {
        let rows = try planRows()
        let multi = rows.filter { $0.last > $0.first }, single = rows.filter { $0.last == $0.first }
        #expect(multi.count > 2_500)
        // The excerpts hold no overlapping rows (so every row answers as itself).
        let sorted = rows.sorted { $0.first < $1.first }
        #expect(zip(sorted, sorted.dropFirst()).allSatisfy { $0.last < $1.first })

        let dir = TempDir()
        let out = dir.path("plan.cid")
        let r = try runPipeline(rossvyazFixtures.map { fixtureDir.appendingPathComponent($0).path }, keepRangesOptions(), to: out)
        #expect(r.rejected.isEmpty)
        let s = try #require(r.summary)
        #expect(s.rangesKept == multi.count)
        #expect(s.entries == single.count)
        let db = try Database(path: out, verify: true)
        #expect(db.rangeCount == multi.count)
        #expect(db.count == single.count)

        var g = SeededGenerator(seed: 15)
        for _ in 0..<5_000 {
            let row = multi.randomElement(using: &g)!
            let x = UInt64.random(in: row.first...row.last, using: &g)
            let a = try #require(try db.answer(x), "\(x)")
            #expect(a.label == row.label, "\(x)")
            #expect(a.match == .range(first: row.first, last: row.last), "\(x)")
        }
        for row in single { #expect(try db.answer(row.first).map { ($0.label, $0.match) } ?? ("", .entry) == (row.label, .entry)) }
        // Numbers between ranges are not found.
        var between = 0
        for (a, b) in zip(sorted, sorted.dropFirst()) where b.first > a.last + 1 {
            #expect(try db.answer(a.last + 1) == nil)
            #expect(try db.answer(b.first - 1) == nil)
            between += 1
        }
        #expect(between > 100)
        // The ranges enumerate in order, with their labels.
        var c = db.rangeCursor()
        let stored = try c.collect()
        #expect(stored.map(\.first) == multi.map(\.first).sorted())
        #expect(Array(db.entries()).count == single.count)   // entry cursors never expand ranges
    }

    /// A directory entry inside a plan range overrides it, in one database or across two.
    @Test func directoryEntryOverridesThePlan() throws {
        let rows = try planRows().filter { $0.last - $0.first >= 2 }
        let row = rows[rows.count / 2]
        let dir = TempDir()
        let plan = dir.path("plan.cid")
        _ = try runPipeline(rossvyazFixtures.map { fixtureDir.appendingPathComponent($0).path }, keepRangesOptions(), to: plan)
        // The same plan plus a directory row: the entry wins in the combined database.
        let directory = dir.path("dir.tsv")
        try "\(row.first + 1)\tPizza Hut\n".write(toFile: directory, atomically: true, encoding: .utf8)
        var o = PipelineOptions()
        o.maxBadRows = .unlimited
        _ = try runPipeline([directory], o, to: dir.path("dir.cid"))
        let planDB = try Database(path: plan), dirDB = try Database(path: dir.path("dir.cid"))
        #expect(try planDB.answer(row.first + 1)?.label == row.label)
        #expect(try dirDB.answer(row.first + 1)?.match == .entry)
        #expect(try dirDB.answer(row.first) == nil)

        var b = DatabaseBuilder()
        try b.add(row.first + 1, label: "Pizza Hut")
        var cursor = planDB.rangeCursor()
        while let r = try cursor.next() { try b.addRange(r.first, r.last, label: r.label, category: r.category) }
        try b.write(to: dir.path("both.cid"))
        let both = try Database(path: dir.path("both.cid"), verify: true)
        #expect(try both.answer(row.first + 1) == Entry(number: row.first + 1, label: "Pizza Hut"))
        #expect(try both.answer(row.first)?.label == row.label)
        #expect(try both.answer(row.first + 2)?.match == .range(first: row.first, last: row.last))
    }

    @Test func keepRangesRefusesSplitting() {
        var o = keepRangesOptions()
        o.split = .field
        o.regionField = .position(6)
        #expect(throws: PipelineError.self) { try Pipeline(options: o) }
    }
}

/// `lookup build --preset NAME` is the library's preset: the same bytes as the options it stands
/// for, spelled out on the command line or set through `PipelinePreset` in the library.
@Suite struct PipelinePresetCLITests {
    static let inputs = rossvyazFixtures.map { fixtureDir.appendingPathComponent($0).path }
    static let reading = ["--delimiter", ";", "--encoding", "windows-1251", "--number-prefix-field", "1",
                          "--number-field", "2", "--range-end-field", "3", "--pad-number", "7", "--country", "RU",
                          "--label-field", "5"]

    private func bytes(_ path: String) throws -> Data { try Data(contentsOf: URL(fileURLWithPath: path)) }

    @Test func rangesPresetEqualsItsOptions() throws {
        let dir = TempDir()
        let preset = try lookup(["build", "-o", dir.path("preset.cid"), "--preset", "rossvyaz"] + Self.inputs)
        #expect(preset.status == 0, "\(preset.stderr)")
        let explicit = try lookup(["build", "-o", dir.path("explicit.cid")] + Self.reading + ["--label-field", "6", "--keep-ranges"] + Self.inputs)
        #expect(explicit.status == 0, "\(explicit.stderr)")
        _ = try runPipeline(Self.inputs, PipelinePreset.rossvyaz.options, to: dir.path("library.cid"))
        let built = try bytes(dir.path("preset.cid"))
        #expect(built == (try bytes(dir.path("explicit.cid"))))
        #expect(built == (try bytes(dir.path("library.cid"))))
        let db = try Database(path: dir.path("preset.cid"), verify: true)
        #expect(db.rangeCount > 2_500)
        var cursor = db.rangeCursor()
        #expect(try cursor.next()?.label.contains(", ") == true)        // "operator, region"
    }

    /// Ranges of up to 100 numbers are expanded (the larger ones skipped, alike in both builds):
    /// what is compared is the preset's reading and splitting, which the expansion's size does
    /// not change (51 regional files of 59,501 numbers; 1,000 made each debug build expand
    /// 368,554 numbers into 57 files for nothing more).
    @Test func regionsPresetEqualsItsOptions() throws {
        let dir = TempDir()
        let policy = ["--max-range-expansion", "100", "--skip-bad-rows", "--dataset-version", "v1"]
        let env = ["SOURCE_DATE_EPOCH": "1700000000"]
        let preset = try lookup(["build", "-o", dir.path("preset"), "--preset", "rossvyaz-regions"] + policy + Self.inputs, environment: env)
        #expect(preset.status == 0, "\(preset.stderr)")
        let explicit = try lookup(["build", "-o", dir.path("explicit")] + Self.reading
                                  + ["--region-field", "6", "--region-after", "|", "--split-by", "field"] + policy + Self.inputs, environment: env)
        #expect(explicit.status == 0, "\(explicit.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path("preset")).sorted()
        #expect(files.filter { $0.hasSuffix(".cid") }.count >= 5 && files.contains("manifest.json"), "\(files)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path("explicit")).sorted() == files)
        for f in files { #expect(try bytes(dir.path("preset/\(f)")) == (try bytes(dir.path("explicit/\(f)"))), "\(f)") }
    }

    /// An option given with a preset replaces the preset's: the label fields all together, the
    /// delimiter of its CSV format.
    @Test func optionsOverrideThePreset() throws {
        let dir = TempDir()
        let r = try lookup(["build", "-o", dir.path("operators.cid"), "--preset", "rossvyaz", "--label-field", "5"] + Self.inputs)
        #expect(r.status == 0, "\(r.stderr)")
        var cursor = try Database(path: dir.path("operators.cid"), verify: true).rangeCursor()
        let labels = try cursor.collect().map(\.label)
        #expect(!labels.isEmpty && !labels.contains { $0.contains("|") })   // no region column in them

        let comma = try lookup(["build", "-o", dir.path("comma.cid"), "--preset", "rossvyaz", "--delimiter", ","] + Self.inputs)
        #expect(comma.status == 65, "\(comma.stderr)")                     // one field per row: no number

        let unknown = try lookup(["build", "-o", dir.path("x.cid"), "--preset", "gosuslugi"] + Self.inputs)
        #expect(unknown.status == 64)
        #expect(unknown.stderr.contains("unknown preset 'gosuslugi': use rossvyaz or rossvyaz-regions"), "\(unknown.stderr)")
    }
}
