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

private func keepRangesOptions() -> PipelineOptions {
    var o = rossvyazOptions(maxRangeExpansion: 1)   // the limit must not matter with --keep-ranges
    o.regionField = nil
    o.labelField = .position(5)
    o.additionalLabelFields = [.position(6)]
    o.keepRanges = true
    o.maxExpandedTotal = 100_000   // one-number rows still count here
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
