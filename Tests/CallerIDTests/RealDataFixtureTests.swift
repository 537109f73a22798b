import Testing
import Foundation
@testable import CallerID
@testable import CallerIDPipeline

// The real-data tests of PipelineTests.swift ("Real data"), run on small excerpts of the same
// files kept in Tests/CallerIDTests/Fixtures (provenance and commands: Fixtures/README.md), so
// they run in every clone. Expected values are read from the excerpts by the test's own reader
// below, never copied from the pipeline's output.

/// Tests/CallerIDTests/Fixtures.
private let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

/// A record of an excerpt as this test reads it: the line it starts on (1-based), its fields.
private struct FixtureRecord {
    var line: Int
    var fields: [String]
}

/// A plain RFC 4180 reader, independent of the pipeline's: quoted fields, doubled quotes,
/// line breaks inside quotes.
private func readDelimited(_ text: String, delimiter: Character) -> [FixtureRecord] {
    var records: [FixtureRecord] = []
    var fields: [String] = [], field = "", quoted = false, afterQuote = false
    var line = 1, start = 1
    func endRecord() {
        fields.append(field)
        records.append(FixtureRecord(line: start, fields: fields))
        fields = []; field = ""
    }
    for c in text {
        if quoted {
            if c == "\"" { quoted = false; afterQuote = true; continue }
            if c == "\n" || c == "\r\n" { line += 1 }
            field.append(c)
            continue
        }
        if c == "\"" {
            if afterQuote { field.append("\"") }   // "" inside quotes
            quoted = true; afterQuote = false
            continue
        }
        afterQuote = false
        if c == delimiter {
            fields.append(field); field = ""
        } else if c == "\n" || c == "\r\n" {
            endRecord()
            line += 1; start = line
        } else {
            field.append(c)
        }
    }
    if !field.isEmpty || !fields.isEmpty { endRecord() }
    return records
}

/// Whitespace runs as one space, none at the ends (what a label looks like once cleaned).
private func collapsed(_ s: String) -> String {
    s.split(whereSeparator: \.isWhitespace).joined(separator: " ")
}

private func digits(_ s: String) -> String { String(s.filter(\.isASCIIDigit)) }

private extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}

@Suite struct RealDataFixtureTests {
    // MARK: Starbucks

