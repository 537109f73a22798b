// The measurement protocol every engine goes through, in a process of its own:
// build from TSV → size → cold open + first lookup (file evicted from the page cache) →
// hot open → warm-up (a full scan, so the whole file is in the page cache) → lookups of
// found and missing numbers in timed batches of 256, then of numbers whose label is cold in a
// CallerID file (`Probes.coldLabelCandidates`) → lookups timed one by one (tails) →
// full ascending scans with labels on a freshly opened database, heap sampled → verify
// (engines that have a whole-file check: median of 3, file hot).
import CBenchSupport
import CallerID
import Foundation

/// What an engine offers to the harness.
protocol Engine {
    associatedtype Reader: EngineReader
    /// Builds the database at `output` from the TSV at `tsv` and makes it durable (fsync).
    func build(tsv: String, output: String) throws
    /// The files the database consists of (for its size and for evicting it).
    func files(_ output: String) -> [String]
    func open(_ output: String) throws -> Reader
}

/// An open database. `lookup` returns nil when the number is absent; otherwise a value
/// computed from the label bytes (length + first byte) and the category, so that a lookup
/// cannot skip fetching the label.
protocol EngineReader: AnyObject {
    func lookup(_ number: UInt64) throws -> Int?
    /// Visits every entry in ascending order with its label; calls `sample` every 65,536
    /// entries (the harness samples the heap there). Returns (entries, checksum of labels).
    func scan(sample: () -> Void) throws -> (entries: Int, checksum: Int)
    /// Checks the whole database (every checksum and structure) when the engine has such a
    /// check; false when it has none (the default), and the harness reports no `verify_s`.
    func verify() throws -> Bool
    /// How many of `numbers` (distinct) have a value the file stores hot (raw), when the engine
    /// can tell; nil otherwise (the default). The check of the cold-label probes.
    func hotAmong(_ numbers: [UInt64]) throws -> Int?
    /// Facts about the file for the results (format version, label coding), when it has any.
    func facts(_ into: inout JSONObject)
}

extension EngineReader {
    func verify() throws -> Bool { false }
    func hotAmong(_ numbers: [UInt64]) throws -> Int? { nil }
    func facts(_ into: inout JSONObject) {}
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}

@inline(__always) func now() -> UInt64 { cb_now_ns() }

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
}

func median(_ xs: [Double]) -> Double {
    guard !xs.isEmpty else { return 0 }
    let s = xs.sorted()
    return s[s.count / 2]
}

func log(_ s: String) { FileHandle.standardError.write(Data((s + "\n").utf8)) }

func fileBytes(_ path: String) -> Int {
    ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
}

/// Probe numbers shared by every engine of one data set: `found` are random entries of the
/// directory, `missing` are numbers next to them that are not in it, `coldLabel` are random
/// entries whose label is cold in a CallerID file (see ``coldLabelCandidates``). File: u64
/// count of found, u64 count of missing, the found and missing numbers, then (optional, files
/// written before it existed lack it) u64 count of cold-label numbers and those numbers;
/// little-endian.
struct Probes {
    var found: [UInt64]
    var missing: [UInt64]
    var coldLabel: [UInt64] = []

    static func make(_ directory: TSVDirectory, count: Int, seed: UInt64) -> Probes {
        var p = make(keys: directory.numbers, count: count, seed: seed)
        // A generator of their own: found and missing stay the numbers they were before.
        var rng = SplitMix(state: seed ^ 0xC01D_1ABE_1000_0000)
        let candidates = coldLabelCandidates(directory)
        if !candidates.isEmpty {
            p.coldLabel = (0..<count).map { _ in candidates[Int(rng.next() % UInt64(candidates.count))] }
        }
        return p
    }

