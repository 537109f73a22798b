// Format 2.0 prototype: round trips of random and edge-case data sets through the writer,
// the point lookup and the cursor; the length-limited Huffman code; damaged images.
@_spi(Format2Prototype) @testable import CallerID
import Testing

/// The suite's seeded SplitMix64 (TestSupport.swift) with a bounded draw.
private struct Rng {
    var generator: SeededGenerator
    init(state: UInt64) { generator = SeededGenerator(seed: state) }
    mutating func next() -> UInt64 { generator.next() }
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
}

private let f2Categories: [Category] = [.identify, .block, try! Category("spam", action: .block)]

/// A data set: ascending numbers and, per number, an index into `values`.
private struct DataSet {
    var numbers: [UInt64]
    var valueIndex: [Int]
    var values: [Format2Value]
}

private func label(_ k: Int) -> [UInt8] {
    // Mixed lengths and UTF-8 bytes ≥ 0x80, an empty label, and one long label.
    if k == 0 { return [] }
    if k == 7 { return [UInt8](repeating: 0xD0, count: 300) }
    return Array("Label №\(k) \(String(repeating: "x", count: k % 23))".utf8)
}

private func zipfValues(_ rng: inout Rng, count: Int, distinct: Int) -> ([Int], [Format2Value]) {
    let values = (0..<distinct).map { Format2Value(label: label($0), category: UInt8($0 % f2Categories.count)) }
    let index = (0..<count).map { _ in
        // Roughly Zipf: small ids much more often.
        let r = Double(rng.next() % 1_000_000) / 1_000_000
        return min(distinct - 1, Int(pow2(r * log2d(Double(distinct) + 1)) - 1))
    }
    return (index, values)
}

private func pow2(_ x: Double) -> Double { var r = 1.0; var i = 0.0; while i + 1 <= x { r *= 2; i += 1 }; return r * (1 + (x - i) * 0.6931471805599453) }
private func log2d(_ x: Double) -> Double { var v = x, r = 0.0; while v >= 2 { v /= 2; r += 1 }; return r + (v - 1) }

private func randomNumbers(_ rng: inout Rng, count: Int) -> [UInt64] {
    var set = Set<UInt64>()
    var out: [UInt64] = []
    var x: UInt64 = 1 + rng.next() % 1_000_000_000
    while out.count < count {
        // Clustered: runs of consecutive numbers, small gaps and big jumps.
        switch rng.below(10) {
        case 0: x += 1 + rng.next() % 10_000_000_000
        case 1...4: x += 1
        default: x += 1 + rng.next() % 500
        }
        if x > PhoneNumber.maximum { break }
        if set.insert(x).inserted { out.append(x) }
    }
    return out
}

private func check(_ d: DataSet, options: Format2Options = Format2Options(), starts: Int = 8, seed: UInt64 = 1) throws {
    let built = try Format2Builder.build(numbers: d.numbers, valueIndex: d.valueIndex, values: d.values,
                                         categories: f2Categories, options: options)
    let r = try Format2Reader(bytes: built.bytes)
    #expect(r.count == d.numbers.count)
    var cache = Format2LabelCache(budget: 4096)
    let present = Set(d.numbers)
    for (i, n) in d.numbers.enumerated() {
        let v = d.values[d.valueIndex[i]]
        let got = try r.withEntry(n, cache: &cache) { (Array($0), $1) }
        #expect(got?.0 == v.label && got?.1 == Int(v.category), "number \(n)")
        for m in [n - 1, n + 1] where !present.contains(m) {
            #expect(try r.valueID(m) == nil, "neighbour \(m) of \(n)")
        }
    }
    for m: UInt64 in [0, 1, PhoneNumber.maximum, PhoneNumber.maximum + 1, .max] where !present.contains(m) {
        #expect(try r.valueID(m) == nil)
    }
    #expect(cache.heldBytes <= 4096 + 65_535 + 8)
    // Enumeration, from the start and from random numbers.
    var rng = Rng(state: seed)
    var froms: [UInt64] = [0, 1]
    if let f = d.numbers.first, let l = d.numbers.last { froms += [f, l, l + 1] }
    for _ in 0..<starts where !d.numbers.isEmpty {
        let k = d.numbers[rng.below(d.numbers.count)]
        froms += [k, k + 1, k - 1]
    }
    for from in froms {
        let startIndex = d.numbers.firstIndex { $0 >= from } ?? d.numbers.count
        var cursor = r.cursor(from: from)
        var seen = 0
        var ok = true
        try cursor.forEach { number, bytes, category in
            let i = startIndex + seen
            let v = d.values[d.valueIndex[i]]
            if i >= d.numbers.count || d.numbers[i] != number || !bytes.elementsEqual(v.label) || category != Int(v.category) {
                ok = false
                return false
            }
            seen += 1
            return true
        }
        #expect(ok && seen == d.numbers.count - startIndex, "scan from \(from)")
    }
}