    /// The store directory excerpt read as `PipelineRealDataTests.starbucksDirectory` reads the
    /// whole file: each phone with its row's country, the store name as label.
    @Test func starbucksExcerpt() throws {
        let path = fixtures.appendingPathComponent("starbucks-excerpt.csv").path
        let records = readDelimited(try String(contentsOfFile: path, encoding: .utf8), delimiter: ",")
        let header = try #require(records.first).fields
        let nameAt = try #require(header.firstIndex(of: "store_name"))
        let phoneAt = try #require(header.firstIndex(of: "Phone Number"))
        let countryAt = try #require(header.firstIndex(of: "Country"))
        let streetAt = try #require(header.firstIndex(of: "Street Address"))
        let rows = Array(records.dropFirst())
        #expect(rows.allSatisfy { $0.fields.count == header.count })
        #expect(Set(rows.map { $0.fields[countryAt] }).count > 40)   // many countries, not one block

        let dir = TempDir()
        let r = try runPipeline([path], starbucksOptions(), to: dir.path("stores.cid"))
        #expect(r.pipeline.rowsRead == rows.count)
        #expect(r.rejected.count == r.pipeline.rowsRejected)

        // Rejected rows: this file, the line each record starts on, a reason.
        let lines = Set(rows.map(\.line))
        for row in r.rejected {
            #expect(row.file == path)
            #expect(lines.contains(row.line), "\(row)")
            #expect(row.description.hasPrefix("\(path):\(row.line): "))
        }
        let noPhone = rows.filter { $0.fields[phoneAt].allSatisfy(\.isWhitespace) }
        #expect(r.rejected.filter { $0.reason == .noNumber }.map(\.line) == noPhone.map(\.line))
        // `4.93E+12`: a spreadsheet's rounding, the digits are gone.
        let scientific = rows.filter { $0.fields[phoneAt].contains("E+") && digits($0.fields[phoneAt]).count < 6 }
        #expect(scientific.count >= 10)
        let rejectedScientific = r.rejected.filter { $0.reason == .scientificNotation }
        #expect(rejectedScientific.map(\.line) == scientific.map(\.line))
        #expect(rejectedScientific.map(\.raw) == scientific.map { $0.fields[phoneAt] })
        #expect(Set(r.pipeline.rejectedByReason.keys).isSubset(of: [.noNumber, .scientificNotation, .tooShort, .tooLong, .letters,
                                                                    .invalidLeadingDigit, .localOnly, .invalidLength, .notPlausible]))

        // The one record over two lines (a quoted address ending in a line break): read as one
        // row (no phone), and the lines of the rows after it still match.
        let twoLines = try #require(rows.first { $0.fields[streetAt].contains("\n") })
        #expect(twoLines.fields[nameAt].hasPrefix("Wembley"))
        #expect(r.rejected.contains { $0.line == twoLines.line && $0.reason == .noNumber })
        #expect(rows.last!.line > rows.count + 1)

        // As in the whole file, most phones are valid numbers.
        let phones = rows.count - noPhone.count
        let valid = phones - (r.pipeline.rowsRejected - noPhone.count)
        #expect(valid > phones * 9 / 10)

        // Entries: one per distinct number accepted.
        let s = try #require(r.summary)
        let db = try Database(path: dir.path("stores.cid"), verify: true)
        #expect(db.count == s.entries)
        #expect(s.numbersAccepted >= valid)
        #expect(s.numbersAccepted == s.entries + s.duplicatesMerged)
        // Every entry comes from a row: one with its label whose phone holds its last 7 digits.
        var phonesByName: [String: [String]] = [:]
        for row in rows { phonesByName[collapsed(row.fields[nameAt]), default: []].append(digits(row.fields[phoneAt])) }
        let all = try entries(dir.path("stores.cid"))
        #expect(all.count == db.count)
        for e in all {
            let tail = String(String(e.number).suffix(7))
            #expect(phonesByName[e.label]?.contains { $0.contains(tail) } == true, "\(e.number) \(e.label)")
        }

        // Numbers written in national forms, turned into E.164 here by the usual rules, answer
        // with their store's name (the last row's when rows share a number: 773-686-6180 is on
        // three O'Hare rows). A number also written in another form elsewhere (416-776-3100 and
        // 4167763100) is left out: which row is last then depends on that other form.
        let rejectedLines = Set(r.rejected.map(\.line))
        var expected: [UInt64: String] = [:]
        var checked: [String: Int] = [:]
        var formsOfTail: [String: Set<String>] = [:]
        for row in rows { formsOfTail[String(digits(row.fields[phoneAt]).suffix(7)), default: []].insert(row.fields[phoneAt]) }
        for row in rows where !rejectedLines.contains(row.line) {
            let phone = row.fields[phoneAt], country = row.fields[countryAt], d = digits(phone)
            let groups = phone.split(separator: "-", omittingEmptySubsequences: false)
            guard groups.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isASCIIDigit) }) || phone.hasPrefix("7(") else { continue }
            let sizes = groups.map(\.count)
            var e164: String?
            switch country {
            case "US" where sizes == [3, 3, 4], "CA" where sizes == [3, 3, 4]:
                e164 = "1" + d                                  // 907-365-2000
            case "KR" where phone.hasPrefix("0") && sizes.count == 3:
                e164 = "82" + d.dropFirst()                     // 02-758-8335
            case "CN" where phone.hasPrefix("0") && sizes.count == 2:
                e164 = "86" + d.dropFirst()                     // 010-87224941
            case "JP" where phone.hasPrefix("81"):
                e164 = d                                        // 81-3-3457-5782
            case "RU":
                e164 = d                                        // 7(495)9677853
            default:
                break
            }
            guard let e164, let n = UInt64(e164) else { continue }
            guard formsOfTail[String(d.suffix(7))]?.count == 1 else { checked["other forms", default: 0] += 1; continue }
            expected[n] = collapsed(row.fields[nameAt])
            checked[country, default: 0] += 1
        }
        #expect(checked["US", default: 0] > 500 && checked["CA", default: 0] > 30, "\(checked)")
        #expect(checked["KR", default: 0] > 5 && checked["CN", default: 0] > 5, "\(checked)")
        #expect(checked["JP", default: 0] > 0 && checked["RU", default: 0] > 0, "\(checked)")
        #expect(checked["other forms", default: 0] < 10, "\(checked)")
        #expect(expected.count < checked.filter { $0.key != "other forms" }.values.reduce(0, +))   // rows did share numbers
        for (n, label) in expected {
            #expect(try db.lookup(n)?.label == label, "\(n)")
        }
    }

    // MARK: Rossvyaz

    /// A numbering-plan excerpt read as `PipelineRealDataTests.rossvyazNumberingPlan` reads it
    /// (windows-1251, `;`, code + 7-digit range numbers), split by the subject after `|`.
    @Test(arguments: ["rossvyaz-ABC-3kh-excerpt.csv", "rossvyaz-ABC-8kh-excerpt.csv", "rossvyaz-DEF-9kh-excerpt.csv"])
    func rossvyazExcerpt(_ name: String) throws {
        let path = fixtures.appendingPathComponent(name).path
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(bytes.contains(0xC0))                                  // cp1251 bytes, not UTF-8
        #expect(String(data: bytes, encoding: .utf8) == nil)
        let text = try #require(String(data: bytes, encoding: .windowsCP1251))
        let records = readDelimited(text, delimiter: ";")
        #expect(records.first?.fields == ["АВС/ DEF", "От", "До", "Емкость", "Оператор", "Регион"])

        struct Range { var line: Int; var first: UInt64; var last: UInt64; var label: String; var region: String }
        let limit = 1_000
        var accepted: [Range] = [], tooLarge: [Range] = []
        for rec in records.dropFirst() {
            let f = rec.fields
            try #require(f.count == 6, "line \(rec.line)")
            let code = f[0], from = try #require(Int(f[1])), to = try #require(Int(f[2]))
            #expect(to - from + 1 == Int(f[3]), "line \(rec.line): capacity")
            func number(_ n: Int) -> UInt64 { UInt64("7" + code + String(repeating: "0", count: 7 - String(n).count) + String(n))! }
            let region = collapsed(String(collapsed(f[5]).split(separator: "|", omittingEmptySubsequences: false).last!))
            let range = Range(line: rec.line, first: number(from), last: number(to), label: collapsed(f[4]), region: region)
            if to - from + 1 > limit { tooLarge.append(range) } else { accepted.append(range) }
        }
        #expect(accepted.count > 500 && tooLarge.count > 50)

        let dir = TempDir()
        let r = try runPipeline([path], rossvyazOptions(maxRangeExpansion: limit), to: dir.path("regions"))

        // Rows read, ranges taken, and the larger ranges rejected at their lines, with why.
        #expect(r.pipeline.rowsRead == records.count - 1)
        #expect(r.pipeline.rangeRows == accepted.count)
        #expect(r.rejected.map(\.line) == tooLarge.map(\.line))
        #expect(r.rejected.allSatisfy { $0.reason == .rangeTooLarge && $0.file == path })
        #expect(r.rejected.first.map { $0.message.contains("more than --max-range-expansion \(limit)") } == true)
        let sizes = accepted.map { Int($0.last - $0.first + 1) }
        #expect(r.pipeline.rangeNumbers == sizes.reduce(0, +))

        // The plan's ranges do not overlap, so every number of every range is an entry.
        let sorted = accepted.sorted { $0.first < $1.first }
        #expect(zip(sorted, sorted.dropFirst()).allSatisfy { $0.last < $1.first })
        let s = try #require(r.summary)
        #expect(s.entries == r.pipeline.rangeNumbers)

        // One database per subject, holding that subject's numbers, checksummed in the manifest.
        var perRegion: [String: Int] = [:]
        for (range, size) in zip(accepted, sizes) { perRegion[range.region, default: 0] += size }
        #expect(Set(accepted.map(\.region) + tooLarge.map(\.region)).count > 20)   // many subjects in the excerpt
        #expect(perRegion.count >= 5)                                                  // DEF: most small ranges are in 9
        #expect(Set(s.files.map(\.region)) == Set(perRegion.keys))
        var databases: [String: Database] = [:]
        for file in s.files {
            #expect(file.entries == perRegion[file.region], "\(file.region)")
            #expect(try Checksum.xxh3(fileAt: dir.path("regions/\(file.file)")) == file.xxh3)
            databases[file.region] = try Database(path: dir.path("regions/\(file.file)"), verify: true)
        }

        // Each range's ends answer with its operator in its subject's database; the numbers just
        // outside answer with the neighbouring range's operator, or not at all.
        let byFirst = Dictionary(uniqueKeysWithValues: accepted.map { ($0.first, $0) })
        let byLast = Dictionary(uniqueKeysWithValues: accepted.map { ($0.last, $0) })
        for range in accepted {
            let db = try #require(databases[range.region])
            #expect(try db.lookup(range.first)?.label == range.label, "line \(range.line)")
            #expect(try db.lookup(range.last)?.label == range.label, "line \(range.line)")
            let after = byFirst[range.last + 1], before = byLast[range.first - 1]
            #expect(try databases[after?.region ?? range.region]!.lookup(range.last + 1)?.label == after?.label, "line \(range.line)")
            #expect(try databases[before?.region ?? range.region]!.lookup(range.first - 1)?.label == before?.label, "line \(range.line)")
        }
        // A rejected range is in no database.
        for range in tooLarge {
            for db in databases.values { #expect(try db.lookup(range.first) == nil, "line \(range.line)") }
        }
    }
}
