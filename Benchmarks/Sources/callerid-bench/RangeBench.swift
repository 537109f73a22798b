// `callerid-bench ranges --plan DIR`: the Rossvyaz numbering plan (its three CSV files in DIR)
// built as `lookup build --preset rossvyaz` builds it (`PipelinePreset.rossvyaz`), then
// lookups that fall back to a range against exact hits on the same file.
import CallerID
import CallerIDPipeline
import Foundation

func rangeBench(_ a: Arguments) throws -> Int32 {
    guard let dir = a.values["--plan"] else { throw UsageError("ranges needs --plan DIR (the rossvyaz directory)") }
    let files = ["raw_Kody_ABC-3kh.csv", "raw_Kody_ABC-8kh.csv", "raw_Kody_DEF-9kh.csv"].map { "\(dir)/\($0)" }
    let out = a.values["--db"] ?? "/tmp/callerid-bench-plan.cid"
    let lookups = try a.int("--lookups") ?? 2_000_000
    let builds = max(1, try a.int("--builds") ?? 5)

    var o = PipelinePreset.rossvyaz.options
    o.maxBadRows = .unlimited
    if let n = try a.int("--block-size") { o.buildOptions.rangeBlockSize = n }

    // Build: median of `builds` runs (read, parse, resolve, write).
    var buildSeconds: [Double] = []
    var summary: PipelineSummary? = nil
    for _ in 0..<builds {
        let t0 = now()
        let p = try Pipeline(options: o)
        for f in files { try p.add(file: f) }
        summary = try p.write(to: out)
        buildSeconds.append(Double(now() - t0) / 1e9)
    }
    let db = try Database(path: out, verify: true)
    let section = db.info.sections.first { $0.name == "ranges" }?.bytes ?? 0

    // Probes: numbers inside random ranges (no entry: they fall back), and the entries.
    var cursor = db.rangeCursor()
    let ranges = try cursor.collect()
    let entries = Array(db.entries()).map(\.number)
    var g = SplitMix(state: 15)
    var inRanges: [UInt64] = []
    inRanges.reserveCapacity(lookups)
    while inRanges.count < lookups {
        let r = ranges[Int(g.next() % UInt64(ranges.count))]
        let x = r.first + g.next() % (r.last - r.first + 1)
        if try db.lookup(x) == nil { inRanges.append(x) }
    }
    let exact = (0..<lookups).map { _ in entries[Int(g.next() % UInt64(entries.count))] }

    func timed(_ numbers: [UInt64], _ lookup: (UInt64) throws -> Int?) rethrows -> [Double] {
        var samples: [Double] = []
        var checksum = 0
        var i = 0
        while i + 256 <= numbers.count {
            let t0 = now()
            for j in i..<(i + 256) { checksum &+= try lookup(numbers[j]) ?? -1_000_000 }
            samples.append(Double(now() - t0) / 256)
            i += 256
        }
        blackHole(checksum)
        return samples.sorted()
    }
    let answer = { (n: UInt64) throws -> Int? in try db.withAnswer(n) { $0.labelByteCount } }
    if a.flags.contains("--profile-ranges") {
        // Only range lookups, for `perf record`: 20 passes over the probes.
        let rangeOnly = { (n: UInt64) throws -> Int? in try db.withRange(n) { $0.labelByteCount } }
        var p50: [Double] = []
        for _ in 0..<20 { p50.append(percentile(try timed(inRanges, rangeOnly), 0.5)) }
        print("range_only_p50_ns \(median(p50))")
        return 0
    }
    let entryOnly = { (n: UInt64) throws -> Int? in try db.withEntry(n) { $0.labelByteCount } }
    // Warm-up passes, then the measured ones (interleaved twice to even out drift).
    _ = try timed(Array(inRanges.prefix(200_000)), answer)
    _ = try timed(Array(exact.prefix(200_000)), answer)
    var rangeP50: [Double] = [], exactP50: [Double] = [], entryP50: [Double] = []
    var rangeP99: [Double] = [], exactP99: [Double] = []
    var missP50: [Double] = [], rangeOnlyP50: [Double] = []
    let rangeOnly = { (n: UInt64) throws -> Int? in try db.withRange(n) { $0.labelByteCount } }
    for _ in 0..<3 {
        let r = try timed(inRanges, answer), e = try timed(exact, answer), w = try timed(exact, entryOnly)
        rangeP50.append(percentile(r, 0.5)); exactP50.append(percentile(e, 0.5)); entryP50.append(percentile(w, 0.5))
        rangeP99.append(percentile(r, 0.99)); exactP99.append(percentile(e, 0.99))
        missP50.append(percentile(try timed(inRanges, entryOnly), 0.5))
        rangeOnlyP50.append(percentile(try timed(inRanges, rangeOnly), 0.5))
    }
    let s = summary!
    let rows = s.rowsRead
    func f(_ x: Double, _ d: Int = 1) -> String { String(format: "%.\(d)f", x) }
    let lines: [(String, String)] = [
        ("rows", "\(rows)"),
        ("ranges", "\(db.rangeCount)"),
        ("entries", "\(db.count)"),
        ("file_bytes", "\(db.info.fileBytes)"),
        ("ranges_section_bytes", "\(section)"),
        ("bytes_per_range", f(Double(section) / Double(db.rangeCount), 3)),
        ("file_bytes_per_row", f(Double(db.info.fileBytes) / Double(rows), 3)),
        ("build_s_median", f(median(buildSeconds), 3)),
        ("range_fallback_p50_ns", f(median(rangeP50))),
        ("range_fallback_p99_ns", f(median(rangeP99))),
        ("exact_hit_p50_ns", f(median(exactP50))),
        ("exact_hit_p99_ns", f(median(exactP99))),
        ("exact_hit_withEntry_p50_ns", f(median(entryP50))),
        ("ratio_p50", f(median(rangeP50) / median(exactP50), 2)),
        ("  of which entry_miss_p50_ns", f(median(missP50))),
        ("  of which range_only_p50_ns", f(median(rangeOnlyP50))),
        ("lookups_per_kind", "\(inRanges.count)"),
    ]
    for (k, v) in lines { print("\(k.padding(toLength: 28, withPad: " ", startingAt: 0)) \(v)") }
    return 0
}
