import XCTest
@testable import CallerID

/// XCTest cases (beside the Swift Testing suites) for the values other implementations of
/// format 2.0 must reproduce exactly: hash golden values, and the bytes a written file holds
/// where docs/FORMAT.md puts them, compared with the specification's literals (not with the
/// code's own constants: a test comparing a constant with the literal it was defined from
/// cannot fail).
final class FormatConstantsXCTests: XCTestCase {
    func testHashGoldenValuesPinTheCLibrary() {
        XCTAssertEqual(Codec.xxh3([]), 0x2D06_8005_38D3_94C2)
        XCTAssertEqual(Codec.xxh64([]), 0xEF46_DB37_51D8_E999)
        XCTAssertEqual(Codec.xxh64(Array("abc".utf8)), 0x44BC_2CF5_AD77_0999)
    }

    /// The header of a written file holds the constants at their documented offsets.
    func testHeaderFieldsAtTheirOffsets() throws {
        var options = BuildOptions()
        options.blockSize = 100
        options.syncShift = 3
        var builder = DatabaseBuilder(options: options)
        for i in 0..<250 { try builder.add(79_131_000_000 + UInt64(i) * 3, label: "L\(i % 7)") }
        let bytes = try builder.encode().0
        let e = ImageEditor(bytes)
        XCTAssertEqual(Array(bytes[0..<8]), [0x89, 0x43, 0x49, 0x44, 0x42, 0x0D, 0x0A, 0x1A], "\\x89CIDB\\r\\n\\x1A")
        XCTAssertEqual(e.u16(8), 2)
        XCTAssertEqual(e.u16(10), 0)
        XCTAssertEqual(e.u32(12), 64)
        XCTAssertEqual(e.u64(16), UInt64(bytes.count))
        XCTAssertEqual(e.entryCount, 250)
        XCTAssertEqual(e.blockCount, 3)
        XCTAssertEqual(e.valueCount, 7)
        XCTAssertEqual(e.syncShift, 3)
        XCTAssertEqual(e.blockSize, 100)
        XCTAssertEqual(e.u64(56), Codec.xxh3(Array(bytes[0..<56])))
        XCTAssertEqual(Array(bytes.suffix(8)), Array("CIDB-END".utf8))
        XCTAssertEqual(e.u64(e.footer), UInt64(bytes.count))
        XCTAssertEqual(e.u64(e.footer + 8), Codec.xxh3(Array(bytes[e.tableOffset..<e.footer])))
        XCTAssertEqual(e.u64(e.footer + 16), 250)
        XCTAssertEqual(e.sectionCount, 11)
        XCTAssertEqual(e.length(.blockIndex), 12 * 4)
        XCTAssertEqual(e.n(0), 100)
        XCTAssertEqual(e.n(2), 50)
        XCTAssertEqual(e.codec(0), Format.keyCodecEliasFano)
        XCTAssertEqual(e.l(0), 1, "gaps of 3: ⌊log2(u / m)⌋ = 1")
    }

    func testAnEmptyDatabaseHasTheSmallestValidLayout() throws {
        let dir = TempDir()
        let summary = try DatabaseBuilder().write(to: dir.path("empty.cid"))
        XCTAssertEqual(summary.entries, 0)
        let db = try Database(path: dir.path("empty.cid"), verify: true)
        XCTAssertEqual(db.count, 0)
        XCTAssertNil(try db.lookup(79131234567))
        var cursor = db.cursor()
        XCTAssertNil(try cursor.next())
        var batch = EntryBatch()
        let filled = try cursor.nextBatch(&batch)
        XCTAssertEqual(filled, 0)

        // The size each section rule gives for 0 entries, 0 blocks, 0 values.
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: dir.path("empty.cid"))))
        let e = ImageEditor(bytes)
        let categories = 4 + db.categories.reduce(0) { $0 + 2 + $1.name.utf8.count }
        let symbolTable = LabelSymbolTable.train([[UInt8]]()).serialized.count
        let expected: [(Format.Section, Int)] = [
            (.categories, categories),
            (.summary, 0),                           // 8 × ⌈blocks / 2^summaryShift⌉
            (.blockIndex, 12),                       // 12 × (blocks + 1): the sentinel only
            (.blocks, Format.recordPadding),         // no record, the 8 zero bytes
            (.codeLengths, 4 * 27),
            (.valueCategories, 0),
            (.hotOffsets, 4),                        // 4 × (hot + 1)
            (.hotLabels, 0),
            (.symbolTable, symbolTable),
            (.coldIndex, 4),                         // 4 × (cold groups + 1)
            (.coldLabels, 0),
        ]
        var size = Format.headerSize
        for (kind, length) in expected {
            XCTAssertEqual(e.length(kind), length, "\(kind)")
            size = (size + 7) / 8 * 8
            XCTAssertEqual(e.start(kind), size, "\(kind) starts at the next 8-byte boundary")
            size += length
        }
        size = (size + 7) / 8 * 8 + 11 * Format.sectionEntrySize + Format.footerSize
        XCTAssertEqual(bytes.count, size)
        XCTAssertEqual(db.info.sections.count, 11)
        XCTAssertEqual(db.info.fileBytes, size)
        XCTAssertEqual(e.blockCount, 0)
        XCTAssertEqual(e.valueCount, 0)
        XCTAssertEqual(e.hotCount, 0)
    }
}
