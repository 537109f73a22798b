import XCTest
@testable import CallerID

/// XCTest cases (beside the Swift Testing suites) for the values other implementations of the
/// format must reproduce exactly: hash golden values, magic bytes, version, limits.
final class FormatConstantsXCTests: XCTestCase {
    func testHashGoldenValuesPinTheCLibrary() {
        XCTAssertEqual(Codec.xxh3([]), 0x2D06_8005_38D3_94C2)
        XCTAssertEqual(Codec.xxh64([]), 0xEF46_DB37_51D8_E999)
        XCTAssertEqual(Codec.xxh64(Array("abc".utf8)), 0x44BC_2CF5_AD77_0999)
        XCTAssertEqual(Checksum.xxh3([]), Codec.xxh3([]))
    }

    func testMagicVersionAndLayoutConstants() {
        XCTAssertEqual(Format.magic, [0x89, 0x43, 0x49, 0x44, 0x42, 0x0D, 0x0A, 0x1A])
        XCTAssertEqual(Format.footerMagic, Array("CIDB-END".utf8))
        XCTAssertEqual(CallerIDVersion.format, "1.0")
        XCTAssertEqual(Format.headerSize + Format.footerSize, 96)
        XCTAssertEqual(PhoneNumber.maximum, 999_999_999_999_999)
        XCTAssertEqual(Format.maxDictionaryBytes, 65_536, "the LZ4 window")
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
        XCTAssertEqual(db.info.sections.count, 8)
    }
}
