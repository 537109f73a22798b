import Foundation
import Testing
@testable import CallerID

/// The bounded-memory build's label dictionary (`LabelDictionary`): beyond a quarter of the
/// memory limit the distinct labels are sorted on disk, and the file is still byte for byte the
/// in-memory build's. (The dictionary used to hold every distinct label of the file, and the
/// value order and label sections were built in memory from them: a directory of distinct
/// labels grew a bounded build without limit — 8M rows with 300k labels at `--memory 256M`
/// peaked at 389 MB.)
@Suite struct LabelDictionaryTests {
    /// The code lengths from a histogram of frequencies are the tree's, for any frequencies:
    /// all equal, all distinct, heavy-tailed, one or two values, long codes clamped.
    @Test(arguments: Array(1...40) as [UInt64])
    func codeLengthsFromAFrequencyHistogramAreTheTreesLengths(seed: UInt64) {
        var rng = SeededGenerator(seed: seed)
        let n = [0, 1, 2, 3, 1000, 5000][Int(seed % 6)] + Int(rng.next() % 50)
        let shape = seed % 5
        var frequencies: [Int] = (0..<n).map { i in
            switch shape {
            case 0: return 1
            case 1: return i + 1
            case 2: return Int(rng.next() % 7) + 1
            case 3: return 1 << Int(rng.next() % 30)  // very skewed: codes past the length limit
            default: return Int(100_000 / (1 + rng.next() % 5000))
            }
        }
        frequencies.sort(by: >)
        var histogram: [Int: Int] = [:]
        for f in frequencies { histogram[f, default: 0] += 1 }
        #expect(valueCodeLengthCounts(histogram: histogram.map { ($0.key, $0.value) }) == valueCodeLengthCounts(frequencies: frequencies),
                "n \(n) shape \(shape)")
    }

    /// A skewed Fibonacci-like distribution whose tree is deeper than 26 bits: the clamped
    /// lengths and the Kraft repayment agree as well.
    @Test func codeLengthsPastTheLimitAgree() {
        var f = [1, 1]
        while f.count < 40 { f.append(f[f.count - 1] + f[f.count - 2]) }
        let frequencies = (f + Array(repeating: 1, count: 300)).sorted(by: >)
        var histogram: [Int: Int] = [:]
        for x in frequencies { histogram[x, default: 0] += 1 }
        #expect(valueCodeLengthCounts(histogram: histogram.map { ($0.key, $0.value) }) == valueCodeLengthCounts(frequencies: frequencies))
    }

    struct Row {
        var number: UInt64
        var label: String
        var category: Category
    }

    /// Rows of a given character: `distinct` labels drawn for `count` rows (numbers repeat at
    /// `duplicates`), in `categories` categories.
    static func rows(count: Int, distinct: Int, duplicates: Double, categories: Int, seed: UInt64) -> [Row] {
        var rng = SeededGenerator(seed: seed)
        let names: [Category] = [.identify, .block] + [("taxi", CategoryAction.identify), ("spam", .block), ("zoo", .identify), ("alpha", .block)]
            .map { try! Category($0.0, action: $0.1) }
        var rows: [Row] = []
        for i in 0..<count {
            let repeatNumber = !rows.isEmpty && Double(rng.next() % 1000) / 1000 < duplicates
            let number = repeatNumber ? rows[Int(rng.next() % UInt64(rows.count))].number : 79_000_000_000 + rng.next() % 900_000_000
            let k = distinct >= count ? i : Int(rng.next() % UInt64(max(distinct, 1)))
            let label = k % 11 == 0 ? "" : "Shop \(String(k &* 2_654_435_761 % 1_000_003, radix: 16)) \(k % 7 == 0 ? "Москва" : "street")"
            rows.append(Row(number: number, label: label, category: names[Int(rng.next() % UInt64(categories))]))
        }
        return rows
    }

    /// Writes `rows` in memory and with `memory` bytes; expects the same bytes and the bounded
    /// build's dictionary within its share. Returns the bounded build's `Written`.
    @discardableResult
    static func expectSameFile(_ rows: [Row], memory: Int, compress: Bool = true, blockSize: Int = 256,
                               sourceLocation: SourceLocation = #_sourceLocation) throws -> DatabaseBuilder.Written {
        let dir = TempDir()
        var options = BuildOptions()
        options.compressLabels = compress
        options.blockSize = blockSize
        var inMemory = DatabaseBuilder(options: options)
        options.memoryLimit = memory
        var bounded = DatabaseBuilder(options: options, spillingNextTo: dir.path("b.cid"))
        for r in rows {
            try inMemory.add(r.number, label: r.label, category: r.category)
            try bounded.add(r.number, label: r.label, category: r.category)
        }
        let a = try inMemory.write(to: dir.path("a.cid"))
        let (b, written) = try bounded.writeHashing(to: dir.path("b.cid"))
        #expect(a == b, sourceLocation: sourceLocation)
        let bytesA = try Data(contentsOf: URL(fileURLWithPath: dir.path("a.cid")))
        #expect(bytesA == (try Data(contentsOf: URL(fileURLWithPath: dir.path("b.cid")))), sourceLocation: sourceLocation)
        #expect(written.labelDictionaryPeakBytes <= max(written.labelDictionaryShare, 0), sourceLocation: sourceLocation)
        if bounded.runsSpilled > 0 { try Database(path: dir.path("b.cid")).verify() }
        return written
    }

    /// 64 KiB of memory: a dictionary share of 16 KiB, outgrown by a few hundred labels.
    static let memory = 64 * 1024

    @Test(arguments: [1, 2, 3] as [UInt64])
    func distinctLabelsBeyondTheShareAreSortedOnDiskToTheSameBytes(seed: UInt64) throws {
        let rows = Self.rows(count: 6_000, distinct: 6_000, duplicates: 0, categories: 1, seed: seed)
        let written = try Self.expectSameFile(rows, memory: Self.memory, blockSize: [256, 64, 7][Int(seed) - 1])
        #expect(written.labelDictionarySpilled)
        #expect(written.labelDictionaryShare == Self.memory / 4)
    }

    @Test(arguments: [4, 5, 6] as [UInt64])
    func mostlyRepeatedLabelsWithDuplicateNumbersAndCategories(seed: UInt64) throws {
        let rows = Self.rows(count: 8_000, distinct: [900, 1_500, 3_000][Int(seed) - 4], duplicates: 0.3, categories: 6, seed: seed)
        let written = try Self.expectSameFile(rows, memory: Self.memory)
        #expect(written.labelDictionarySpilled)
    }

    /// Labels stored raw (`--raw-labels`): every label hot, the hot sections streamed too.
    @Test func rawLabelsBeyondTheShare() throws {
        let rows = Self.rows(count: 5_000, distinct: 4_000, duplicates: 0.1, categories: 3, seed: 7)
        #expect(try Self.expectSameFile(rows, memory: Self.memory, compress: false).labelDictionarySpilled)
    }

    /// One label for every row, one row, no rows: the ordinary in-memory dictionary.
    @Test(arguments: [0, 1, 5_000] as [Int])
    func fewLabelsStayInMemory(count: Int) throws {
        let rows = Self.rows(count: count, distinct: 1, duplicates: 0.05, categories: 1, seed: 8)
        #expect(try !Self.expectSameFile(rows, memory: Self.memory).labelDictionarySpilled)
    }

    /// A share so small that every chunk holds a value or two: hundreds of chunks, merged in
    /// tiers, still the same bytes.
    @Test func aTinyShareMakesManyChunks() throws {
        let rows = Self.rows(count: 3_000, distinct: 2_000, duplicates: 0.2, categories: 4, seed: 9)
        #expect(try Self.expectSameFile(rows, memory: 8 * 1024).labelDictionarySpilled)
    }

    /// The pipeline's count of a bounded build's distinct labels keeps to its budget: past it
    /// the hashes are sorted on disk and counted there, to the count a set gives.
    @Test(arguments: [10, 3_000, 20_000] as [Int])
    func distinctHashesAreCountedWithinTheirBudget(count: Int) throws {
        let dir = TempDir()
        let area = try SpillArea(nextTo: dir.path("out"))
        let counter = DistinctHashes(memoryBytes: 16 * 1024, scratch: area)
        var rng = SeededGenerator(seed: UInt64(count))
        var expected = Set<UInt64>()
        for _ in 0..<count {
            let h = rng.next() % UInt64(count / 2 + 1)
            expected.insert(h)
            try counter.insert(h)
        }
        #expect(try counter.count() == expected.count)
    }
}
