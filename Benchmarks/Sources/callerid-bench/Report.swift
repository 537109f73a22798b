// BENCHMARKS.md and the JSON results document, written from one `compare` run.
import Foundation

struct ReportContext {
    var command: String
    var started: Date
    var finished: Date
    var uptimeStart: String
    var uptimeEnd: String
    var loadStart: Double
    var loadEnd: Double
    var machine: [(String, String)]
    var datasets: [Dataset]
    var runs: [EngineRun]
    var notes: [String]
    var lookups: Int
    var scans: Int
    var colds: Int
    var maxOthers: Double
    var quick: Bool

    func run(_ dataset: String, _ engine: String) -> EngineRun? {
        runs.first { $0.dataset == dataset && $0.engine == engine }
    }
    func value(_ dataset: String, _ engine: String, _ key: String) -> Double? {
        guard let v = run(dataset, engine)?.figures[key] else { return nil }
        return (v as? NSNumber)?.doubleValue
    }
    /// The data set the headline and the targets use: the largest "study" one (else the largest).
    var primary: Dataset? {
        datasets.filter { $0.profile == "study" }.max { $0.entries < $1.entries } ?? datasets.max { $0.entries < $1.entries }
    }
    func engines(in dataset: String) -> [String] {
        engineNames.filter { run(dataset, $0) != nil }
    }
}

// MARK: formatting

func fmtNs(_ v: Double?) -> String {
    guard let v else { return "–" }
    if v >= 1_000_000 { return String(format: "%.2f ms", v / 1e6) }
    if v >= 10_000 { return String(format: "%.1f µs", v / 1e3) }
    if v >= 1_000 { return String(format: "%.2f µs", v / 1e3) }
    return String(format: "%.0f ns", v)
}
func fmtUs(_ v: Double?) -> String { v.map { fmtNs($0 * 1e3) } ?? "–" }
func fmtInt(_ v: Double?) -> String {
    guard let v else { return "–" }
    let f = NumberFormatter()
    f.numberStyle = .decimal
    f.groupingSeparator = ","
    f.usesGroupingSeparator = true
    return f.string(from: NSNumber(value: Int(v.rounded()))) ?? "\(Int(v))"
}
func fmtBytes(_ v: Double?) -> String {
    guard let v else { return "–" }
    if v >= 1_000_000 { return String(format: "%.1f MB", v / 1e6) }
    if v >= 10_000 { return String(format: "%.1f kB", v / 1e3) }
    return "\(fmtInt(v)) B"
}
func fmtRate(_ v: Double?) -> String {
    guard let v else { return "–" }
    return v >= 1e6 ? String(format: "%.1f M/s", v / 1e6) : String(format: "%.0f k/s", v / 1e3)
}
func fmtS(_ v: Double?) -> String { v.map { $0 < 1 ? String(format: "%.0f ms", $0 * 1000) : String(format: "%.2f s", $0) } ?? "–" }
func fmtRatio(_ a: Double?, _ b: Double?) -> String {
    guard let a, let b, b > 0, a > 0 else { return "–" }
    let r = a / b
    return r >= 10 ? String(format: "%.0f×", r) : r >= 0.1 ? String(format: "%.2f×", r) : String(format: "%.3f×", r)
}
func datasetTitle(_ d: Dataset) -> String { "\(d.profile) profile, \(fmtInt(Double(d.entries))) entries" }

// MARK: Markdown

