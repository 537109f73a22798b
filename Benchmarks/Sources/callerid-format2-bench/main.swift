// Format 2.0 prototype against format 1.0 on the same data, in one process:
//   callerid-format2-bench directory.tsv [--probes N] [--block-size B] [--sync-shift S]
//                          [--hot-bytes H] [--chunk-bytes C]
// Reports bytes per entry by part, lookup p50/p99 (found and not found, the same random key
// sample for both formats; per-lookup time of batches of 256 for p50, single timed lookups
// for p99), full-scan rate with labels, and a naive in-memory [u16 size][u64 number][label]
// stream's scan rate as the reference. Build: swift build -c release --package-path Benchmarks
@_spi(Format2Prototype) import CallerID
import CBenchSupport
import Foundation

struct Fail: Error, CustomStringConvertible { var description: String }

func benchMain() throws {
var args = Array(CommandLine.arguments.dropFirst())
func option(_ name: String, _ fallback: Int) -> Int {
    guard let i = args.firstIndex(of: name), i + 1 < args.count, let v = Int(args[i + 1]) else { return fallback }
    args.removeSubrange(i...(i + 1))
    return v
}
var options = Format2Options()
let probeCount = option("--probes", 200_000)
let lookupCacheBytes = option("--lookup-cache", 48 * 1024)
options.blockSize = option("--block-size", options.blockSize)
options.syncShift = option("--sync-shift", options.syncShift)
options.hotLabelBytes = option("--hot-bytes", options.hotLabelBytes)
options.chunkBytes = option("--chunk-bytes", options.chunkBytes)
guard let tsv = args.first else {
    FileHandle.standardError.write(Data("usage: callerid-format2-bench directory.tsv [options]\n".utf8))
    exit(64)
}

func log(_ s: String) { FileHandle.standardError.write(Data((s + "\n").utf8)) }

// MARK: Load the TSV (NUMBER<TAB>LABEL[<TAB>CATEGORY]); a repeated number keeps its last row.
let text = try Data(contentsOf: URL(fileURLWithPath: tsv))
var rows: [(number: UInt64, row: Int, value: Int)] = []
var valueIDs: [Format2Value: Int] = [:]
var values: [Format2Value] = []
var categoryNames = ["identify", "block"]
text.withUnsafeBytes { (b: UnsafeRawBufferPointer) in
    var i = 0
    let n = b.count
    while i < n {
        var number: UInt64 = 0
        while i < n, b[i] != 0x09, b[i] != 0x0A { number = number * 10 + UInt64(b[i] - 0x30); i += 1 }
        var label: [UInt8] = [], cat = "identify"
        if i < n, b[i] == 0x09 {
            i += 1
            let s = i
            while i < n, b[i] != 0x09, b[i] != 0x0A { i += 1 }
            label = Array(b[s..<i])
            if i < n, b[i] == 0x09 {
                i += 1
                let c = i
                while i < n, b[i] != 0x09, b[i] != 0x0A { i += 1 }
                if i > c { cat = String(decoding: b[c..<i], as: UTF8.self) }
                while i < n, b[i] != 0x0A { i += 1 }
            }
        }
        i += 1
        var code = categoryNames.firstIndex(of: cat) ?? -1
        if code < 0 { categoryNames.append(cat); code = categoryNames.count - 1 }
        let v = Format2Value(label: label, category: UInt8(code))
        let id = valueIDs[v] ?? { values.append(v); valueIDs[v] = values.count - 1; return values.count - 1 }()
        rows.append((number, rows.count, id))
    }
}
rows.sort { $0.number != $1.number ? $0.number < $1.number : $0.row < $1.row }
var numbers: [UInt64] = [], valueIndex: [Int] = []
for (j, r) in rows.enumerated() where j + 1 == rows.count || rows[j + 1].number != r.number {
    numbers.append(r.number)
    valueIndex.append(r.value)
}
rows = []
let categories = try categoryNames.map { try Category.named($0) }
let entries = numbers.count
log("loaded \(entries) entries, \(values.count) distinct values")

// MARK: Build both formats.
let dir = NSTemporaryDirectory() + "format2-bench-\(getpid())"
try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: dir) }
var t0 = cb_now_ns()
let built = try Format2Builder.build(numbers: numbers, valueIndex: valueIndex, values: values, categories: categories, options: options)
let build2 = Double(cb_now_ns() - t0) / 1e9
let path2 = dir + "/proto.cid2"
try Data(built.bytes).write(to: URL(fileURLWithPath: path2))
t0 = cb_now_ns()
var builder1 = DatabaseBuilder()
_ = try builder1.addTSV(path: tsv) { _ in }
let path1 = dir + "/v1.cid"
_ = try builder1.write(to: path1)
let build1 = Double(cb_now_ns() - t0) / 1e9
let db1 = try Database(path: path1)
let db2 = try Format2Reader(path: path2)
guard db1.count == entries, db2.count == entries else { throw Fail(description: "entry counts differ") }

