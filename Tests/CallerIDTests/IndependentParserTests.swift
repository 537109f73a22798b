import Foundation
import Testing
@testable import CallerID

// tools/parse_format.py decodes a database from docs/FORMAT.md alone. It, the specification and
// the reader must agree on what a valid file is: every file the writer makes parses to the
// entries the reader sees, and a header field at its limit is taken by both, one past it
// refused by both.

private let parser = BuiltProducts.packageRoot.appendingPathComponent("tools/parse_format.py").path

/// The output of `python3 tools/parse_format.py path` (with `--ranges`: the ranges section's).
private func parse(_ path: String, ranges: Bool = false) throws -> CLIResult {
    try runTool("python3", [parser, path] + (ranges ? ["--ranges"] : []), timeout: 60)
}

/// The file image of `count` entries in blocks of 4 (many blocks, so every summary shift
/// leaves several summary keys), written with `summaryShift`.
private func image(entries count: Int, summaryShift: Int) throws -> [UInt8] {
    let keys = (0..<count).map { 79_130_000_000 + UInt64($0) * 7 }
    let labels = (0..<5).map { Array("Label \($0)".utf8) }
    var layout = LayoutOptions()
    layout.blockSize = 4
    layout.summaryShift = summaryShift
    return try FileWriter.encode(keys: keys, values: keys.indices.map { UInt32($0 % labels.count) }, labelCount: labels.count,
                                 label: { labels[$0][...] }, valueCategory: { UInt8($0 % 2) },
                                 categories: [.identify, .block], options: layout).image
}

/// The parser's lines for the file at `path` are the reader's entries, in `db`'s cursor order
/// (`what` names the file in failures).
private func expectParserMatchesReader(_ db: Database, _ path: String, _ what: String = "") throws {
    var expected: [String] = []
    var cursor = db.cursor()
    while let e = try cursor.next() { expected.append(tsvLine(e)) }
    let r = try parse(path)
    #expect(r.status == 0, "\(what)\(r.stderr)")
    #expect(r.lines == expected, "\(what)")
}

@Suite struct IndependentParserTests {
    @Test(arguments: [(0, 1), (1, 256), (2_000, 1), (2_000, 64), (2_000, 1_024)])
    func parserReadsWhatTheWriterWrites(entries: Int, blockSize: Int) throws {
        let dir = TempDir()
        let path = dir.path("w.cid")
        let (records, _) = randomRecords(count: entries, seed: UInt64(entries &* 31 &+ blockSize), minNumber: 1)
        var options = BuildOptions()
        options.blockSize = blockSize
        _ = try buildDatabase(records, at: path, options: options)
        try expectParserMatchesReader(try Database(path: path), path)
    }

    /// Version 3.1 files (cold labels in LZ4 groups, the parser's own LZ4 decoder): every
    /// group shape, the largest groups, and the LZ4 corruption sample parse to the reader's
    /// entries; the parser refuses what the reader refuses in the LZ4 sections.
    @Test(.enabled(if: Codec.compressesLZ4, "this build cannot write LZ4"), arguments: [(0, 3), (0, 0), (7, 3), (0, 6), (1_000, 2)])
    func parserReadsLZ4LabelGroups(singles: Int, shift: Int) throws {
        let dir = TempDir()
        var rng = SeededGenerator(seed: UInt64(shift + singles))
        let labels: [[UInt8]] = (0..<300).map { k in
            (0..<(k == 9 ? 0 : Int.random(in: 1...60, using: &rng))).map { _ in [0x41, 0x62, 0xD0, 0x96, 0x20][Int.random(in: 0...4, using: &rng)] }
        }.map { bytes in Array(String(decoding: bytes, as: UTF8.self).utf8) }
        let keys = (0..<1_500).map { 79_130_000_000 + UInt64($0) * 3 }
        var layout = LayoutOptions()
        layout.hotLabelBytes = 100
        layout.labelCoding = .lz4
        layout.lz4Singles = singles
        layout.lz4GroupShift = shift
        let image = try FileWriter.encode(keys: keys, values: keys.indices.map { UInt32(($0 * 7) % labels.count) }, labelCount: labels.count,
                                          label: { labels[$0][...] }, valueCategory: { UInt8($0 % 2) },
                                          categories: [.identify, .block], options: layout).image
        let path = dir.path("lz4.cid")
        #expect(FileManager.default.createFile(atPath: path, contents: Data(image)))
        let db = try Database(path: path, verify: true)
        #expect(db.info.formatVersion == "3.1")
        try expectParserMatchesReader(db, path)
    }