func markdown(_ c: ReportContext) -> String {
    var s = ""
    let iso = ISO8601DateFormatter()
    iso.formatOptions = [.withFullDate, .withTime, .withColonSeparatorInTime, .withSpaceBetweenDateAndTime]
    let minutes = c.finished.timeIntervalSince(c.started) / 60
    s += """
        # Benchmarks

        CallerID side by side with the formats a caller-ID team would pick instead — SQLite, LMDB,
        the naive `[uint16 size][uint64 phone][name]` stream a real deployment shipped, and TSV
        compressed with LZ4 — on the same generated directories, in one run. Every figure on this
        page comes from the one command below; the page is generated, do not edit it by hand.

        ```sh
        \(c.command)
        ```

        - Date: \(iso.string(from: c.started)) UTC, \(String(format: "%.0f", minutes)) minutes.
        - Load: `\(c.uptimeStart)` before, `\(c.uptimeEnd)` after. \(c.quick
            ? "Quick mode (smoke test): small sizes, few lookups, no re-runs; the figures are noisy."
            : "Each engine runs in a process of its own. The harness measures how busy other processes kept the CPUs during each run (`/proc/stat` minus the engine's own CPU time); a run disturbed by more than \(String(format: "%.2f", c.maxOthers)) of a core on average is repeated, up to 4 times, and the least disturbed run is kept (`attempts` and `other_cores` in docs/benchmarks.json; this run's worst kept value: \(String(format: "%.2f", c.runs.map(\.others).max() ?? 0)) cores).")

        """
    for (k, v) in c.machine { s += "- \(k.prefix(1).uppercased() + k.dropFirst()): \(v)\n" }
    s += "\n"
    if !c.notes.isEmpty {
        s += "Notes from this run:\n\n" + c.notes.map { "- \($0)\n" }.joined() + "\n"
    }

    // Data.
    s += """
        ## Data

        `tools/gen_directory.py --profile PROFILE --entries N --seed 1` (TSV, shuffled rows; MB and kB
        are 10⁶ and 10³ bytes on this page);
        characteristics from `tools/data_stats.py` (empirical entropies in bits per entry; a repeated
        number keeps its last row). The **study** profile is calibrated to the study of BRIEF.md §4;
        **default** is the generator's original data.

        | data set | TSV | TSV B/entry | key-gap entropy | gap = 1 | label entropy | category entropy | distinct labels | distinct label bytes | LZ4HC of those | floor B/entry |
        |---|---|---|---|---|---|---|---|---|---|---|
        | study of BRIEF §4 (published) | 133 MB | 33 | 10.8 bits | | 7.8 bits | | | 4.3 MB | 1.2 MB | ~2.6 |

        """
    for d in c.datasets {
        func st(_ k: String) -> Double? { (d.stats[k] as? NSNumber)?.doubleValue }
        s += "| \(datasetTitle(d)) | \(fmtBytes(st("tsv_bytes"))) | \(st("tsv_bytes_per_entry").map { String(format: "%.1f", $0) } ?? "–") | "
        s += "\(st("key_gap_entropy_bits").map { String(format: "%.2f bits", $0) } ?? "–") | \(st("gap1_share").map { String(format: "%.0f%%", $0 * 100) } ?? "–") | "
        s += "\(st("label_entropy_bits").map { String(format: "%.2f bits", $0) } ?? "–") | \(st("category_entropy_bits").map { String(format: "%.2f bits", $0) } ?? "–") | "
        s += "\(fmtInt(st("distinct_labels"))) | \(fmtBytes(st("distinct_label_bytes"))) | \(fmtBytes(st("label_text_lz4hc_bytes"))) | "
        s += "\(st("floor_bytes_per_entry").map { String(format: "%.2f", $0) } ?? "–") |\n"
    }
    s += """

        The floor is (key-gap + label + category entropy) / 8 plus the LZ4HC-compressed distinct label
        text per entry: a rough lower bound for any format that stores this information.

        """

    guard let p = c.primary else { return s + "\nNo data set was measured.\n" }
    let pk = p.key
    let engines = c.engines(in: pk)
    let peers = engines.filter { !$0.hasPrefix("callerid") }
    let cid = "callerid"
    func v(_ e: String, _ k: String, _ d: String? = nil) -> Double? { c.value(d ?? pk, e, k) }

    // Headline.
    s += """

        ## Headline: \(datasetTitle(p))

        Ratios are CallerID (Swift API) ÷ engine: below 1 CallerID is smaller or faster, except for the
        scan rate, where above 1 CallerID is faster. Lookups: random present numbers, label and category
        fetched, file hot in the page cache, per-lookup time of batches of 256 (p50 over
        \(fmtInt(Double(c.lookups / 256))) batches). "Label cold": present numbers whose label is not
        among CallerID's hot (raw) labels, the same numbers for every engine.

        | engine | B/entry | size ratio | lookup p50 | p99 | p50 ratio | not found p50 | label cold p50 | label cold ratio | scan (labels) | scan ratio | scan heap peak | build from TSV | open | cold open + first lookup |
        |---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|

        """
    for e in engines {
        s += "| \(engineTitles[e] ?? e) | \(v(e, "bytes_per_entry").map { String(format: "%.2f", $0) } ?? "–") | "
        s += "\(e == cid ? "" : fmtRatio(v(cid, "bytes_per_entry"), v(e, "bytes_per_entry"))) | "
        s += "\(fmtNs(v(e, "lookup_p50_ns"))) | \(fmtNs(v(e, "lookup_p99_ns"))) | \(e == cid ? "" : fmtRatio(v(cid, "lookup_p50_ns"), v(e, "lookup_p50_ns"))) | "
        s += "\(fmtNs(v(e, "miss_p50_ns"))) | \(fmtNs(v(e, "cold_label_p50_ns"))) | \(e == cid ? "" : fmtRatio(v(cid, "cold_label_p50_ns"), v(e, "cold_label_p50_ns"))) | "
        s += "\(fmtRate(v(e, "scan_entries_per_s"))) | \(e == cid ? "" : fmtRatio(v(cid, "scan_entries_per_s"), v(e, "scan_entries_per_s"))) | "
        s += "\(fmtBytes(v(e, "scan_heap_peak_bytes"))) | \(fmtS(v(e, "build_s"))) | \(fmtUs(v(e, "open_us"))) | \(fmtUs(v(e, "cold_open_and_lookup_us"))) |\n"
    }

    // Targets.
    s += format31TargetsSection(c, p)
    s += targetsSection(c, p)
    s += lossesSection(c, p)

    // Per-figure tables.
    s += "\n## Size\n\nFile bytes (all files of the database). Ratio: CallerID ÷ engine (below 1: CallerID is smaller).\n\n"
    for d in c.datasets {
        s += "\n**\(datasetTitle(d))**\n\n| engine | bytes | B/entry | CallerID ÷ engine |\n|---|---|---|---|\n"
        for e in c.engines(in: d.key) where e != "callerid-cabi" {
            s += "| \(engineTitles[e] ?? e) | \(fmtInt(c.value(d.key, e, "bytes"))) | \(c.value(d.key, e, "bytes_per_entry").map { String(format: "%.3f", $0) } ?? "–") | "
            s += "\(e == cid ? "" : fmtRatio(c.value(d.key, cid, "bytes"), c.value(d.key, e, "bytes"))) |\n"
        }
    }

    s += "\n## Build time from TSV\n\nWall time from the shuffled TSV to a durable file (each engine parses, sorts, writes and fsyncs). Ratio: CallerID ÷ engine.\n\n"
    s += "| engine | " + c.datasets.map { "\($0.profile) \(fmtInt(Double($0.entries)))" }.joined(separator: " | ") + " | ratio (\(pk)) |\n"
    s += "|---|" + c.datasets.map { _ in "---|" }.joined() + "---|\n"
    for e in engines where e != "callerid-cabi" {
        s += "| \(engineTitles[e] ?? e) | " + c.datasets.map { fmtS(c.value($0.key, e, "build_s")) }.joined(separator: " | ")
        s += " | \(e == cid ? "" : fmtRatio(v(cid, "build_s"), v(e, "build_s"))) |\n"
    }

    s += """

        ## Point lookup, found (\(datasetTitle(p)))

        Random present numbers (the same \(fmtInt(Double(c.lookups))) for every engine), label bytes and
        category fetched, file hot in the page cache; per-lookup time of each batch of 256, percentiles
        over the batches. "One by one" times each of the first 200,000 lookups alone (the clock pair
        itself costs about \(fmtNs(v(cid, "clock_overhead_ns"))), included). Ratio: CallerID ÷ engine at p50.

        | engine | p50 | p99 | p99.9 | one by one p50 | p99 | p99.9 | heap added by lookups | p50 ratio |
        |---|---|---|---|---|---|---|---|---|

        """
    for e in engines {
        s += "| \(engineTitles[e] ?? e) | \(fmtNs(v(e, "lookup_p50_ns"))) | \(fmtNs(v(e, "lookup_p99_ns"))) | \(fmtNs(v(e, "lookup_p999_ns"))) | "
        s += "\(fmtNs(v(e, "single_p50_ns"))) | \(fmtNs(v(e, "single_p99_ns"))) | \(fmtNs(v(e, "single_p999_ns"))) | \(fmtBytes(v(e, "lookup_heap_bytes"))) | "
        s += "\(e == cid ? "" : fmtRatio(v(cid, "lookup_p50_ns"), v(e, "lookup_p50_ns"))) |\n"
    }
    s += "\n## Point lookup, not found (\(datasetTitle(p)))\n\nHalf the numbers are just above a present number, half up to a million above it.\n\n"
    s += "| engine | p50 | p99 | p99.9 | p50 ratio |\n|---|---|---|---|---|\n"
    for e in engines {
        s += "| \(engineTitles[e] ?? e) | \(fmtNs(v(e, "miss_p50_ns"))) | \(fmtNs(v(e, "miss_p99_ns"))) | \(fmtNs(v(e, "miss_p999_ns"))) | "
        s += "\(e == cid ? "" : fmtRatio(v(cid, "miss_p50_ns"), v(e, "miss_p50_ns"))) |\n"
    }
    if engines.contains(where: { v($0, "cold_label_p50_ns") != nil }) {
        s += """

            ## Point lookup, label cold (\(datasetTitle(p)))

            Present numbers whose label is cold in CallerID's file: not among the hot labels it stores
            raw (in a 3.1 file the lookup decodes the label's LZ4 group; in 2.0 and 3.0 files it decodes
            the symbol-coded label; every label is raw in "every label raw"). The probes are the entries
            whose value (label, category) is used by at most two entries of the directory, drawn only
            when the directory's most used values that fill 64 KiB are each used at least 8 times, so
            that values this rare are never hot (`Probes.coldLabelCandidates`; `cold_probes_hot` in
            docs/benchmarks.json is CallerID's check on its file, 0 when every probe is cold): a subset
            of the cold entries, the rarest values; \(fmtInt(v(cid, "cold_probes_distinct"))) distinct numbers drawn
            \(fmtInt(v(cid, "cold_lookups"))) times, the same for every engine; batches of 256 as above.\(coldLabelFacts(c, pk).isEmpty ? "" : " CallerID: " + coldLabelFacts(c, pk).joined(separator: "; ") + ".")

            | engine | p50 | p99 | p99.9 | found p50 (all numbers) | p50 ratio |
            |---|---|---|---|---|---|

            """
        for e in engines {
            s += "| \(engineTitles[e] ?? e) | \(fmtNs(v(e, "cold_label_p50_ns"))) | \(fmtNs(v(e, "cold_label_p99_ns"))) | \(fmtNs(v(e, "cold_label_p999_ns"))) | "
            s += "\(fmtNs(v(e, "lookup_p50_ns"))) | \(e == cid ? "" : fmtRatio(v(cid, "cold_label_p50_ns"), v(e, "cold_label_p50_ns"))) |\n"
        }
    }

    s += """

        ## Open and cold first lookup (\(datasetTitle(p)))

        Open: median of 7 opens with the file hot. Cold: the file's pages are dropped from the page
        cache (`fsync`, `posix_fadvise(POSIX_FADV_DONTNEED)`, checked with `mincore`), then the database is
        opened and one present number looked up; median of \(c.colds) (max in brackets). "Open heap" is the heap
        an open database holds.

        | engine | open (hot) | open (cold) | first lookup (cold) | open + first lookup (cold) | open heap | ratio (open + first lookup) |
        |---|---|---|---|---|---|---|

        """
    for e in engines {
        s += "| \(engineTitles[e] ?? e) | \(fmtUs(v(e, "open_us"))) | \(fmtUs(v(e, "open_cold_us"))) | "
        s += "\(fmtUs(v(e, "cold_first_lookup_us"))) (\(fmtUs(v(e, "cold_first_lookup_max_us")))) | \(fmtUs(v(e, "cold_open_and_lookup_us"))) | \(fmtBytes(v(e, "open_heap_bytes"))) | "
        s += "\(e == cid ? "" : fmtRatio(v(cid, "cold_open_and_lookup_us"), v(e, "cold_open_and_lookup_us"))) |\n"
    }

    s += verifySection(c)

    s += """

        ## Full ascending scan with labels (\(datasetTitle(p)))

        Every entry in ascending order with its number, label bytes and category, on a freshly opened
        database with the file hot; median of \(c.scans) scans. Heap peak: `mallinfo2` (in-use bytes) sampled
        every 65,536 entries and at the end, minus the value before the scan. Ratio: CallerID ÷ engine in
        entries/s (above 1: CallerID is faster).

        | engine | entries/s | time | heap peak | rate ratio |
        |---|---|---|---|---|

        """
    for e in engines {
        s += "| \(engineTitles[e] ?? e) | \(fmtRate(v(e, "scan_entries_per_s"))) | \(v(e, "scan_ms").map { String(format: "%.1f ms", $0) } ?? "–") | "
        s += "\(fmtBytes(v(e, "scan_heap_peak_bytes"))) | \(e == cid ? "" : fmtRatio(v(cid, "scan_entries_per_s"), v(e, "scan_entries_per_s"))) |\n"
    }

    // Growth.
    let study = c.datasets.filter { $0.profile == p.profile }
    if study.count > 1 {
        s += "\n## Growth (\(p.profile) profile)\n\n| engine | figure | " + study.map { fmtInt(Double($0.entries)) }.joined(separator: " | ") + " |\n"
        s += "|---|---|" + study.map { _ in "---|" }.joined() + "\n"
        for e in engines {
            s += "| \(engineTitles[e] ?? e) | B/entry | " + study.map { d in c.value(d.key, e, "bytes_per_entry").map { String(format: "%.2f", $0) } ?? "–" }.joined(separator: " | ") + " |\n"
            s += "| | lookup p50 | " + study.map { fmtNs(c.value($0.key, e, "lookup_p50_ns")) }.joined(separator: " | ") + " |\n"
            s += "| | scan | " + study.map { fmtRate(c.value($0.key, e, "scan_entries_per_s")) }.joined(separator: " | ") + " |\n"
            s += "| | scan heap peak | " + study.map { fmtBytes(c.value($0.key, e, "scan_heap_peak_bytes")) }.joined(separator: " | ") + " |\n"
        }
    }

    // Other data sets, in brief.
    for d in c.datasets where d.profile != p.profile {
        s += "\n## \(datasetTitle(d)): all figures in brief\n\n"
        s += "| engine | B/entry | lookup p50 | p99 | not found p50 | label cold p50 | scan | scan heap peak | build | cold open + first lookup |\n|---|---|---|---|---|---|---|---|---|---|\n"
        for e in c.engines(in: d.key) {
            func w(_ k: String) -> Double? { c.value(d.key, e, k) }
            s += "| \(engineTitles[e] ?? e) | \(w("bytes_per_entry").map { String(format: "%.2f", $0) } ?? "–") | \(fmtNs(w("lookup_p50_ns"))) | \(fmtNs(w("lookup_p99_ns"))) | "
            s += "\(fmtNs(w("miss_p50_ns"))) | \(fmtNs(w("cold_label_p50_ns"))) | \(fmtRate(w("scan_entries_per_s"))) | \(fmtBytes(w("scan_heap_peak_bytes"))) | \(fmtS(w("build_s"))) | \(fmtUs(w("cold_open_and_lookup_us"))) |\n"
        }
    }

    s += methodSection(c)
    return s
}

