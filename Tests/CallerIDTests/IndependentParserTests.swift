import Foundation
import Testing
@testable import CallerID

// tools/parse_format.py decodes a database from docs/FORMAT.md alone. It, the specification and
// the reader must agree on what a valid file is: every file the writer makes parses to the
// entries the reader sees, and a header field at its limit is taken by both, one past it
// refused by both.

private let parser = BuiltProducts.packageRoot.appendingPathComponent("tools/parse_format.py").path

/// The output of `python3 tools/parse_format.py path`.
private func parse(_ path: String) throws -> ToolResult {
    try runTool("python3", [parser, path], timeout: 60)
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

@Suite struct IndependentParserTests {
    @Test(arguments: [(0, 1), (1, 256), (2_000, 1), (2_000, 64), (2_000, 1_024)])
    func parserReadsWhatTheWriterWrites(entries: Int, blockSize: Int) throws {
        let dir = TempDir()
        let path = dir.path("w.cid")
        let (records, _) = randomRecords(count: entries, seed: UInt64(entries &* 31 &+ blockSize), minNumber: 1)
        var options = BuildOptions()
        options.blockSize = blockSize
        _ = try buildDatabase(records, at: path, options: options)
        let db = try Database(path: path)
        var expected: [String] = []
        var cursor = db.cursor()
        while let e = try cursor.next() { expected.append(tsvLine(e)) }
        let r = try parse(path)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.lines == expected)
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
}