    @Test func parserRefusesDamagedLZ4GroupsAsTheReaderDoes() throws {
        let dir = TempDir()
        let sample = dir.path("sample.cid")
        #expect(FileManager.default.createFile(atPath: sample, contents: Data(CorruptionTests.lz4Sample.image)))
        let r = try parse(sample)
        #expect(r.status == 0 && r.lines.count == CorruptionTests.lz4Sample.entries.count, "\(r.stderr)")
        for hostile in HostileFileTests.lz4OpenCases + HostileFileTests.lz4AccessCases {
            var e = HostileFileTests.lz4Editor()
            hostile.edit(&e)
            e.seal()
            let path = dir.path("damaged.cid")
            #expect(FileManager.default.createFile(atPath: path, contents: Data(e.bytes)))
            #expect(try parse(path).status != 0, "\(hostile.name): the parser accepted it")
        }
    }

    /// Files with key codec 2 (major version 3): the corruption sample (blocks of 16) and
    /// short runs in blocks of 256 and 1,024 parse to the reader's entries; the same file
    /// marked major 2 is refused by the parser as by the reader.
    @Test func parserReadsGapOneBitmapBlocks() throws {
        let dir = TempDir()
        var images = [CorruptionTests.sample.image]
        for blockSize in [256, 1_024] {
            var rng = SeededGenerator(seed: UInt64(blockSize))
            var x: UInt64 = 79_000_000_000
            let keys = (0..<3_000).map { _ in
                x += Int.random(in: 0..<2, using: &rng) == 0 ? 1 : UInt64.random(in: 2...9, using: &rng)
                return x
            }
            let labels = (0..<7).map { Array("Label \($0)".utf8) }
            var layout = LayoutOptions()
            layout.blockSize = blockSize
            images.append(try FileWriter.encode(keys: keys, values: keys.indices.map { UInt32($0 % labels.count) }, labelCount: labels.count,
                                                label: { labels[$0][...] }, valueCategory: { UInt8($0 % 2) },
                                                categories: [.identify, .block], options: layout).image)
        }
        for (k, bytes) in images.enumerated() {
            let path = dir.path("bitmap\(k).cid")
            #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
            let e = ImageEditor(bytes)
            #expect(e.u16(8) == 3 && !e.blocks(codec: Format.keyCodecRunBitmap).isEmpty, "file \(k)")
            try expectParserMatchesReader(try Database(path: path, verify: true), path, "file \(k): ")
        }
        var e = ImageEditor(images[0])
        e.set16(8, 2)
        e.seal()
        let major2 = dir.path("major2.cid")
        #expect(FileManager.default.createFile(atPath: major2, contents: Data(e.bytes)))
        let r = try parse(major2)
        #expect(r.status != 0 && r.stderr.contains("key codec"), "\(r.stderr)")
    }