func targetsSection(_ c: ReportContext, _ p: Dataset) -> String {
    let pk = p.key
    func v(_ e: String, _ k: String) -> Double? { c.value(pk, e, k) }
    var rows: [(String, String, String, Bool?)] = []
    let bpe = v("callerid", "bytes_per_entry")
    rows.append(("size", "≤ 4.0 B/entry on the study's data", bpe.map { String(format: "%.2f B/entry (%@)", $0, datasetTitle(p)) } ?? "–", bpe.map { $0 <= 4.0 }))
    rows.append(("size", "≤ ½ of RocksDB-LZ4 (study: 8.3 B/entry; RocksDB is not run here)",
                 bpe.map { String(format: "%.2f vs ≤ 4.15", $0) } ?? "–", bpe.map { $0 <= 8.3 / 2 }))
    if let sq = v("sqlite", "bytes_per_entry"), let bpe {
        rows.append(("size", "≤ ¼ of SQLite", String(format: "%.2f vs ¼ × %.2f = %.2f", bpe, sq, sq / 4), bpe <= sq / 4))
    }
    let p50 = v("callerid", "lookup_p50_ns")
    rows.append(("lookup, found, hot", "p50 ≤ 250 ns", fmtNs(p50), p50.map { $0 <= 250 }))
    if let sq = v("sqlite", "lookup_p50_ns"), let p50 {
        rows.append(("lookup, found, hot", "≥ 20× faster than SQLite", String(format: "%.1f× (SQLite p50 %@)", sq / p50, fmtNs(sq)), sq / p50 >= 20))
    }
    if let lm = v("lmdb", "lookup_p50_ns"), let p50 {
        rows.append(("lookup, found, hot", "≥ 4× faster than LMDB", String(format: "%.2f× (LMDB p50 %@)", lm / p50, fmtNs(lm)), lm / p50 >= 4))
    }
    let rate = v("callerid", "scan_entries_per_s"), ms = v("callerid", "scan_ms")
    rows.append(("full ascending enumeration, labels", "≥ 200 M entries/s", fmtRate(rate), rate.map { $0 >= 200e6 }))
    if let ms, let rate {
        let for4M = 4_000_000 / rate * 1000
        rows.append(("full ascending enumeration, labels", "4M entries in ≤ 20 ms", String(format: "%.1f ms for %@ entries (%.1f ms per 4M)", ms, fmtInt(Double(p.entries)), for4M), for4M <= 20))
    }
    let heaps = c.datasets.compactMap { c.value($0.key, "callerid", "scan_heap_peak_bytes") }
    if let worst = heaps.max() {
        rows.append(("heap during enumeration", "≤ 64 KB above baseline, any size", "\(fmtBytes(worst)) (largest over \(heaps.count) data sets)", worst <= 65536))
    }
    let build = v("callerid", "build_s")
    let tsvMB = ((p.stats["tsv_bytes"] as? NSNumber)?.doubleValue ?? 0) / 1e6
    rows.append(("build", "≤ 3 s wall from the 133 MB TSV, 2 cores", build.map { String(format: "%.2f s from a %.0f MB TSV", $0, tsvMB) } ?? "–", build.map { $0 <= 3 }))

    var s = "\n## BRIEF.md §5 targets (\(datasetTitle(p)))\n\n| figure | target | measured | verdict |\n|---|---|---|---|\n"
    for r in rows { s += "| \(r.0) | \(r.1) | \(r.2) | \(r.3.map { $0 ? "met" : "**MISSED**" } ?? "–") |\n" }
    let missed = rows.filter { $0.3 == false }
    s += missed.isEmpty
        ? "\nEvery target is met on this data.\n"
        : "\nCallerID misses \(missed.count) of \(rows.count) targets: " + missed.map { "\($0.0) (\($0.1))" }.joined(separator: "; ") + ".\n"
    return s
}