    /// Entries whose label is cold in a CallerID file built from this directory, found from the
    /// directory alone (every engine looks up the same numbers; the probes exist before any
    /// file): the entries whose value, (label bytes, category), is used by at most `maxUses`
    /// entries. The writer makes hot (stored raw) the values at the head of its id order —
    /// by Huffman code length, i.e. by decreasing use, ties by first occurrence — as long as
    /// their label bytes fit `hotLabelBytes` (64 KiB, `BuildOptions.hotLabelBytes`). Ties in
    /// code length can put a value used n times among the hot ones before values used a bit
    /// more, so the rule asks for a margin: the same walk done on uses (most used first, label
    /// bytes until 64 KiB) must stop at a value used at least 4 × `maxUses` times; when it does
    /// not (small directories, where values used once or twice can be hot), or when every
    /// value fits, there are no candidates and no cold-label figure. On the 4M-entry study and
    /// default directories it stops at values used 43 and 147 times; the hot values of their
    /// files are all used ≥ 23 and ≥ 87 times. The CallerID engine checks the result on its
    /// file (`cold_probes_hot`, from the hot values the file stores: 0 expected). Values are
    /// told apart by a 64-bit hash of (label, category): a collision could only merge two
    /// values into a more used one, never make a hot value look rare. Ascending numbers.
    static func coldLabelCandidates(_ d: TSVDirectory, maxUses: Int = 2, hotLabelBytes: Int = 64 * 1024) -> [UInt64] {
        struct Value { var uses: Int32; var first: Int32; var bytes: Int32 }
        var hashes = [UInt64](repeating: 0, count: d.count)
        var values: [UInt64: Value] = [:]
        values.reserveCapacity(d.count / 8)
        for i in 0..<d.count {
            let h = d.withLabel(i) { l -> UInt64 in
                var h: UInt64 = 0xCBF2_9CE4_8422_2325 ^ UInt64(d.category[i])
                for b in l { h = (h ^ UInt64(b)) &* 0x100_0000_01B3 }
                // FNV-1a, then a final mix (FNV's low bits alone are weak on short strings).
                h = (h ^ (h >> 32)) &* 0xD6E8_FEB8_6659_FD93
                return h ^ (h >> 32) ^ (UInt64(l.count) &* 0x9E37_79B9_7F4A_7C15)
            }
            hashes[i] = h
            values[h, default: Value(uses: 0, first: Int32(i), bytes: Int32(d.labelLength[i]))].uses += 1
        }
        // The hot walk on uses: where does 64 KiB of label bytes end?
        let order = values.values.sorted { $0.uses != $1.uses ? $0.uses > $1.uses : $0.first < $1.first }
        var bytes = 0
        guard let boundary = order.first(where: { bytes += Int($0.bytes); return bytes > hotLabelBytes }),
              Int(boundary.uses) >= 4 * maxUses else { return [] }
        var out: [UInt64] = []
        for i in 0..<d.count where Int(values[hashes[i]]!.uses) <= maxUses { out.append(d.numbers[i]) }
        return out
    }

