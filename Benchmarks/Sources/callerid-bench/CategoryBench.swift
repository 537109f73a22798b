// `callerid-bench categories [--rows N] [--builds N]`: the TSV import of N rows whose
// category column holds one name, and of N rows that each hold a name of their own (all
// distinct: the first 254 become categories, the rest are bad rows, as `lookup build
// --skip-bad-rows` reads them). The import must stay linear in the rows whatever the number
// of distinct names: the run fails (exit 1) when the distinct-name build takes more than
// `--max-ratio` (default 5) times the one-name build.
import CallerID
import Foundation

func categoryBench(_ a: Arguments) throws -> Int32 {
    let rows = try a.int("--rows") ?? 100_000
    let builds = max(1, try a.int("--builds") ?? 3)
    let maxRatio = Double(a.values["--max-ratio"] ?? "5") ?? 5
    let work = a.values["--work"] ?? NSTemporaryDirectory()
    let one = "\(work)/callerid-bench-categories-1.tsv", many = "\(work)/callerid-bench-categories-n.tsv"
    defer {
        for p in [one, many, "\(work)/callerid-bench-categories.cid"] { try? FileManager.default.removeItem(atPath: p) }
    }
    func write(_ path: String, category: (Int) -> String) throws {
        var text = ""
        text.reserveCapacity(rows * 32)
        for i in 0..<rows { text += "7913\(String(1_000_000 + i))\tName \(i % 1000)\t\(category(i))\n" }
        try text.write(toFile: path, atomically: false, encoding: .utf8)
    }
    try write(one) { _ in "spam" }
    try write(many) { "c\($0)" }

    /// Median seconds of `builds` imports and writes of `path`; the rows added and refused.
    func time(_ path: String) throws -> (seconds: Double, added: Int, refused: Int) {
        var seconds: [Double] = []
        var added = 0, refused = 0
        for _ in 0..<builds {
            let t0 = now()
            var builder = DatabaseBuilder()
            refused = 0
            added = try builder.addTSV(path: path) { _ in refused += 1 }
            _ = try builder.write(to: "\(work)/callerid-bench-categories.cid")
            seconds.append(Double(now() - t0) / 1e9)
        }
        return (median(seconds), added, refused)
    }
    let a1 = try time(one), an = try time(many)
    let ratio = an.seconds / max(a1.seconds, 1e-9)
    func f(_ x: Double, _ d: Int = 3) -> String { String(format: "%.\(d)f", x) }
    let lines: [(String, String)] = [
        ("rows", "\(rows)"),
        ("one_category_s", f(a1.seconds)),
        ("distinct_categories", "\(rows)"),
        ("distinct_categories_s", f(an.seconds)),
        ("  rows_added", "\(an.added)"),
        ("  rows_refused", "\(an.refused)"),
        ("ratio", f(ratio, 2)),
    ]
    for (k, v) in lines { print("\(k.padding(toLength: 28, withPad: " ", startingAt: 0)) \(v)") }
    guard a1.added == rows, an.added == 254, an.refused == rows - 254 else {
        FileHandle.standardError.write(Data("error: unexpected row counts\n".utf8))
        return 1
    }
    if ratio > maxRatio {
        FileHandle.standardError.write(Data("error: \(rows) distinct categories took \(f(ratio, 1))× the one-category build (limit \(maxRatio)×): not linear\n".utf8))
        return 1
    }
    return 0
}
