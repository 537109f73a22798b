// Format 2.0 layout pieces (Sources/CallerID/Layout): the length-limited canonical value code
// (`valueCodeLengthCounts`, `valueCodes`, `ValueCode`) and block records (`BlockRecord`)
// read back through files written by `DatabaseBuilder`: both key codecs, every sync shift,
// block sizes across 1…1024.
import Foundation
import Testing
@testable import CallerID

// MARK: - Helpers

/// Kraft sum of `counts` in units of 2^-maxCodeLength.
private func kraft(_ counts: [Int]) -> Int {
    var k = 0
    for len in 1...Format.maxCodeLength { k += counts[len] << (Format.maxCodeLength - len) }
    return k
}

/// Cost Σ frequency × length of an optimal (unlimited) Huffman code, computed independently
/// (repeatedly merging the two lightest weights; the cost is the sum of all merged weights).
private func huffmanCost(_ frequencies: [Int]) -> Int {
    guard frequencies.count > 1 else { return 0 }
    var w = frequencies.map { max($0, 1) }.sorted()
    var cost = 0
    while w.count > 1 {
        let merged = w[0] + w[1]
        cost += merged
        w.removeFirst(2)
        let at = w.firstIndex { $0 > merged } ?? w.count
        w.insert(merged, at: at)
    }
    return cost
}

/// The code length of each id under `counts` (ids in order, shortest codes first).
private func lengths(_ counts: [Int]) -> [Int] {
    var out: [Int] = []
    for len in 1..<counts.count { out += repeatElement(len, count: counts[len]) }
    return out
}

/// A window holding `code` (MSB-aligned) followed by random bits.
private func window(_ code: UInt32, _ length: Int, _ rng: inout SeededGenerator) -> UInt64 {
    let tail = length == 0 ? rng.next() : rng.next() >> UInt64(length)
    return (length == 0 ? 0 : UInt64(code) << UInt64(64 - length)) | tail
}