    static func make(keys sortedKeys: [UInt64], count: Int, seed: UInt64) -> Probes {
        var rng = SplitMix(state: seed)
        var found = [UInt64](), missing = [UInt64]()
        found.reserveCapacity(count)
        missing.reserveCapacity(count)
        func contains(_ k: UInt64) -> Bool {
            var lo = 0, hi = sortedKeys.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if sortedKeys[mid] < k { lo = mid + 1 } else { hi = mid }
            }
            return lo < sortedKeys.count && sortedKeys[lo] == k
        }
        for _ in 0..<count {
            let k = sortedKeys[Int(rng.next() % UInt64(sortedKeys.count))]
            found.append(k)
            // Half just above an entry (inside a block), half far from it.
            var m = rng.next() & 1 == 0 ? k &+ 1 : k &+ 1 &+ rng.next() % 1_000_000
            while contains(m) { m &+= 1 }
            missing.append(m)
        }
        missing.shuffle(using: &rng)
        return Probes(found: found, missing: missing)
    }

    func write(to path: String) throws {
        var out = [UInt64]([UInt64(found.count), UInt64(missing.count)])
        out += found
        out += missing
        out.append(UInt64(coldLabel.count))
        out += coldLabel
        try out.map { $0.littleEndian }.withUnsafeBytes { try Data($0).write(to: URL(fileURLWithPath: path)) }
    }

    static func read(_ path: String) throws -> Probes {
        let d = try Data(contentsOf: URL(fileURLWithPath: path))
        let words = d.withUnsafeBytes { raw in
            (0..<(raw.count / 8)).map { UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self)) }
        }
        guard words.count >= 2, words[0] < UInt64(words.count), words[1] < UInt64(words.count) else {
            throw BenchError("\(path): not a probe file")
        }
        let nf = Int(words[0]), nm = Int(words[1]), end = 2 + nf + nm
        var coldEnd = end
        if words.count > end {
            guard words[end] < UInt64(words.count) else { throw BenchError("\(path): not a probe file") }
            coldEnd = end + 1 + Int(words[end])
        }
        guard words.count >= end, words.count == coldEnd else { throw BenchError("\(path): not a probe file") }
        return Probes(found: Array(words[2..<(2 + nf)]), missing: Array(words[(2 + nf)..<end]),
                      coldLabel: coldEnd > end ? Array(words[(end + 1)...]) : [])
    }
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

/// An ordered JSON object (keys in insertion order) with numbers, strings, null and bools.
struct JSONObject {
    private(set) var items: [(String, String)] = []
    mutating func set(_ k: String, _ v: String?) {
        items.append((k, v.map { "\"" + jsonEscape($0) + "\"" } ?? "null"))
    }
    mutating func set(_ k: String, _ v: Int?) { items.append((k, v.map(String.init) ?? "null")) }
    mutating func set(_ k: String, _ v: Double?, digits: Int = 1) {
        items.append((k, v.map { $0.isFinite ? String(format: "%.\(digits)f", $0) : "null" } ?? "null"))
    }
    mutating func set(_ k: String, raw: String) { items.append((k, raw)) }
    var text: String { "{" + items.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}" }
}

func jsonEscape(_ s: String) -> String {
    var out = ""
    for u in s.unicodeScalars {
        switch u {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\t": out += "\\t"
        default:
            if u.value < 0x20 { out += String(format: "\\u%04x", u.value) } else { out.unicodeScalars.append(u) }
        }
    }
    return out
}

struct RunOptions {
    var tsv: String
    var db: String
    var probes: String?
    var lookups: Int = 1_000_000
    var existing = false
    var scans = 5
    var colds = 5
    /// False: no verify figure (`engine --no-verify`, for files a verify refuses).
    var verify = true
}