/// A ratio or a factor: 0.25×, 1.05×, 0.043×, 51.3×.
func fmtX(_ r: Double) -> String { String(format: r >= 10 ? "%.1f×" : r >= 0.1 || r == 0 ? "%.2f×" : "%.3f×", r) }

/// The targets of format 3.1 (cold labels in LZ4 groups), each met or missed by how much, from this
/// run: on the study profile's 4,000,000-entry data set (else the largest study one, else the
/// headline data set) and, for the size against the floor, on the default profile's too.
func format31TargetsSection(_ c: ReportContext, _ p: Dataset) -> String {
    let wanted = 4_000_000
    func pick(_ profile: String) -> Dataset? {
        let ds = c.datasets.filter { $0.profile == profile }
        return ds.first { $0.entries == wanted } ?? ds.max { $0.entries < $1.entries }
    }
    let study = pick("study") ?? p
    let sk = study.key
    func v(_ e: String, _ k: String, _ d: String? = nil) -> Double? { c.value(d ?? sk, e, k) }
    func stat(_ d: Dataset, _ k: String) -> Double? { (d.stats[k] as? NSNumber)?.doubleValue }

    struct Row {
        var figure: String
        var target: String
        var measured: String
        var value: Double?  // nil: not measured in this run
        var bound: Double
        var atMost: Bool
        var boundText: String
        var fmt: (Double) -> String
        var met: Bool? { value.map { atMost ? $0 <= bound : $0 >= bound } }
        /// "4.76 B/entry vs ≤ 3.20 B/entry", "0.43× vs ≥ 0.90×".
        var miss: String { value.map { "\(fmt($0)) vs \(atMost ? "≤" : "≥") \(boundText)" } ?? "" }
        var verdict: String {
            guard let met else { return "–" }
            return met ? "met" : "**MISSED** (\(miss))"
        }
    }
    var rows: [Row] = []
    func ratioRow(_ figure: String, _ target: String, _ a: Double?, _ b: Double?, _ aName: String, _ bName: String,
                  _ bound: Double, atMost: Bool = true, fmt f: (Double?) -> String) {
        if let a, let b, a > 0, b > 0 {
            rows.append(Row(figure: figure, target: target, measured: "\(f(a)) vs \(bName) \(f(b)): \(fmtX(a / b))",
                            value: a / b, bound: bound, atMost: atMost, boundText: fmtX(bound), fmt: fmtX))
        } else {
            let missing = [a == nil ? aName : nil, b == nil ? bName : nil].compactMap { $0 }
            rows.append(Row(figure: figure, target: target,
                            measured: missing.isEmpty ? "no figure" : "not measured (\(missing.joined(separator: ", ")))",
                            value: nil, bound: bound, atMost: atMost, boundText: fmtX(bound), fmt: fmtX))
        }
    }
    // Size.
    let floorBound = 1.05, floorTarget = "≤ 1.05× the floor"
    let fmtX3: (Double) -> String = { String(format: "%.3f×", $0) }
    for profile in ["study", "default"] {
        let figure = "size vs the data_stats floor, \(profile) profile"
        guard let d = profile == "study" ? study : pick(profile) else {
            rows.append(Row(figure: figure, target: floorTarget, measured: "no \(profile) data set in this run",
                            value: nil, bound: floorBound, atMost: true, boundText: fmtX(floorBound), fmt: fmtX))
            continue
        }
        let mine = c.value(d.key, "callerid", "bytes_per_entry"), floor = stat(d, "floor_bytes_per_entry")
        if let mine, let floor, floor > 0 {
            let where_ = d.key == sk ? "" : " (\(datasetTitle(d)))"
            rows.append(Row(figure: figure, target: floorTarget,
                            measured: String(format: "%.3f vs floor %.2f B/entry: %@%@", mine, floor, fmtX3(mine / floor), where_),
                            value: mine / floor, bound: floorBound, atMost: true, boundText: fmtX(floorBound), fmt: fmtX3))
        } else {
            rows.append(Row(figure: figure, target: floorTarget,
                            measured: "not measured (\(mine == nil ? "callerid on \(d.key)" : "floor of \(d.key)"))",
                            value: nil, bound: floorBound, atMost: true, boundText: fmtX(floorBound), fmt: fmtX))
        }
    }

    // Lookups.
    let ns: (Double?) -> String = { fmtNs($0) }
    ratioRow("lookup, found, p50", "≤ 0.50× LMDB's p50", v("callerid", "lookup_p50_ns"), v("lmdb", "lookup_p50_ns"), "callerid", "LMDB", 0.5, fmt: ns)
    ratioRow("lookup, not found, p50", "≤ 0.35× LMDB's p50", v("callerid", "miss_p50_ns"), v("lmdb", "miss_p50_ns"), "callerid", "LMDB", 0.35, fmt: ns)
    ratioRow("lookup, label cold, p50", "≤ 1.0× LMDB's p50 on the same numbers (label in an LZ4 group)", v("callerid", "cold_label_p50_ns"),
             v("lmdb", "cold_label_p50_ns"), "callerid", "LMDB", 1.0, fmt: ns)
    if rows[rows.count - 1].value != nil { rows[rows.count - 1].measured += coldLabelNote(c, sk) }
    ratioRow("C ABI lookup, p50", "≤ 1.05× the Swift lookup", v("callerid-cabi", "lookup_p50_ns"), v("callerid", "lookup_p50_ns"), "callerid-cabi", "Swift", 1.05, fmt: ns)

    // Scans.
    let rate: (Double?) -> String = { fmtRate($0) }
    ratioRow("batch scan with labels (Swift API)", "≥ 1.0× LMDB's scan rate", v("callerid", "scan_entries_per_s"), v("lmdb", "scan_entries_per_s"),
             "callerid", "LMDB", 1.0, atMost: false, fmt: rate)
    ratioRow("batch scan with labels (C ABI)", "≥ 1.0× LMDB's scan rate", v("callerid-cabi", "scan_entries_per_s"), v("lmdb", "scan_entries_per_s"),
             "callerid-cabi", "LMDB", 1.0, atMost: false, fmt: rate)
    var worstHeap: (bytes: Double, engine: String, dataset: Dataset)?
    var heapRuns = 0
    for d in c.datasets {
        for e in ["callerid", "callerid-raw", "callerid-cabi"] {
            guard let h = c.value(d.key, e, "scan_heap_peak_bytes") else { continue }
            heapRuns += 1
            if worstHeap == nil || h > worstHeap!.bytes { worstHeap = (h, e, d) }
        }
    }
    let heapFmt: (Double) -> String = { fmtBytes($0) }
    rows.append(Row(figure: "scan heap", target: "≤ 64 KiB above baseline, whatever the file",
                    measured: worstHeap.map { "\(fmtBytes($0.bytes)): the largest of \(heapRuns) scans (\(engineTitles[$0.engine] ?? $0.engine), \(datasetTitle($0.dataset)))" } ?? "not measured",
                    value: worstHeap?.bytes, bound: 65536, atMost: true, boundText: "64 KiB", fmt: heapFmt))
    ratioRow("C ABI scan", "≥ 0.9× the Swift scan", v("callerid-cabi", "scan_entries_per_s"), v("callerid", "scan_entries_per_s"),
             "callerid-cabi", "Swift", 0.9, atMost: false, fmt: rate)

    // Open, build.
    let us: (Double?) -> String = { fmtUs($0) }
    ratioRow("open (hot)", "≤ 2× LMDB's", v("callerid", "open_us"), v("lmdb", "open_us"), "callerid", "LMDB", 2, fmt: us)
    ratioRow("cold open + first lookup", "≤ LMDB's", v("callerid", "cold_open_and_lookup_us"), v("lmdb", "cold_open_and_lookup_us"), "callerid", "LMDB", 1, fmt: us)
    ratioRow("build from TSV", "≤ 0.75× LMDB's", v("callerid", "build_s"), v("lmdb", "build_s"), "callerid", "LMDB", 0.75, fmt: { fmtS($0) })

    // Verify.
    let gbps: (Double) -> String = { String(format: "%.2f GB/s", $0 / 1e9) }
    if let t = v("callerid", "verify_s"), let bytes = v("callerid", "bytes"), t > 0 {
        rows.append(Row(figure: "verify", target: "≥ 1 GB/s on the study file (file bytes / verify time)",
                        measured: "\(gbps(bytes / t)) (\(fmtBytes(bytes)) in \(fmtUs(t * 1e6)))",
                        value: bytes / t, bound: 1e9, atMost: false, boundText: "1 GB/s", fmt: gbps))
    } else {
        rows.append(Row(figure: "verify", target: "≥ 1 GB/s on the study file (file bytes / verify time)", measured: "not measured",
                        value: nil, bound: 1e9, atMost: false, boundText: "1 GB/s", fmt: gbps))
    }

    // Heap kept by point lookups.
    // The target is the Swift API's figure; the C ABI's is shown beside it (cid_lookup hands out
    // cold labels from a per-thread buffer that outlives the call, so it may keep some).
    let kept = v("callerid", "lookup_heap_bytes"), keptC = v("callerid-cabi", "lookup_heap_bytes")
    rows.append(Row(figure: "heap of point lookups", target: "0 bytes kept after lookups (Swift API, `lookup_heap_bytes`)",
                    measured: (kept.map { fmtBytes($0) } ?? "not measured") + (keptC.map { "; through the C ABI \(fmtBytes($0))" } ?? ""),
                    value: kept, bound: 0, atMost: true, boundText: "0 B", fmt: heapFmt))

    var s = "\n## Format 3.1 targets\n\n"
    if study.profile == "study" && study.entries == wanted {
        s += "From this run, on the \(datasetTitle(study)) data set"
    } else {
        s += "The issue's data set (study profile, \(fmtInt(Double(wanted))) entries) is not in this run: the targets are evaluated on the \(datasetTitle(study)) data set instead, so the verdicts are indicative only"
    }
    if let d = pick("default"), d.key != sk { s += "; the size against the floor also on the \(datasetTitle(d)) data set" }
    s += ". Ratios are CallerID (Swift API unless named) ÷ the reference; a missed target says by how much.\n\n"
    s += "| figure | target | measured | verdict |\n|---|---|---|---|\n"
    for r in rows { s += "| \(r.figure) | \(r.target) | \(r.measured) | \(r.verdict) |\n" }
    let evaluated = rows.filter { $0.met != nil }
    let missed = evaluated.filter { $0.met == false }
    let unmeasured = rows.filter { $0.met == nil }
    s += "\n"
    s += missed.isEmpty
        ? "Format 3.1 meets all \(evaluated.count) targets measured in this run."
        : "Format 3.1 misses \(missed.count) of \(evaluated.count) targets measured in this run: "
            + missed.map { "\($0.figure) (\($0.miss))" }.joined(separator: "; ") + "."
    if !unmeasured.isEmpty { s += " Not measured: " + unmeasured.map(\.figure).joined(separator: "; ") + "." }
    return s + "\n"
}