    // Before: FORMAT.md and parse_format.py allowed a summary shift of up to 16 while the reader
    // refused anything above 6, so a file valid by the specification failed to open.
    @Test func summaryShiftLimitIsTheSameInSpecParserAndReader() throws {
        let dir = TempDir()
        let atLimit = dir.path("shift6.cid"), beyond = dir.path("shift7.cid")
        #expect(Format.maxSummaryShift == 6)
        #expect(FileManager.default.createFile(atPath: atLimit, contents: Data(try image(entries: 1_000, summaryShift: 6))))
        #expect(FileManager.default.createFile(atPath: beyond, contents: Data(try image(entries: 1_000, summaryShift: 7))))

        let db = try Database(path: atLimit, verify: true)
        #expect(db.count == 1_000)
        #expect(try db.lookup(79_130_000_000 + 999 * 7)?.label == "Label 4")
        let r6 = try parse(atLimit)
        #expect(r6.status == 0, "\(r6.stderr)")
        #expect(r6.lines.count == 1_000)

        #expect(throws: CallerIDError.self) { try Database(path: beyond) }
        let r7 = try parse(beyond)
        #expect(r7.status != 0)
        #expect(r7.stderr.contains("header ranges"), "\(r7.stderr)")

        // The specification states the same bound in the header table and the limits table.
        let spec = try String(contentsOf: BuiltProducts.packageRoot.appendingPathComponent("docs/FORMAT.md"), encoding: .utf8)
        #expect(spec.contains("| 45 | u8 | summaryShift | the summary holds every `2^summaryShift`-th block's first key | ≤ 6"))
        #expect(spec.contains("| summaryShift | 0 … 6; the writer uses 4 | reader at open |"))
    }

    // Before: the parser stopped at the eleven entry sections and skipped kind 12, so the ranges
    // section the writer emits was checked against FORMAT.md by no independent decoder.
    @Test(arguments: [(1, 4), (2, 1), (3, 17)])
    func parserReadsTheRangesTheWriterWrites(seed: UInt64, rangeBlockSize: Int) throws {
        let dir = TempDir()
        let path = dir.path("r.cid")
        var g = SeededGenerator(seed: seed)
        var options = BuildOptions()
        options.rangeBlockSize = rangeBlockSize
        var builder = DatabaseBuilder(options: options)
        // Ranges of every head kind: adjacent, one number apart, coded gaps; spans from the span
        // table and escaped ones; values explicit and recent; labels with and without ", " and
        // over 4 KiB of parts, so that some are cold; entries inside some ranges and not others.
        let operators = (0..<40).map { "Оператор \($0)" } + ["", "Pizza Hut"]
        let regions = (0..<300).map { "область номер \($0) " + String(repeating: "x", count: $0 % 23) }
        var next: UInt64 = 1 + UInt64.random(in: 0..<1_000_000, using: &g)
        var entries: [UInt64] = []
        for i in 0..<600 {
            let span: UInt64 = [1, 10, 100, 1_000, 10_000, UInt64.random(in: 1...5_000_000, using: &g)].randomElement(using: &g)!
            let label = i % 5 == 0 ? operators.randomElement(using: &g)! : operators[i % 7] + ", " + regions.randomElement(using: &g)!
            let category: Category = i % 11 == 0 ? .block : .identify
            try builder.addRange(next, next + span - 1, label: label, category: category)
            if i % 13 == 0 { entries.append(next + span / 2) }
            next += span + [0, 0, 1, 7, UInt64.random(in: 2...1_000_000_000, using: &g)].randomElement(using: &g)!
        }
        entries.append(next + 5)  // an entry outside every range
        for (k, e) in entries.enumerated() { try builder.add(e, label: "Entry \(k % 3)") }
        _ = try builder.write(to: path)

        let db = try Database(path: path, verify: true)
        var rangeCursor = db.rangeCursor()
        let ranges = try rangeCursor.collect()
        #expect(ranges.count >= 600)
        let r = try parse(path, ranges: true)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.lines == ranges.map { "\($0.first)\t\($0.last)\t\($0.label)\t\($0.category.name)" })
        var expected: [String] = []
        var cursor = db.cursor()
        while let e = try cursor.next() { expected.append(tsvLine(e)) }
        let plain = try parse(path)
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(plain.lines == expected)
        #expect(expected.count == entries.count)
    }
}