/// Runs the whole protocol for one engine and returns its figures as a JSON object.
func measure<E: Engine>(_ engine: E, name: String, options o: RunOptions) throws -> JSONObject {
    var result = JSONObject()
    result.set("engine", name)

    // Build.
    var buildSeconds: Double?
    if !o.existing {
        for f in engine.files(o.db) { unlink(f) }
        let t0 = now()
        try engine.build(tsv: o.tsv, output: o.db)
        buildSeconds = Double(now() - t0) / 1e9
        log("\(name): built in \(String(format: "%.2f", buildSeconds!)) s")
    }
    let files = engine.files(o.db)
    let bytes = files.reduce(0) { $0 + fileBytes($1) }

    // Probes (shared between engines when given).
    let probes: Probes
    if let p = o.probes {
        probes = try Probes.read(p)
    } else {
        probes = Probes.make(try TSVDirectory.load(o.tsv), count: o.lookups, seed: 42)
    }
    let found = probes.found.prefix(o.lookups)
    let missing = probes.missing.prefix(o.lookups)

    // Cold: evict the files, then open and look one number up.
    var openCold: [Double] = [], firstCold: [Double] = [], bothCold: [Double] = []
    var residentAfterEvict = 0
    for i in 0..<o.colds {
        for f in files { residentAfterEvict = max(residentAfterEvict, Int(cb_evict(f))) }
        let t0 = now()
        let r = try engine.open(o.db)
        let t1 = now()
        let hit = try r.lookup(found[(i * 7919) % found.count])
        let t2 = now()
        guard hit != nil else { throw BenchError("\(name): cold lookup did not find a present number") }
        openCold.append(Double(t1 - t0) / 1e3)
        firstCold.append(Double(t2 - t1) / 1e3)
        bothCold.append(Double(t2 - t0) / 1e3)
    }

    // Hot open (median of several), heap taken by an open database.
    var openHot: [Double] = []
    for _ in 0..<7 {
        let t0 = now()
        let r = try engine.open(o.db)
        openHot.append(Double(now() - t0) / 1e3)
        _ = r
    }
    let heapBeforeOpen = currentHeapBytes()
    let reader = try engine.open(o.db)
    let openHeap = currentHeapBytes() - heapBeforeOpen

    // Warm-up: one full scan puts every page in the page cache; then a lookup pass.
    let warm = try reader.scan {}
    guard warm.entries > 0 else { throw BenchError("\(name): the database is empty") }
    let entries = warm.entries
    // One untimed pass over every probe: the heap the lookups make the database keep.
    let foundProbes = Array(found), missingProbes = Array(missing), coldProbes = Array(probes.coldLabel.prefix(o.lookups))
    let heapBeforeLookups = currentHeapBytes()
    var check = 0
    for n in foundProbes { check &+= try reader.lookup(n) ?? 0 }
    for n in missingProbes { check &+= try reader.lookup(n) ?? 0 }
    for n in coldProbes { check &+= try reader.lookup(n) ?? 0 }
    let lookupHeap = currentHeapBytes() - heapBeforeLookups
    blackHole(check)
    _ = try timeBatches(reader, Array(foundProbes.prefix(200_000)), name: name, expectFound: true)
    let foundSamples = try timeBatches(reader, foundProbes, name: name, expectFound: true)
    let missSamples = try timeBatches(reader, missingProbes, name: name, expectFound: false)
    // Present numbers whose label is cold (in an LZ4 group in a 3.1 file, symbol-coded in 2.0
    // and 3.0; raw for callerid-raw): none when the probe file has none.
    let coldSamples = coldProbes.count >= 256 ? try timeBatches(reader, coldProbes, name: name, expectFound: true) : []
    let coldHot = coldProbes.isEmpty ? nil : try reader.hotAmong(coldProbes)
    let single = try timeSingles(reader, Array(foundProbes.prefix(200_000)))

    // Scans on a freshly opened database (caches filled by lookups do not help it).
    var scanSeconds: [Double] = []
    var heapPeak = 0
    do {
        let scanReader = try engine.open(o.db)
        for _ in 0..<o.scans {
            let baseline = currentHeapBytes()
            var peak = baseline
            let t0 = now()
            let r = try scanReader.scan { peak = max(peak, currentHeapBytes()) }
            scanSeconds.append(Double(now() - t0) / 1e9)
            heapPeak = max(heapPeak, max(peak, currentHeapBytes()) - baseline)
            guard r.entries == entries else { throw BenchError("\(name): scan saw \(r.entries) entries, expected \(entries)") }
        }
    }
    let scanMedian = median(scanSeconds)

    // Verify (engines that have it): median of 3 full checks of the hot file.
    var verifySeconds: [Double] = []
    for _ in 0..<(o.verify ? 3 : 0) {
        let t0 = now()
        guard try reader.verify() else { break }
        verifySeconds.append(Double(now() - t0) / 1e9)
    }

    result.set("entries", entries)
    result.set("bytes", bytes)
    result.set("bytes_per_entry", Double(bytes) / Double(entries), digits: 3)
    result.set("build_s", buildSeconds, digits: 3)
    result.set("open_us", median(openHot), digits: 1)
    result.set("open_cold_us", median(openCold), digits: 1)
    result.set("cold_first_lookup_us", median(firstCold), digits: 1)
    result.set("cold_first_lookup_max_us", firstCold.max(), digits: 1)
    result.set("cold_open_and_lookup_us", median(bothCold), digits: 1)
    result.set("resident_pages_after_evict", residentAfterEvict)
    result.set("lookup_p50_ns", percentile(foundSamples, 0.5))
    result.set("lookup_p99_ns", percentile(foundSamples, 0.99))
    result.set("lookup_p999_ns", percentile(foundSamples, 0.999))
    result.set("miss_p50_ns", percentile(missSamples, 0.5))
    result.set("miss_p99_ns", percentile(missSamples, 0.99))
    result.set("miss_p999_ns", percentile(missSamples, 0.999))
    if !coldSamples.isEmpty {
        result.set("cold_label_p50_ns", percentile(coldSamples, 0.5))
        result.set("cold_label_p99_ns", percentile(coldSamples, 0.99))
        result.set("cold_label_p999_ns", percentile(coldSamples, 0.999))
        result.set("cold_lookups", coldProbes.count)
        result.set("cold_probes_distinct", Set(coldProbes).count)
    }
    if let coldHot { result.set("cold_probes_hot", coldHot) }
    reader.facts(&result)
    result.set("single_p50_ns", percentile(single, 0.5))
    result.set("single_p99_ns", percentile(single, 0.99))
    result.set("single_p999_ns", percentile(single, 0.999))
    result.set("lookups", found.count)
    result.set("scan_entries_per_s", Double(entries) / scanMedian, digits: 0)
    result.set("scan_ms", scanMedian * 1000, digits: 2)
    result.set("scan_heap_peak_bytes", heapPeak)
    result.set("open_heap_bytes", openHeap)
    result.set("lookup_heap_bytes", lookupHeap)
    if !verifySeconds.isEmpty { result.set("verify_s", median(verifySeconds), digits: 6) }
    return result
}