/// How CallerID's file coded the cold labels the cold-label probes hit, and whether the probes
/// were all cold in it: " (file 3.1, LZ4 groups of 8 labels)".
func coldLabelNote(_ c: ReportContext, _ dataset: String) -> String {
    let parts = coldLabelFacts(c, dataset)
    return parts.isEmpty ? "" : " (" + parts.joined(separator: "; ") + ")"
}

/// ["file 3.1, LZ4 groups of 8 labels", "**12 of the 111,376 probes are hot in this file**"].
func coldLabelFacts(_ c: ReportContext, _ dataset: String) -> [String] {
    guard let f = c.run(dataset, "callerid")?.figures else { return [] }
    var parts: [String] = []
    if let version = f["format_version"] as? String {
        let coding = f["label_coding"] as? String
        let group = (f["lz4_group_labels"] as? NSNumber)?.intValue ?? 0
        parts.append("file \(version)" + (coding == "lz4" ? ", LZ4 groups of \(group) labels" : coding.map { ", \($0)-coded" } ?? ""))
    }
    if let hot = (f["cold_probes_hot"] as? NSNumber)?.intValue, hot > 0 {
        parts.append("**\(hot) of the \(fmtInt((f["cold_probes_distinct"] as? NSNumber)?.doubleValue)) probes are hot in this file**")
    }
    return parts
}

