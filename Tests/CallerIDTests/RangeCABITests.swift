import Foundation
import Testing
@testable import CallerID

// cid_lookup_match (include/callerid.h) through the C example's `match` command, compared with
// the Swift API; cid_lookup stays entries-only.

@Suite("C ABI: cid_lookup_match")
struct RangeCABITests {
    @Test func matchReportsEntriesAndRangesAsSwiftDoes() throws {
        let program = try CABI.program()
        let dir = TempDir()
        var g = SeededGenerator(seed: 1515)
        var b = DatabaseBuilder()
        var ranges: [(UInt64, UInt64)] = []
        var next: UInt64 = 74_950_000_000
        for i in 0..<300 {
            let width = [UInt64(10), 100, 10_000, UInt64.random(in: 2...5_000, using: &g)].randomElement(using: &g)!
            ranges.append((next, next + width - 1))
            // Long labels are cold (decoded per lookup): both kinds are exercised.
            try b.addRange(next, next + width - 1, label: i % 3 == 0 ? "Оператор \(i % 40), регион \(i % 7) " + String(repeating: "х", count: 40) : "op \(i % 5)",
                           category: i % 11 == 0 ? .block : .identify)
            next += width + (Bool.random(using: &g) ? 0 : UInt64.random(in: 1...1_000, using: &g))
        }
        for _ in 0..<50 {
            let r = ranges.randomElement(using: &g)!
            try b.add(UInt64.random(in: r.0...r.1, using: &g), label: "entry \(Int.random(in: 0..<9, using: &g))")
        }
        let path = dir.path("m.cid")
        _ = try b.write(to: path)
        let db = try Database(path: path, verify: true)

        var probes: [UInt64] = [1, 74_949_999_999, next + 5, Format.maxNumber]
        for _ in 0..<400 {
            let r = ranges.randomElement(using: &g)!
            probes.append(UInt64.random(in: r.0...r.1, using: &g))
        }
        probes += Array(db.entries()).map(\.number)
        let r = try runTool(program.path, [path, "match"] + probes.map(String.init))
        #expect(r.status == 0, "\(r.stderr)")
        var expected: [String] = []
        for n in probes {
            if let a = try db.answer(n) {
                switch a.match {
                case .entry: expected.append("entry\t\(n)\t\(a.label)\t\(a.category.name)")
                case .range(let first, let last): expected.append("range\t\(n)\t\(a.label)\t\(a.category.name)\t\(first)\t\(last)")
                }
            } else {
                expected.append("not-found\t\(n)")
            }
        }
        #expect(r.lines == expected)
        #expect(expected.contains { $0.hasPrefix("range") } && expected.contains { $0.hasPrefix("entry") })
        // cid_lookup itself is unchanged: entries only.
        let inRangeOnly = try #require(try probes.first { try db.lookup($0) == nil && db.answer($0) != nil })
        let plain = try runTool(program.path, [path, "lookup", String(inRangeOnly)])
        #expect(plain.lines == ["not-found\t\(inRangeOnly)"])
    }
}