/// Per-lookup nanoseconds of each batch of 256 lookups, sorted.
func timeBatches<R: EngineReader>(_ r: R, _ numbers: [UInt64], name: String, expectFound: Bool) throws -> [Double] {
    var samples: [Double] = []
    samples.reserveCapacity(numbers.count / 256)
    var checksum = 0, hits = 0
    var i = 0
    while i + 256 <= numbers.count {
        let start = now()
        for j in i..<(i + 256) {
            if let v = try r.lookup(numbers[j]) {
                checksum &+= v
                hits &+= 1
            }
        }
        samples.append(Double(now() - start) / 256)
        i += 256
    }
    let expected = expectFound ? i : 0
    guard hits == expected else {
        throw BenchError("\(name): \(hits) of \(i) lookups found, expected \(expected)")
    }
    blackHole(checksum)
    return samples.sorted()
}

/// Each lookup timed alone (includes the clock's own cost, reported separately), sorted.
func timeSingles<R: EngineReader>(_ r: R, _ numbers: [UInt64]) throws -> [Double] {
    var samples = [Double]()
    samples.reserveCapacity(numbers.count)
    var checksum = 0
    for n in numbers {
        let t0 = now()
        let v = try r.lookup(n)
        let t1 = now()
        checksum &+= v ?? 0
        samples.append(Double(t1 - t0))
    }
    blackHole(checksum)
    return samples.sorted()
}

/// The cost of one clock read pair, the floor of `timeSingles`.
func clockOverheadNs() -> Double {
    var s: [Double] = []
    for _ in 0..<100_000 {
        let t0 = now()
        let t1 = now()
        s.append(Double(t1 - t0))
    }
    return median(s)
}

@inline(never) func blackHole(_ x: Int) {
    if x == 0x7FFF_FFFF_FFFF_FFFE { print("") }
}