/// Verify time of the CallerID engines on every data set.
func verifySection(_ c: ReportContext) -> String {
    var lines: [String] = []
    for d in c.datasets {
        for e in ["callerid", "callerid-raw"] {
            guard let t = c.value(d.key, e, "verify_s"), let bytes = c.value(d.key, e, "bytes"), t > 0 else { continue }
            lines.append("| \(datasetTitle(d)) | \(engineTitles[e] ?? e) | \(fmtBytes(bytes)) | \(fmtUs(t * 1e6)) | \(String(format: "%.2f GB/s", bytes / t / 1e9)) | \(fmtRate((c.value(d.key, e, "entries") ?? 0) / t)) |\n")
        }
    }
    guard !lines.isEmpty else { return "" }
    return """

        ## Verify (CallerID)

        `Database.verify()` on the hot file: every section's XXH3-64 checksum, then every structure check
        (block records, value codes, hot and cold labels); median of 3 runs on an open database after the
        scans. Rate: file bytes ÷ verify time.

        | data set | engine | file | verify | bytes/s | entries/s |
        |---|---|---|---|---|---|

        """ + lines.joined()
}

func lossesSection(_ c: ReportContext, _ p: Dataset) -> String {
    let pk = p.key
    let figures: [(String, String, Bool)] = [  // key, name, higher is better
        ("bytes_per_entry", "size", false), ("build_s", "build time", false), ("lookup_p50_ns", "lookup p50", false),
        ("lookup_p99_ns", "lookup p99", false), ("miss_p50_ns", "not-found p50", false), ("cold_label_p50_ns", "label-cold lookup p50", false),
        ("open_us", "open (hot)", false),
        ("cold_open_and_lookup_us", "cold open + first lookup", false), ("scan_entries_per_s", "scan rate", true),
        ("scan_heap_peak_bytes", "scan heap peak", false),
    ]
    var lines: [String] = []
    for e in c.engines(in: pk) where !e.hasPrefix("callerid") {
        var lost: [String] = []
        for (k, name, higher) in figures {
            guard let mine = c.value(pk, "callerid", k), let theirs = c.value(pk, e, k) else { continue }
            let worse = higher ? mine < theirs : mine > theirs
            if worse {
                let fmt: (Double) -> String = k.hasSuffix("_ns") ? { fmtNs($0) } : k.hasSuffix("_us") ? { fmtUs($0) }
                    : k == "scan_entries_per_s" ? { fmtRate($0) } : k == "build_s" ? { fmtS($0) }
                    : k == "bytes_per_entry" ? { String(format: "%.2f B/entry", $0) } : { fmtBytes($0) }
                guard theirs > 0, mine > 0 else {
                    lost.append("\(name) (\(fmt(mine)) vs \(fmt(theirs)))")
                    continue
                }
                let factor = higher ? theirs / mine : mine / theirs
                lost.append("\(name) (\(fmt(mine)) vs \(fmt(theirs)), \(String(format: factor >= 10 ? "%.0f" : "%.2f", factor))× worse\(factor < 1.1 ? ", within 10%" : ""))")
            }
        }
        if !lost.isEmpty { lines.append("- **\(engineTitles[e] ?? e)** beats CallerID on " + lost.joined(separator: "; ") + ".") }
    }
    if let a = c.value(pk, "callerid-cabi", "lookup_p50_ns"), let b = c.value(pk, "callerid", "lookup_p50_ns") {
        lines.append(String(format: "- Through the C ABI a lookup takes %@ at p50 against %@ from Swift (%.2f×); the scan runs at %@ against %@.",
                            fmtNs(a), fmtNs(b), a / b, fmtRate(c.value(pk, "callerid-cabi", "scan_entries_per_s")), fmtRate(c.value(pk, "callerid", "scan_entries_per_s"))))
    }
    var s = "\n## Where CallerID loses (\(datasetTitle(p)))\n\n"
    s += lines.isEmpty ? "CallerID (Swift API) is ahead of every peer on every figure.\n" : "Every figure on which a peer does better than CallerID (Swift API):\n\n" + lines.joined(separator: "\n") + "\n"
    return s
}