/// Checks a code built from `counts` for `symbols` ids: canonical codes, prefix-free, and
/// every id decodes from its code followed by arbitrary bits.
private func checkCode(_ counts: [Int], symbols: Int, seed: UInt64, _ comment: Comment? = nil) throws {
    let code = try #require(ValueCode(counts: counts, symbols: symbols), comment)
    let codes = valueCodes(counts: counts)
    #expect(codes.count == (symbols <= 1 ? 0 : symbols), comment)
    #expect(codes.map(\.length) == lengths(counts), comment)
    // Canonical: left-justified codes strictly ascend, so no code is a prefix of the next.
    var previous: UInt64? = nil
    for c in codes {
        #expect(c.length >= 1 && c.length <= Format.maxCodeLength && UInt64(c.code) < 1 << UInt64(c.length), comment)
        let justified = UInt64(c.code) << UInt64(64 - c.length)
        if let p = previous { #expect(justified > p, comment) }
        previous = justified | ((1 << UInt64(64 - c.length)) - 1)  // the end of its range
    }
    var rng = SeededGenerator(seed: seed)
    if symbols <= 1 {
        for _ in 0..<4 {
            let d = code.decode(rng.next())
            #expect(d?.symbol == 0 && d?.length == 0, comment)
        }
        return
    }
    for (id, c) in codes.enumerated() {
        for _ in 0..<3 {
            let d = code.decode(window(c.code, c.length, &rng))
            guard d?.symbol == id, d?.length == c.length else {
                Issue.record("id \(id) (code \(String(c.code, radix: 2)) length \(c.length)) decodes to \(String(describing: d)) \(comment.map { "\($0)" } ?? "")")
                return
            }
        }
    }
}

// MARK: - Value code

@Suite("Layout: value code")
struct ValueCodeTests {
    @Test("no symbol or one symbol: a zero-bit code")
    func zeroBitCode() throws {
        for n in 0...1 {
            let counts = valueCodeLengthCounts(frequencies: [Int](repeating: 5, count: n))
            #expect(counts == [Int](repeating: 0, count: Format.maxCodeLength + 1))
            try checkCode(counts, symbols: n, seed: UInt64(n))
        }
    }

    @Test("two symbols: one bit each, whatever the frequencies")
    func twoSymbols() throws {
        for f in [[1, 1], [1_000_000, 1], [7, 0]] {
            let counts = valueCodeLengthCounts(frequencies: f)
            #expect(counts[1] == 2 && counts.reduce(0, +) == 2)
            try checkCode(counts, symbols: 2, seed: 2)
        }
    }

    /// Where the Huffman depth stays within the limit the lengths are optimal: their cost
    /// equals an independently computed Huffman cost when the shortest lengths go to the
    /// first ids (frequencies are given in descending order), and the code is complete.
    @Test("unconstrained sets: optimal and complete", arguments: [1, 2, 3, 4, 5] as [UInt64])
    func optimalWithinTheLimit(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        for _ in 0..<20 {
            let n = Int.random(in: 2...300, using: &rng)
            let f = (0..<n).map { _ in Int.random(in: 1...(seed.isMultiple(of: 2) ? 10 : 100_000), using: &rng) }.sorted(by: >)
            let counts = valueCodeLengthCounts(frequencies: f)
            let lens = lengths(counts)
            #expect(lens.count == n)
            #expect(kraft(counts) == 1 << Format.maxCodeLength)
            #expect(zip(f, lens).reduce(0) { $0 + $1.0 * $1.1 } == huffmanCost(f), "n \(n)")
            try checkCode(counts, symbols: n, seed: seed)
        }
    }

    /// Fibonacci frequencies make an unlimited Huffman code n − 1 bits deep: the limit holds,
    /// the Kraft sum stays ≤ 1, every id decodes (codes longer than the fast table included).
    @Test("length limit: Fibonacci frequencies", arguments: [27, 30, 45, 60])
    func lengthLimit(n: Int) throws {
        var f = [1, 1]
        while f.count < n { f.append(f[f.count - 1] + f[f.count - 2]) }
        let counts = valueCodeLengthCounts(frequencies: f.reversed())
        #expect(counts.count == Format.maxCodeLength + 1)
        #expect(counts[0] == 0)
        #expect(counts.reduce(0, +) == n)
        #expect(kraft(counts) <= 1 << Format.maxCodeLength)
        #expect(counts[Format.maxCodeLength] > 0)  // the limit binds
        #expect(lengths(counts).first == 1)        // the most frequent still gets one bit
        try checkCode(counts, symbols: n, seed: UInt64(n))
    }

    @Test("many symbols: equal frequencies give equal lengths; a skewed tail goes deep")
    func manySymbols() throws {
        let flat = valueCodeLengthCounts(frequencies: [Int](repeating: 3, count: 1 << 14))
        #expect(flat[14] == 1 << 14 && flat.reduce(0, +) == 1 << 14)
        try checkCode(flat, symbols: 1 << 14, seed: 14)
        // One dominant value, thousands of rare ones: lengths beyond the 10-bit fast table.
        let skewed = [1 << 30] + [Int](repeating: 1, count: 5000)
        let counts = valueCodeLengthCounts(frequencies: skewed)
        #expect(counts[1] == 1 && counts.reduce(0, +) == 5001)
        #expect(kraft(counts) == 1 << Format.maxCodeLength)
        #expect(lengths(counts).last! > Format.fastBits)
        try checkCode(counts, symbols: 5001, seed: 15)
    }

    @Test("an incomplete code: a window with an unused prefix does not decode")
    func incompleteCode() throws {
        var counts = [Int](repeating: 0, count: Format.maxCodeLength + 1)
        counts[1] = 1
        counts[2] = 1       // codes 0 and 10; 11… is unused
        let code = try #require(ValueCode(counts: counts, symbols: 2))
        #expect(code.decode(0x3 << 62) == nil)
        #expect(code.decode(0x2 << 62).map { [$0.symbol, $0.length] } == [1, 2])
        #expect(code.decode(0).map { [$0.symbol, $0.length] } == [0, 1])
        // A deep incomplete code: the slow path refuses the unused prefix too.
        var deep = [Int](repeating: 0, count: Format.maxCodeLength + 1)
        deep[1] = 1
        deep[20] = 3        // 0, then 1000…0 (20 bits) …; 11… unused
        let d = try #require(ValueCode(counts: deep, symbols: 4))
        #expect(d.decode(~0) == nil)
        #expect(d.decode(UInt64(1) << 63 | UInt64(2) << 44).map { [$0.symbol, $0.length] } == [3, 20])
        try checkCode(deep, symbols: 4, seed: 20)
    }

    @Test("invalid count tables are refused")
    func invalidCounts() {
        let L = Format.maxCodeLength
        func table(_ set: [Int: Int]) -> [Int] {
            var c = [Int](repeating: 0, count: L + 1)
            for (len, n) in set { c[len] = n }
            return c
        }
        let refused: [(String, [Int], Int)] = [
            ("Kraft sum over 1", table([1: 3]), 3),
            ("Kraft sum over 1 deep", table([1: 1, 2: 1, L: (1 << (L - 2)) + 1]), 2 + (1 << (L - 2)) + 1),
            ("more codes than symbols", table([1: 2]), 1),
            ("fewer codes than symbols", table([1: 1, 2: 1]), 3),
            ("codes for a single symbol", table([1: 1]), 1),
            ("codes for no symbol", table([1: 2]), 0),
            ("a zero-length code", [1] + [Int](repeating: 0, count: L), 1),
            ("a negative count", table([1: 2, 2: -1]), 1),
            ("a count over 2^limit", table([L: (1 << L) + 1]), (1 << L) + 1),
            ("a table one entry short", [Int](repeating: 0, count: L), 0),
            ("a table one entry long", [Int](repeating: 0, count: L + 2), 0),
            ("negative symbols", table([:]), -1),
            ("no codes for two symbols", table([:]), 2),
        ]
        for (what, counts, symbols) in refused {
            #expect(ValueCode(counts: counts, symbols: symbols) == nil, "\(what)")
        }
        // The same shapes, valid: accepted.
        #expect(ValueCode(counts: table([1: 2]), symbols: 2) != nil)
        #expect(ValueCode(counts: table([1: 1, 2: 2]), symbols: 3) != nil)
        #expect(ValueCode(counts: table([L: 1 << L]), symbols: 1 << L) != nil)
        #expect(ValueCode(counts: table([:]), symbols: 1) != nil)
        #expect(ValueCode(counts: table([:]), symbols: 0) != nil)
    }
}

// MARK: - Block records through built files

/// Builds `entries` (ascending, distinct numbers) with `options` and checks every block
/// record against them: header fields, decodeAll (keys and value ids), find of every key
/// and of absent numbers between and around keys, value(at:) from the sync points, and the
/// label and category of every id. Returns the key codecs seen.
@discardableResult
private func checkBlocks(_ entries: [Entry], options: BuildOptions, _ comment: String) throws -> Set<UInt8> {
    let dir = TempDir()
    let path = dir.path("blocks.cid")
    _ = try buildDatabase(entries, at: path, options: options)
    let db = try Database(path: path, verify: true)
    #expect(db.count == entries.count, "\(comment)")
    #expect(db.blockCount == (entries.count + options.blockSize - 1) / options.blockSize, "\(comment)")
    #expect(db.syncShift == options.syncShift, "\(comment)")
    var codecs = Set<UInt8>()
    var keys = FixedBuffer<UInt64>(repeating: 0, count: options.blockSize)
    var ids = FixedBuffer<UInt32>(repeating: 0, count: options.blockSize)
    var failures: [String] = []
    func fail(_ s: String) { if failures.count < 10 { failures.append(s) } }
    for b in 0..<db.blockCount {
        let start = b * options.blockSize
        let expected = entries[start..<min(start + options.blockSize, entries.count)]
        let first = db.firstKey(b)
        let r = try db.record(b)
        codecs.insert(r.keyCodec)
        guard first == expected.first!.number, r.entryCount == expected.count, r.syncShift == options.syncShift else {
            fail("block \(b): first key \(first), n \(r.entryCount)")
            continue
        }
        let consecutive = expected.last!.number - first == UInt64(expected.count - 1)
        if expected.count > 1, (r.keyCodec == Format.keyCodecRun) != consecutive {
            fail("block \(b): codec \(r.keyCodec) for \(consecutive ? "" : "non-")consecutive keys")
        }
        guard r.decodeAll(firstKey: first, code: db.code, keys: &keys, ids: &ids) else {
            fail("block \(b): decodeAll failed")
            continue
        }
        var present = Set<UInt64>()
        for (i, e) in expected.enumerated() {
            present.insert(e.number)
            if keys[i] != e.number { fail("block \(b) entry \(i): key \(keys[i]) != \(e.number)") }
            if r.find(e.number - first) != i { fail("block \(b): find(\(e.number)) = \(String(describing: r.find(e.number - first))), expected \(i)") }
            let v = r.value(at: i, code: db.code)
            if v != Int(ids[i]) { fail("block \(b) entry \(i): value(at:) \(String(describing: v)) != decodeAll \(ids[i])") }
            let id = Int(ids[i])
            guard id < db.valueCount else { fail("block \(b) entry \(i): id \(id) ≥ \(db.valueCount)"); continue }
            let label = try db.labelString(id)
            let category = db.categories[try db.categoryCode(id)]
            if label != e.label || category != e.category { fail("block \(b) entry \(i): \(label)/\(category) != \(e.label)/\(e.category)") }
        }
        // Absent offsets: each key's neighbours, and the gap up to the next block's first key.
        let limit = b + 1 < db.blockCount ? db.firstKey(b + 1) : PhoneNumber.maximum + 1
        for e in expected {
            for x in [e.number + 1, e.number + 2, e.number - 1] where x > first && x < limit && !present.contains(x) {
                if let j = r.find(x - first) { fail("block \(b): absent \(x) found at \(j)") }
            }
        }
        for x in [expected.last!.number + 1000, limit - 1, first + (1 << 40)] where x > expected.last!.number && x < limit {
            if let j = r.find(x - first) { fail("block \(b): absent \(x) past the last key found at \(j)") }
        }
        // Narrow blocks: every number from the first key to past the last one.
        if expected.last!.number - first < 4096 {
            let index = Dictionary(uniqueKeysWithValues: expected.enumerated().map { ($1.number, $0) })
            for x in first...min(limit - 1, expected.last!.number + 3) where r.find(x - first) != index[x] {
                fail("block \(b): find(\(x)) = \(String(describing: r.find(x - first))), expected \(String(describing: index[x]))")
            }
        }
        if r.keyCodec == Format.keyCodecRunBitmap && db.maxKeyCodec != Format.keyCodecRunBitmap {
            fail("block \(b): key codec 2 in a file of version \(db.info.formatVersion)")
        }
    }
    #expect(failures.isEmpty, "\(comment): \(failures.joined(separator: "\n"))")
    return codecs
}

/// Entries with runs of consecutive numbers (whole blocks and partial), small gaps, huge
/// gaps, 1 and the largest number; labels from a skewed pool, categories of both actions.
private func layoutEntries(count: Int, seed: UInt64, distinctLabels: Int = 300) -> [Entry] {
    var rng = SeededGenerator(seed: seed)
    var numbers = Set<UInt64>()
    if count > 0 { numbers.insert(1) }
    if count > 1 { numbers.insert(PhoneNumber.maximum) }
    var x: UInt64 = 70_000_000_000
    while numbers.count < count {
        switch Int.random(in: 0..<10, using: &rng) {
        case 0: x = UInt64.random(in: 2..<PhoneNumber.maximum - 5000, using: &rng)
        case 1...3:
            for _ in 0..<Int.random(in: 1...1500, using: &rng) where numbers.count < count && x < PhoneNumber.maximum - 1 {
                x += 1
                numbers.insert(x)
            }
        default: x = min(x + UInt64.random(in: 1...5000, using: &rng), PhoneNumber.maximum - 1)
        }
        if numbers.count < count { numbers.insert(x) }
    }
    return numbers.sorted().map { n in
        let r = Int.random(in: 0..<1000, using: &rng)
        let k = r < 500 ? r % 5 : Int.random(in: 0..<distinctLabels, using: &rng)
        let label = k == 0 ? "" : k == 1 ? "Сбербанк" : "Label \(k)" + String(repeating: "·", count: k % 7)
        return Entry(number: n, label: label, category: testCategories[k % testCategories.count])
    }
}

@Suite("Layout: the writer")
struct WriterThreadTests {
    /// The blocks and the label sections encoded on two threads give the file and the parts
    /// that one thread gives: the same bytes whatever the machine, on keys of every codec and
    /// labels hot and cold.
    @Test(arguments: [0, 1, 3000])
    func twoThreadsWriteTheBytesOfOne(count: Int) throws {
        let entries = layoutEntries(count: count, seed: 77)
        var labels: [[UInt8]] = [], ids: [String: UInt32] = [:], categories: [UInt8] = []
        let values = entries.map { e -> UInt32 in
            let key = e.label + "\u{0}" + e.category.name
            if let id = ids[key] { return id }
            ids[key] = UInt32(labels.count)
            labels.append(Array(e.label.utf8))
            categories.append(UInt8(testCategories.firstIndex(of: e.category)!))
            return UInt32(labels.count - 1)
        }
        func encode(concurrentFrom: Int) throws -> (image: [UInt8], parts: LayoutParts) {
            var layout = LayoutOptions()
            layout.blockSize = 64
            layout.hotLabelBytes = 200
            layout.concurrentFrom = concurrentFrom
            let r = try FileWriter.encode(keys: entries.map(\.number), values: values, labelCount: labels.count,
                                          label: { labels[$0][...] }, valueCategory: { categories[$0] },
                                          categories: testCategories, options: layout)
            return (r.image, r.parts)
        }
        let one = try encode(concurrentFrom: Int.max)
        let two = try encode(concurrentFrom: 0)
        #expect(two.image == one.image)
        #expect(two.parts == one.parts)
        if count > 0 { #expect(one.parts.labels > 0 && one.parts.keys > 0 && one.parts.values > 0) }
    }
}

@Suite("Layout: block records")
struct BlockRecordTests {
    @Test("key codecs: runs of consecutive numbers, sparse keys, runs that do not fill a block")
    func bothCodecs() throws {
        var options = BuildOptions()
        options.blockSize = 64
        // Four full blocks of consecutive numbers, then sparse keys, then a run that is not
        // block-aligned, then one block of a single key.
        var numbers = (0..<256).map { 79_000_000_000 + UInt64($0) }
        numbers += (0..<200).map { 79_100_000_000 + UInt64($0) * 997 }
        numbers += (0..<100).map { 79_200_000_000 + UInt64($0) }
        numbers += [79_300_000_000, 79_300_000_002]
        numbers += (0..<63).map { 79_400_000_000 + UInt64($0) }
        numbers.append(PhoneNumber.maximum)
        let entries = numbers.enumerated().map { Entry(number: $1, label: "L\($0 % 17)", category: $0 % 3 == 0 ? .block : .identify) }
        let codecs = try checkBlocks(entries, options: options, "both codecs")
        #expect(codecs == [Format.keyCodecEliasFano, Format.keyCodecRun, Format.keyCodecRunBitmap])
        try checkBlocks(layoutEntries(count: 3000, seed: 7), options: options, "random 3000")
    }

    /// Key codec 2 (a bitmap of the gap-1 keys, Elias–Fano over the others) beside the other
    /// two, on block shapes that stress it: every gap 1 but one (at the start, middle, end),
    /// alternating gaps of 1 and 2 or 1 and a large gap, random short runs, runs that end at
    /// the largest number; block sizes 1, 2, 7, 255, 256 and 1,024. checkBlocks opens each
    /// file with verify (the canonical codec rule), decodes every block, finds every key and
    /// every number between and around them.
    @Test("three key codecs: gap-1 bitmap blocks", arguments: [1, 2, 7, 255, 256, 1024])
    func threeCodecs(blockSize: Int) throws {
        var options = BuildOptions()
        options.blockSize = blockSize
        options.syncShift = 3
        options.hotLabelBytes = 100
        var rng = SeededGenerator(seed: 900 + UInt64(blockSize))
        var numbers: [UInt64] = []
        func appendRun(from start: UInt64, gaps: [UInt64]) {
            var x = start
            numbers.append(x)
            for g in gaps { x += g; numbers.append(x) }
        }
        let n = max(blockSize, 64)
        for hole in [0, n / 2, n - 2] {  // every gap 1 but one
            appendRun(from: 70_000_000_000 + UInt64(hole) * 100_000, gaps: (0..<(n - 1)).map { $0 == hole ? 5 : 1 })
        }
        appendRun(from: 71_000_000_000, gaps: (0..<(n - 1)).map { $0 % 2 == 0 ? 1 : 2 })  // alternating 1, 2
        appendRun(from: 72_000_000_000, gaps: (0..<(n - 1)).map { $0 % 2 == 0 ? 1 : 1_000_003 })  // alternating 1, large
        appendRun(from: 73_000_000_000, gaps: (0..<(3 * n)).map { _ in  // short runs, small gaps
            Int.random(in: 0..<3, using: &rng) == 0 ? 1 : UInt64.random(in: 2...9, using: &rng)
        })
        appendRun(from: 74_000_000_000, gaps: (0..<(2 * n)).map { _ in  // runs between huge gaps
            Int.random(in: 0..<4, using: &rng) == 0 ? UInt64.random(in: 1 << 20...1 << 36, using: &rng) : 1
        })
        // The largest numbers: short runs and gaps up to PhoneNumber.maximum.
        var top = PhoneNumber.maximum
        var tail: [UInt64] = []
        while tail.count < n + 5 {
            tail.append(top)
            top -= Int.random(in: 0..<2, using: &rng) == 0 ? 1 : UInt64.random(in: 2...40, using: &rng)
        }
        numbers += tail.reversed()
        numbers.insert(1, at: 0)
        numbers.insert(2, at: 1)
        let entries = numbers.enumerated().map { Entry(number: $1, label: "R\($0 % 23)", category: $0 % 5 == 0 ? .block : .identify) }
        let codecs = try checkBlocks(entries, options: options, "blockSize \(blockSize)")
        if blockSize >= 7 {
            #expect(codecs.contains(Format.keyCodecRunBitmap), "blockSize \(blockSize): \(codecs)")
            #expect(codecs.contains(Format.keyCodecEliasFano), "blockSize \(blockSize): \(codecs)")
        } else {
            #expect(!codecs.contains(Format.keyCodecRunBitmap), "a bitmap word never pays for \(blockSize - 1) gaps")
        }
    }

    /// The writer's per-block rule, on random block shapes: codec 2 exactly when its key
    /// bytes are fewer than Elias–Fano's (ties keep codec 0), and only where the file may use it.
    @Test func keyCodecRuleIsTheSmallerTiesToEliasFano() {
        var rng = SeededGenerator(seed: 77)
        var seen = Set<UInt8>()
        var ties = 0
        for _ in 0..<3000 {
            let m = Int.random(in: 1...300, using: &rng)
            var keys: [UInt64] = [UInt64.random(in: 1...1_000_000, using: &rng)]
            let oneShare = Int.random(in: 0...10, using: &rng)
            let gapMax = UInt64(1) << UInt64.random(in: 1...30, using: &rng)
            for _ in 0..<m { keys.append(keys.last! + (Int.random(in: 0..<10, using: &rng) < oneShare ? 1 : UInt64.random(in: 2...max(2, gapMax), using: &rng))) }
            let shape = BlockRecord.KeyShape(count: keys.count) { keys[$0] }
            let codec = BlockRecord.keyCodec(shape, runBitmap: true)
            seen.insert(codec)
            #expect(BlockRecord.keyCodec(shape, runBitmap: false) != Format.keyCodecRunBitmap)
            let ef = BlockRecord.keyBytes(shape, codec: Format.keyCodecEliasFano)
            let bitmap = BlockRecord.keyBytes(shape, codec: Format.keyCodecRunBitmap)
            if bitmap == ef { ties += 1 }
            if codec != Format.keyCodecRun {
                #expect((codec == Format.keyCodecRunBitmap) == (bitmap < ef), "m \(m): \(bitmap) vs \(ef) bytes, codec \(codec)")
            }
        }
        #expect(seen == [Format.keyCodecEliasFano, Format.keyCodecRun, Format.keyCodecRunBitmap])
        #expect(ties > 0, "some shapes tie")
    }

    @Test("extreme keys in one block: 1, 2 and the largest numbers (widest low bits)")
    func extremeKeys() throws {
        var options = BuildOptions()
        options.blockSize = 4
        let entries = [1, 2, PhoneNumber.maximum - 1, PhoneNumber.maximum, 3, 5].sorted().map { Entry(number: $0, label: "n\($0)") }
        try checkBlocks(entries, options: options, "extremes")
        options.blockSize = 2
        try checkBlocks([Entry(number: 1, label: "a"), Entry(number: PhoneNumber.maximum, label: "b")], options: options, "1 and max")
    }

    /// Sync points every 2^s entries, s = 0…10, with 1024-entry blocks: value(at:) starts
    /// from the sync point before each entry; decodeAll checks every sync offset.
    @Test("sync shifts 0…10", arguments: 0...10)
    func syncShifts(shift: Int) throws {
        var options = BuildOptions()
        options.blockSize = 1024
        options.syncShift = shift
        options.hotLabelBytes = 200
        try checkBlocks(layoutEntries(count: 2500, seed: 100 + UInt64(shift), distinctLabels: 2000), options: options, "syncShift \(shift)")
    }

    @Test("block sizes across 1…1024",
          arguments: [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1000, 1023, 1024])
    func blockSizes(size: Int) throws {
        var options = BuildOptions()
        options.blockSize = size
        options.syncShift = size % 6
        let count = min(3 * size + 1, 2100)
        try checkBlocks(layoutEntries(count: count, seed: UInt64(size)), options: options, "blockSize \(size)")
        // One label only: a zero-bit value code (no value stream at all).
        let one = layoutEntries(count: count, seed: UInt64(size) + 1).map { Entry(number: $0.number, label: "only", category: .block) }
        try checkBlocks(one, options: options, "blockSize \(size), one value")
    }
}

@Suite("Layout: the block search")
struct BlockSearchTests {
    /// Blocks of one entry and a summary key for every block, so the summary holds as many
    /// keys as the file has entries: its bisection runs over 1 … 129 groups of 16 keys (the
    /// last six steps written out, the ones before in a loop). Every key's block is found, a
    /// number between two keys belongs to the lower one's block, and one below the first key
    /// to none.
    @Test(arguments: [1, 2, 16, 17, 31, 1023, 1024, 1025, 1040, 2049])
    func everyNumberFindsItsBlockAtEverySummarySize(entries count: Int) throws {
        var rng = SeededGenerator(seed: UInt64(count))
        var keys: [UInt64] = []
        var key: UInt64 = 1 + rng.next() % 1_000
        for _ in 0..<count {
            keys.append(key)
            key += 2 + rng.next() % 5_000
        }
        var layout = LayoutOptions()
        layout.blockSize = 1
        layout.summaryShift = 0
        let labels = (0..<3).map { Array("Label \($0)".utf8) }
        let image = try FileWriter.encode(keys: keys, values: keys.indices.map { UInt32($0 % labels.count) }, labelCount: labels.count,
                                          label: { labels[$0][...] }, valueCategory: { _ in 0 }, categories: [.identify], options: layout).image
        let dir = TempDir()
        let path = dir.path("search.cid")
        #expect(FileManager.default.createFile(atPath: path, contents: Data(image)))
        let db = try Database(path: path)
        #expect(db.blockCount == count)
        var wrong: [String] = []
        for (b, k) in keys.enumerated() {
            for (n, expected) in [(k - 1, b - 1), (k, b), (k + 1, b)] where db.blockFor(n) != expected {
                wrong.append("number \(n): block \(db.blockFor(n)), expected \(expected)")
            }
            if try db.lookup(k)?.label != "Label \(b % labels.count)" { wrong.append("lookup(\(k))") }
            if try db.lookup(k + 1) != nil { wrong.append("lookup(\(k + 1)) found") }
        }
        #expect(db.blockFor(PhoneNumber.maximum) == count - 1)
        #expect(wrong.isEmpty, "\(wrong.prefix(5))")
    }
}

extension Database {
    /// The label of value `id`, read the way lookups read it (raw for a hot value, decoded for
    /// a cold one).
    fileprivate func labelString(_ id: Int) throws(CallerIDError) -> String {
        try labels.withLabel(id) { bytes, _ in String(decoding: bytes, as: UTF8.self) }
    }
}