// MARK: Sizes.
func bpe(_ b: Int) -> String { String(format: "%.3f", Double(b) / Double(entries)) }
let p = built.parts
print("## Sizes, bytes per entry (\(entries) entries; 2.0-proto block \(options.blockSize), sync every \(1 << options.syncShift), hot \(options.hotLabelBytes) B, chunks \(options.chunkBytes) B)")
print("| part | 2.0-proto | 1.0 section |")
print("|---|---|---|")
let info = db1.info
let s1 = Dictionary(info.sections.map { ($0.name, $0.bytes) }, uniquingKeysWith: +)
print("| keys (EF + block headers) | \(bpe(p.keys)) | key data \(bpe(s1["key data"] ?? 0)) + descriptors \(bpe(s1["block descriptors"] ?? 0)) |")
print("| values (Huffman + sync + code table) | \(bpe(p.values)) | value data \(bpe(s1["value data"] ?? 0)) |")
print("| index | \(bpe(p.index)) | block index \(bpe(s1["block index"] ?? 0)) |")
print("| labels (hot, cold chunks, tables, value categories) | \(bpe(p.labels)) | label data \(bpe(s1["label data"] ?? 0)) + chunk table \(bpe(s1["label chunk table"] ?? 0)) + value categories \(bpe(s1["value categories"] ?? 0)) |")
print("| other | \(bpe(p.other)) | |")
print("| **file** | **\(bpe(built.bytes.count))** | **\(bpe(info.fileBytes))** |")
print("")
print("2.0-proto: \(p.hotValues) hot values cover \(String(format: "%.1f", 100 * Double(p.hotEntries) / Double(max(entries, 1))))% of entries; \(p.coldChunks) cold chunks. Build (in memory, from parsed rows): \(String(format: "%.2f", build2)) s; 1.0 build from TSV: \(String(format: "%.2f", build1)) s")
print("1.0 sections: " + info.sections.map { "\($0.name) \(bpe($0.bytes))" }.joined(separator: ", "))
print("")

// MARK: Probes: the same random found / missing numbers for both formats.
var rng = SystemRandomNumberGenerator()
var state: UInt64 = 42
func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
}
let present = Set(numbers)
var found: [UInt64] = [], missing: [UInt64] = []
for _ in 0..<probeCount {
    let k = numbers[Int(next() % UInt64(entries))]
    found.append(k)
    var m = next() & 1 == 0 ? k + 1 : k + 1 + next() % 1_000_000
    while present.contains(m) { m += 1 }
    missing.append(m)
}
missing.shuffle(using: &rng)

var cache = Format2LabelCache(budget: lookupCacheBytes)
@inline(never) func lookup2(_ k: UInt64) throws -> Int? {
    try db2.withEntry(k, cache: &cache) { bytes, category in
        bytes.count &+ Int(bytes.first ?? 0) &+ Int(categories[category].action.rawValue)
    }
}
@inline(never) func lookup1(_ k: UInt64) throws -> Int? {
    try db1.withEntry(k) { v in v.labelBytes.count &+ Int(v.labelBytes.first ?? 0) &+ Int(v.category.action.rawValue) }
}
// Agreement on the sample.
for k in found.prefix(20_000) + missing.prefix(20_000) {
    guard try lookup1(k) == lookup2(k) else { throw Fail(description: "formats disagree on \(k)") }
}

func timeLookups(_ keys: [UInt64], _ f: (UInt64) throws -> Int?) throws -> (p50: Double, p99: Double, sink: Int) {
    var sink = 0
    for k in keys.prefix(20_000) { sink &+= try f(k) ?? 1 }  // warm-up
    var perBatch: [Double] = []
    var i = 0
    while i + 256 <= keys.count {
        let t = cb_now_ns()
        for k in keys[i..<(i + 256)] { sink &+= try f(k) ?? 1 }
        perBatch.append(Double(cb_now_ns() - t) / 256)
        i += 256
    }
    var single: [Double] = []
    for k in keys.prefix(50_000) {
        let t = cb_now_ns()
        sink &+= try f(k) ?? 1
        single.append(Double(cb_now_ns() - t))
    }
    perBatch.sort()
    single.sort()
    return (perBatch[perBatch.count / 2], single[single.count * 99 / 100], sink)
}