func methodSection(_ c: ReportContext) -> String {
    """

    ## How each engine is used

    - **CallerID (Swift API)**: file format 3.1 or 2.0/3.0 (docs/FORMAT.md): one record per block of 256 entries
      (Elias–Fano keys or a run of consecutive numbers, Huffman-coded value ids with sync points), the most frequent ("hot") labels
      stored raw in the mapping (64 KiB of text by default), the other ("cold") labels decoded on access:
      in LZ4 groups of 2^k labels with the hot labels as dictionary (3.1), or coded one by one with a
      symbol table (2.0, 3.0); the default build (`LabelCoding.auto`) keeps the smaller file. `Pipeline.build` (the `lookup build` row loop; `DatabaseBuilder` sorts,
      deduplicates, writes atomically with `fsync`); lookups with `Database.withEntry` (zero-copy label
      view); scan with the batch cursor, `cursor().nextBatch` into an `EntryBatch` of 1,024 entries per
      call; `Database.verify()` for the verify time. **Every label raw** is the same file with
      `BuildOptions.compressLabels = false`: every label hot, nothing to decode.
    - **CallerID (C ABI)**: `libcallerid.so` through `include/callerid.h`, from C
      (`Benchmarks/Sources/callerid-cabi-bench`, which reuses the lookup timing of `examples/c/bench.c`):
      `cid_lookup`; scan with `cid_cursor_open` + `cid_cursor_next_batch`, 1,024 entries per call; it
      reads the file the Swift engine built.
    - **SQLite**: `number INTEGER PRIMARY KEY` (the rowid: one table b-tree with integer keys), rows
      inserted in key order in one transaction through one prepared statement (journal off, synchronous
      off, exclusive lock), one `fsync` at the end. Read-only connection without mutex, `PRAGMA
      mmap_size` covering the file, prepared statements reused with bind/step/reset. **Label table + id**:
      a `labels(id INTEGER PRIMARY KEY, text)` table with ids in order of frequency (small varints for
      frequent labels) and a join per lookup and in the scan.
    - **LMDB**: `MDB_INTEGERKEY`, one file (`MDB_NOSUBDIR`), built with `MDB_APPEND` in key order in one
      write transaction and one forced sync; read with `MDB_RDONLY | MDB_NOLOCK` and one read-only
      transaction reused for every lookup; value = category byte + label inline.
    - **Naive stream**: `[uint16 label size][uint64 number][label]` records in ascending order, nothing
      else (no category, no index, no checksum). A lookup needs an index: this engine builds one in the
      heap when it opens the file (sorted keys + offsets, 12 B/entry), which its open time and open heap show.
    - **TSV + LZ4 / LZ4HC-12**: the TSV lines sorted by number, cut into blocks of ≤ 16 KB of whole lines,
      each compressed independently; a block index (first number and offset per block) at the end. A
      lookup binary-searches the index, decompresses one block and parses its lines.

    Every engine runs in its own process (`callerid-bench engine NAME …`), builds its file, is measured,
    and prints one JSON object; `compare` runs them in turn on the same data and probes. The first
    lookups after the build are a warm-up; before the lookups one full scan makes the whole file hot.

    ## Reproduce

    ```sh
    bash tools/bench.sh                 # this page, docs/benchmarks.json and the charts in docs/
    bash tools/bench.sh --quick         # CI smoke run: 10k and 100k entries, < 60 s, writes nothing here
    swift build -c release --package-path Benchmarks
    Benchmarks/.build/release/callerid-bench compare --json --datasets study:1000000 --engines callerid,lmdb
    Benchmarks/.build/release/callerid-bench /tmp/d.tsv --json --db /tmp/d.cid      # CallerID only
    valgrind --tool=massif --massif-out-file=/tmp/massif.out \\
        Benchmarks/.build/release/callerid-bench --scan-only --db /tmp/d.cid && ms_print /tmp/massif.out | head -30
    ```

    """
}