@Suite("Format 2.0 prototype")
struct Format2Tests {
    @Test("random data sets round-trip", arguments: [1, 2, 3] as [UInt64])
    func randomSets(seed: UInt64) throws {
        var rng = Rng(state: seed)
        let numbers = randomNumbers(&rng, count: 3000 + rng.below(3000))
        let (index, values) = zipfValues(&rng, count: numbers.count, distinct: 50 + rng.below(2000))
        var options = Format2Options()
        options.blockSize = [256, 128, 97][Int(seed) % 3]
        options.syncShift = [5, 4, 0][Int(seed) % 3]
        options.hotLabelBytes = [64 * 1024, 300, 0][Int(seed) % 3]
        options.chunkBytes = [2048, 100, 1][Int(seed) % 3]
        try check(DataSet(numbers: numbers, valueIndex: index, values: values), options: options, seed: seed)
    }

    @Test("empty and one entry")
    func tiny() throws {
        try check(DataSet(numbers: [], valueIndex: [], values: []))
        try check(DataSet(numbers: [79131234567], valueIndex: [0], values: [Format2Value(label: Array("A".utf8), category: 1)]))
        try check(DataSet(numbers: [1], valueIndex: [0], values: [Format2Value(label: [], category: 0)]))
        try check(DataSet(numbers: [PhoneNumber.maximum], valueIndex: [0], values: [Format2Value(label: [0xFF], category: 2)]))
        let empty = try Format2Reader(bytes: try Format2Builder.build(numbers: [], valueIndex: [], values: [], categories: f2Categories).bytes)
        #expect(try empty.valueID(1) == nil)
    }

    @Test("block boundaries ±1, largest numbers, all one label, all distinct labels")
    func edges() throws {
        var options = Format2Options()
        options.blockSize = 64
        options.hotLabelBytes = 200
        for n in [63, 64, 65, 127, 128, 129] {
            let numbers = (0..<n).map { PhoneNumber.maximum - UInt64(n - 1 - $0) * 3 }
            try check(DataSet(numbers: numbers, valueIndex: Array(0..<n), values: (0..<n).map { Format2Value(label: label($0), category: UInt8($0 % 3)) }), options: options)
            try check(DataSet(numbers: numbers, valueIndex: [Int](repeating: 0, count: n), values: [Format2Value(label: label(5), category: 1)]), options: options)
        }
        // Largest gaps: 1 and the maximum in one block.
        try check(DataSet(numbers: [1, 2, PhoneNumber.maximum - 1, PhoneNumber.maximum], valueIndex: [0, 1, 0, 1],
                          values: [Format2Value(label: label(1), category: 0), Format2Value(label: label(2), category: 1)]))
        // A long run of consecutive numbers over many blocks, all distinct labels.
        let run = (0..<5000).map { 74_950_000_000 + UInt64($0) }
        try check(DataSet(numbers: run, valueIndex: Array(0..<5000), values: (0..<5000).map { Format2Value(label: label($0), category: 0) }), options: options)
    }

    @Test("length-limited code: Kraft sum ≤ 1, lengths ≤ the limit, decodes every id")
    func code() throws {
        // Fibonacci frequencies give a Huffman depth of n − 1 without the limit.
        var f = [1, 1]
        while f.count < 45 { f.append(f[f.count - 1] + f[f.count - 2]) }
        let counts = format2CodeLengthCounts(frequencies: f.reversed())
        #expect(counts.reduce(0, +) == 45)
        var kraft = 0
        for len in 1...Format2.maxCodeLength { kraft += counts[len] << (Format2.maxCodeLength - len) }
        #expect(kraft <= 1 << Format2.maxCodeLength)
        let decoder = try #require(Format2Code(counts: counts, symbols: 45))
        for (id, c) in Format2Code.codes(counts: counts).enumerated() {
            let window = UInt64(c.code) << UInt64(64 - c.length)
            let d = decoder.decode(window)
            #expect(d?.symbol == id && d?.length == c.length)
        }
        // Counts that over-fill the code space are refused.
        var bad = [Int](repeating: 0, count: Format2.maxCodeLength + 1)
        bad[1] = 3
        #expect(Format2Code(counts: bad, symbols: 3) == nil)
    }

    @Test("damaged images: every single-byte change and every truncation is refused or read safely")
    func damaged() throws {
        var rng = Rng(state: 9)
        let numbers = randomNumbers(&rng, count: 300)
        let (index, values) = zipfValues(&rng, count: numbers.count, distinct: 60)
        var options = Format2Options()
        options.blockSize = 64
        options.hotLabelBytes = 100
        let image = try Format2Builder.build(numbers: numbers, valueIndex: index, values: values, categories: f2Categories, options: options).bytes
        func exercise(_ bytes: [UInt8]) {
            guard let r = try? Format2Reader(bytes: bytes) else { return }
            var cache = Format2LabelCache(budget: 2048)
            for n in numbers.prefix(40) { _ = try? r.withEntry(n, cache: &cache) { $0.count &+ $1 } }
            var cursor = r.cursor()
            var seen = 0
            try? cursor.forEach { _, _, _ in seen += 1; return seen < 10_000 }
        }
        for at in stride(from: 0, to: image.count, by: max(1, image.count / 400)) {
            var b = image
            b[at] ^= UInt8(1 + rng.below(255))
            exercise(b)
        }
        for length in stride(from: 0, to: image.count, by: max(1, image.count / 50)) {
            #expect(throws: CallerIDError.self) { try Format2Reader(bytes: Array(image.prefix(length))) }
        }
    }
}
