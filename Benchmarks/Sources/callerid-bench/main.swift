// callerid-bench: measures a CallerID database built from a TSV directory.
//
//   swift run -c release --package-path Benchmarks callerid-bench INPUT.tsv [--json] [--lookups N]
//       [--db OUT] [--existing] [--raw-labels] [--labels-per-chunk N] [--block-size N]
//   callerid-bench --scan-only --db FILE
//
// Figures: build time, bytes/entry, open time, point lookup latency (found / not found,
// random keys, hot page cache; p50/p99/p99.9 over batches of 256), full ascending scan with
// labels resolved (entries/s) and the heap peak above baseline during the scan (mallinfo2).
import CallerID
import Foundation

struct Stopwatch {
    static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

let args = Array(CommandLine.arguments.dropFirst())

// --scan-only --db FILE: open and scan once with labels resolved, nothing else; for
// `valgrind --tool=massif`, whose peak then shows the whole process heap during a scan.
if args.contains("--scan-only"), let i = args.firstIndex(of: "--db"), i + 1 < args.count {
    let db = try Database(path: args[i + 1])
    var cursor = db.cursor()
    var seen = 0, labelBytes = 0
    try cursor.forEach { view in
        seen &+= 1
        labelBytes &+= view.labelBytes.count
        return true
    }
    print("scanned \(seen) entries, \(labelBytes) label bytes")
    exit(0)
}
guard let input = args.first(where: { !$0.hasPrefix("--") }) else {
    FileHandle.standardError.write(Data("usage: callerid-bench INPUT.tsv [--json] [--lookups N] [--db OUT]\n".utf8))
    exit(64)
}
let json = args.contains("--json")
let lookupCount = args.firstIndex(of: "--lookups").map { Int(args[$0 + 1])! } ?? 2_000_000
let dbPath = args.firstIndex(of: "--db").map { args[$0 + 1] } ?? "/tmp/callerid-bench.cid"

func log(_ s: String) { FileHandle.standardError.write(Data((s + "\n").utf8)) }

// Build (or, with --existing, measure a database built before).
var t0 = Stopwatch.now()
var options = BuildOptions()
options.compressLabels = !args.contains("--raw-labels")
if let i = args.firstIndex(of: "--labels-per-chunk") { options.labelsPerChunk = Int(args[i + 1])! }
if let i = args.firstIndex(of: "--block-size") { options.blockSize = Int(args[i + 1])! }
var summary: BuildSummary
if args.contains("--existing") {
    let info = try Database(path: dbPath).info
    summary = BuildSummary(entries: info.entries, duplicatesMerged: 0, distinctLabels: info.distinctLabels, fileBytes: info.fileBytes)
} else {
    var builder = DatabaseBuilder(options: options)
    var bad = 0
    _ = try builder.addTSV(path: input) { _ in bad += 1 }
    summary = try builder.write(to: dbPath)
}
let buildSeconds = Double(Stopwatch.now() - t0) / 1e9
log("built \(summary.entries) entries in \(String(format: "%.2f", buildSeconds)) s, \(String(format: "%.3f", summary.bytesPerEntry)) B/entry")

// Open.
t0 = Stopwatch.now()
let db = try Database(path: dbPath)
let openMicros = Double(Stopwatch.now() - t0) / 1e3

// Collect keys with one scan (not timed), then shuffle.
var keys: [UInt64] = []
keys.reserveCapacity(db.count)
var cursor = db.cursor()
while let n = try cursor.next({ $0.number }) { keys.append(n) }
var rng = SplitMix(state: 42)
var probes = (0..<lookupCount).map { _ in keys[Int.random(in: 0..<keys.count, using: &rng)] }
let keySet = Set(keys)
var misses = probes.map { k -> UInt64 in
    var m = k &+ 1
    while keySet.contains(m) { m &+= 1 }
    return m
}
misses.shuffle(using: &rng)

/// Times lookups in batches of 256; returns per-lookup nanoseconds per batch, sorted.
func timeLookups(_ numbers: [UInt64], expectFound: Bool) throws -> [Double] {
    var samples: [Double] = []
    samples.reserveCapacity(numbers.count / 256)
    var checksum = 0
    var i = 0
    while i + 256 <= numbers.count {
        let start = Stopwatch.now()
        for j in i..<(i + 256) {
            if let len = try db.withEntry(numbers[j], { $0.labelBytes.count &+ Int($0.category.action.rawValue) }) {
                checksum &+= len &+ 1
            }
        }
        samples.append(Double(Stopwatch.now() - start) / 256)
        i += 256
    }
    if expectFound && checksum == 0 { log("warning: nothing found") }
    return samples.sorted()
}
// Warm up (page cache, shared label cache), then measure.
_ = try timeLookups(Array(probes.prefix(200_000)), expectFound: true)
let found = try timeLookups(probes, expectFound: true)
let notFound = try timeLookups(misses, expectFound: false)
probes = []
misses = []

// Scan with labels resolved, heap sampled, on a freshly opened database: the lookups above
// filled `db`'s shared decoded-label cache, which a cursor would otherwise reuse.
let scanDB = try Database(path: dbPath)
var scanSeconds: [Double] = []
var heapPeak = 0
for _ in 0..<5 {
    let baseline = currentHeapBytes()
    var peak = baseline
    var seen = 0
    var labelBytes = 0
    let start = Stopwatch.now()
    var c = scanDB.cursor()
    try c.forEach { view in
        labelBytes &+= view.labelBytes.count
        seen &+= 1
        if seen & 65535 == 0 { peak = max(peak, currentHeapBytes()) }
        return true
    }
    scanSeconds.append(Double(Stopwatch.now() - start) / 1e9)
    heapPeak = max(heapPeak, max(peak, currentHeapBytes()) - baseline)
    precondition(seen == scanDB.count && labelBytes > 0)
}
scanSeconds.sort()
let scanMedian = scanSeconds[scanSeconds.count / 2]

let result: [(String, String)] = [
    ("engine", "\"callerid\""),
    ("entries", "\(summary.entries)"),
    ("bytes", "\(summary.fileBytes)"),
    ("bytes_per_entry", String(format: "%.3f", summary.bytesPerEntry)),
    ("build_s", String(format: "%.3f", buildSeconds)),
    ("open_us", String(format: "%.1f", openMicros)),
    ("lookup_p50_ns", String(format: "%.1f", percentile(found, 0.5))),
    ("lookup_p99_ns", String(format: "%.1f", percentile(found, 0.99))),
    ("lookup_p999_ns", String(format: "%.1f", percentile(found, 0.999))),
    ("miss_p50_ns", String(format: "%.1f", percentile(notFound, 0.5))),
    ("miss_p99_ns", String(format: "%.1f", percentile(notFound, 0.99))),
    ("scan_entries_per_s", String(format: "%.0f", Double(db.count) / scanMedian)),
    ("scan_ms", String(format: "%.2f", scanMedian * 1000)),
    ("scan_heap_peak_bytes", "\(heapPeak)"),
]
if json {
    print("{" + result.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}")
} else {
    for (k, v) in result { print("\(k.padding(toLength: 22, withPad: " ", startingAt: 0)) \(v)") }
}