func headlineOnly(_ c: ReportContext) -> String {
    var s = ""
    for d in c.datasets {
        s += "\(datasetTitle(d))\n"
        s += "engine".padding(toLength: 34, withPad: " ", startingAt: 0) + "B/entry   lookup p50   p99        cold p50   scan        heap      build\n"
        for e in c.engines(in: d.key) {
            func w(_ k: String) -> Double? { c.value(d.key, e, k) }
            s += (engineTitles[e] ?? e).padding(toLength: 34, withPad: " ", startingAt: 0)
            s += (w("bytes_per_entry").map { String(format: "%.2f", $0) } ?? "–").padding(toLength: 10, withPad: " ", startingAt: 0)
            s += fmtNs(w("lookup_p50_ns")).padding(toLength: 13, withPad: " ", startingAt: 0)
            s += fmtNs(w("lookup_p99_ns")).padding(toLength: 11, withPad: " ", startingAt: 0)
            s += fmtNs(w("cold_label_p50_ns")).padding(toLength: 11, withPad: " ", startingAt: 0)
            s += fmtRate(w("scan_entries_per_s")).padding(toLength: 12, withPad: " ", startingAt: 0)
            s += fmtBytes(w("scan_heap_peak_bytes")).padding(toLength: 10, withPad: " ", startingAt: 0)
            s += fmtS(w("build_s")) + "\n"
        }
        s += "\n"
    }
    return s + c.notes.joined(separator: "\n")
}

/// The machine-readable document the charts are drawn from (docs/benchmarks.json).
func resultsJSON(_ c: ReportContext) -> String {
    var s = "{\n"
    let iso = ISO8601DateFormatter()
    s += "  \"date\": \"\(iso.string(from: c.started))\",\n"
    s += "  \"command\": \"\(jsonEscape(c.command))\",\n"
    s += "  \"uptime_before\": \"\(jsonEscape(c.uptimeStart))\",\n  \"uptime_after\": \"\(jsonEscape(c.uptimeEnd))\",\n"
    s += "  \"machine\": {" + c.machine.map { "\"\(jsonEscape($0.0))\": \"\(jsonEscape($0.1))\"" }.joined(separator: ", ") + "},\n"
    s += "  \"primary\": \"\(c.primary?.key ?? "")\",\n"
    s += "  \"titles\": {" + engineNames.map { "\"\($0)\": \"\(jsonEscape(engineTitles[$0] ?? $0))\"" }.joined(separator: ", ") + "},\n"
    s += "  \"datasets\": [\n" + c.datasets.map { d -> String in
        let stats = (try? JSONSerialization.data(withJSONObject: d.stats, options: [.sortedKeys])).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return "    {\"key\": \"\(d.key)\", \"profile\": \"\(d.profile)\", \"entries\": \(d.entries), \"stats\": \(stats)}"
    }.joined(separator: ",\n") + "\n  ],\n"
    s += "  \"results\": [\n" + c.runs.map { r in
        "    " + r.json.dropLast() + ",\"dataset\":\"\(r.dataset)\",\"attempts\":\(r.attempts),\"other_cores\":\(String(format: "%.2f", r.others)),\"load_avg\":\(String(format: "%.2f", max(r.loadBefore, r.loadAfter)))}"
    }.joined(separator: ",\n") + "\n  ]\n}\n"
    return s
}
