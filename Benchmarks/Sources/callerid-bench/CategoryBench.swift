// `callerid-bench categories [--rows N] [--builds N]`: the TSV import of N rows whose
// category column holds one name, and of N/4 and N rows that each hold a name of their own (all
// distinct: the first 254 become categories, the rest are bad rows, as `lookup build
// --skip-bad-rows` reads them). The import must stay linear in the rows whatever the number
// of distinct names: the run fails (exit 1) when a row of the N-row distinct-name build costs
// more than `--max-growth` (default 2) times a row of the N/4-row one (a scan of every name
// seen so far makes it 4).
import CallerID
import CallerIDPipeline
import Foundation

func categoryBench(_ a: Arguments) throws -> Int32 {
    let rows = max(4_000, try a.int("--rows") ?? 100_000)
    let builds = max(1, try a.int("--builds") ?? 3)
    let maxGrowth = Double(a.values["--max-growth"] ?? "2") ?? 2
    let work = a.values["--work"] ?? NSTemporaryDirectory()
    let one = "\(work)/callerid-bench-categories-1.tsv", many = "\(work)/callerid-bench-categories-n.tsv"
    let quarter = "\(work)/callerid-bench-categories-q.tsv"
    defer {
        for p in [one, many, quarter, "\(work)/callerid-bench-categories.cid"] { try? FileManager.default.removeItem(atPath: p) }
    }
    func write(_ path: String, rows: Int, category: (Int) -> String) throws {
        var text = ""
        text.reserveCapacity(rows * 32)
        for i in 0..<rows { text += "7913\(String(1_000_000 + i))\tName \(i % 1000)\t\(category(i))\n" }
        try text.write(toFile: path, atomically: false, encoding: .utf8)
    }
    try write(one, rows: rows) { _ in "spam" }
    try write(quarter, rows: rows / 4) { "c\($0)" }
    try write(many, rows: rows) { "c\($0)" }

    /// Median seconds of `builds` imports and writes of `path`; the rows added and refused.
    func time(_ path: String) throws -> (seconds: Double, added: Int, refused: Int) {
        var seconds: [Double] = []
        var added = 0, refused = 0
        for _ in 0..<builds {
            let t0 = now()
            var options = PipelineOptions()
            options.maxBadRows = .unlimited
            let pipeline = try Pipeline(options: options)
            try pipeline.build([path], to: "\(work)/callerid-bench-categories.cid")
            added = pipeline.numbersAccepted
            refused = pipeline.rowsRejected
            seconds.append(Double(now() - t0) / 1e9)
        }
        return (median(seconds), added, refused)
    }
    let a1 = try time(one), aq = try time(quarter), an = try time(many)
    let growth = (an.seconds / Double(rows)) / max(aq.seconds / Double(rows / 4), 1e-12)
    func f(_ x: Double, _ d: Int = 3) -> String { String(format: "%.\(d)f", x) }
    let lines: [(String, String)] = [
        ("rows", "\(rows)"),
        ("one_category_s", f(a1.seconds)),
        ("distinct_\(rows / 4)_s", f(aq.seconds)),
        ("distinct_\(rows)_s", f(an.seconds)),
        ("  rows_added", "\(an.added)"),
        ("  rows_refused", "\(an.refused)"),
        ("ns_per_row_one_category", f(a1.seconds / Double(rows) * 1e9, 0)),
        ("ns_per_row_distinct", f(an.seconds / Double(rows) * 1e9, 0)),
        ("growth_per_row_n_vs_n/4", f(growth, 2)),
    ]
    for (k, v) in lines { print("\(k.padding(toLength: 28, withPad: " ", startingAt: 0)) \(v)") }
    guard a1.added == rows, an.added == 254, an.refused == rows - 254 else {
        FileHandle.standardError.write(Data("error: unexpected row counts\n".utf8))
        return 1
    }
    if growth > maxGrowth {
        FileHandle.standardError.write(Data("error: a row of \(rows) distinct categories cost \(f(growth, 1))× one of \(rows / 4) (limit \(maxGrowth)×): not linear\n".utf8))
        return 1
    }
    return 0
}