// MARK: Scans.
func scan2() throws -> (Int, Int, Int) {
    var c = db2.cursor()
    var seen = 0, sum = 0, heap = 0
    try c.forEach { number, bytes, _ in
        sum &+= Int(truncatingIfNeeded: number) &+ bytes.count &+ Int(bytes.first ?? 0)
        seen &+= 1
        return true
    }
    heap = c.heapBytes
    return (seen, sum, heap)
}
func scan1() throws -> (Int, Int, Int) {
    var c = db1.cursor()
    var seen = 0, sum = 0
    try c.forEach { v in
        sum &+= Int(truncatingIfNeeded: v.number) &+ v.labelBytes.count &+ Int(v.labelBytes.first ?? 0)
        seen &+= 1
        return true
    }
    return (seen, sum, 0)
}
// The naive stream, in memory: [u16 size][u64 number][label] per entry.
var stream: [UInt8] = []
stream.reserveCapacity(entries * 28)
for (i, n) in numbers.enumerated() {
    let l = values[valueIndex[i]].label
    let size = UInt16(10 + l.count)
    stream.append(UInt8(size & 0xFF)); stream.append(UInt8(size >> 8))
    withUnsafeBytes(of: n.littleEndian) { stream += $0 }
    stream += l
}
func scanStream() -> (Int, Int, Int) {
    stream.withUnsafeBytes { b in
        var at = 0, seen = 0, sum = 0
        while at + 10 <= b.count {
            let size = Int(b.loadUnaligned(fromByteOffset: at, as: UInt16.self))
            let number = b.loadUnaligned(fromByteOffset: at + 2, as: UInt64.self)
            let len = size - 10
            sum &+= Int(truncatingIfNeeded: number) &+ len &+ Int(len > 0 ? b[at + 10] : 0)
            seen &+= 1
            at += 2 + size - 2 + 0
        }
        return (seen, sum, 0)
    }
}
func rate(_ f: () throws -> (Int, Int, Int)) throws -> (Double, Int, Int) {
    var best = Double.infinity
    var result = (0, 0, 0)
    for _ in 0..<3 {
        let t = cb_now_ns()
        result = try f()
        best = min(best, Double(cb_now_ns() - t))
    }
    guard result.0 == entries else { throw Fail(description: "scan saw \(result.0) of \(entries)") }
    return (Double(entries) / best * 1e3, result.1, result.2)
}

let f2 = try timeLookups(found, lookup2), f1 = try timeLookups(found, lookup1)
let m2 = try timeLookups(missing, lookup2), m1 = try timeLookups(missing, lookup1)
let r2 = try rate(scan2), r1 = try rate(scan1), rs = try rate(scanStream)
guard r2.1 == r1.1, r1.1 == rs.1 else { throw Fail(description: "scan checksums differ") }
func ns(_ x: Double) -> String { String(format: "%.0f ns", x) }
print("## Lookups (\(probeCount) probes; p50 per lookup in batches of 256, p99 of single timed lookups) and full scan with labels")
print("| format | found p50 | found p99 | not found p50 | not found p99 | scan (labels) | scan heap (cursor) |")
print("|---|---|---|---|---|---|---|")
print("| 2.0-proto | \(ns(f2.p50)) | \(ns(f2.p99)) | \(ns(m2.p50)) | \(ns(m2.p99)) | \(String(format: "%.1f", r2.0)) M/s | \(r2.2) B |")
print("| 1.0 | \(ns(f1.p50)) | \(ns(f1.p99)) | \(ns(m1.p50)) | \(ns(m1.p99)) | \(String(format: "%.1f", r1.0)) M/s | – |")
print("| naive stream (in memory) | | | | | \(String(format: "%.1f", rs.0)) M/s | |")
print("")
print("2.0-proto / 1.0: found p50 \(String(format: "%.2f", f2.p50 / f1.p50))x, not found p50 \(String(format: "%.2f", m2.p50 / m1.p50))x, scan \(String(format: "%.2f", r2.0 / r1.0))x; 2.0-proto scan / naive stream \(String(format: "%.2f", r2.0 / rs.0))x; cold chunks decoded by the lookup cache (budget \(lookupCacheBytes) B, held \(cache.heldBytes) B): \(cache.decodedChunks)")
_ = f1.sink &+ f2.sink &+ m1.sink &+ m2.sink
}

do { try benchMain() } catch { FileHandle.standardError.write(Data("callerid-format2-bench: \(error)\n".utf8)); exit(1) }
