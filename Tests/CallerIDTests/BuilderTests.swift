import Foundation
import Testing
@testable import CallerID

@Suite struct BuilderTests {
    @Test func lastRecordForANumberWins() throws {
        let dir = TempDir()
        var b = DatabaseBuilder()
        try b.add(79131234567, label: "first")
        try b.add(79131234568, label: "other")
        try b.add(79131234567, label: "second", category: .block)
        let s = try b.write(to: dir.path("d.cid"))
        #expect(s.entries == 2)
        #expect(s.duplicatesMerged == 1)
        #expect(try Database(path: dir.path("d.cid")).lookup(79131234567) == Entry(number: 79131234567, label: "second", category: .block))
    }

    @Test func writingTwiceGivesIdenticalBytes() throws {
        let dir = TempDir()
        let (records, _) = randomRecords(count: 3000, seed: 5)
        var b = DatabaseBuilder()
        for r in records { try b.add(r.number, label: r.label, category: r.category) }
        _ = try b.write(to: dir.path("a.cid"))
        _ = try b.write(to: dir.path("b.cid"))
        #expect(FileManager.default.contentsEqual(atPath: dir.path("a.cid"), andPath: dir.path("b.cid")))
    }

    @Test(arguments: [UInt64(0), PhoneNumber.maximum + 1, UInt64.max])
    func invalidNumbersAreRejected(number: UInt64) {
        var b = DatabaseBuilder()
        #expect { try b.add(number, label: "x") } throws: { ($0 as? CallerIDError)?.code == .invalidNumber }
        #expect(b.count == 0)
    }

    @Test func labelLimitAndCategoryConflicts() throws {
        var b = DatabaseBuilder()
        try b.add(1, label: String(repeating: "a", count: 65_535))
        #expect(throws: CallerIDError.self) { try b.add(2, label: String(repeating: "a", count: 65_536)) }
        try b.add(3, label: "x", category: Category("vip", action: .identify))
        #expect(throws: CallerIDError.self) { try b.add(4, label: "x", category: Category("vip", action: .block)) }
        #expect(throws: CallerIDError.self) { try Category("Bad Name", action: .block) }
        #expect(try Category.named("SPAM") == Category("spam", action: .block))
        #expect(try Category.named("pharmacy").action == .identify)
    }

    @Test(arguments: ["tab\there", "new\nline", "cr\r", "nul\u{0}", "del\u{7F}", "\u{1F}"])
    func controlCharactersInLabelsAreRejected(label: String) {
        var b = DatabaseBuilder()
        #expect { try b.add(79131234567, label: label) } throws: { ($0 as? CallerIDError)?.code == .invalidInput }
        #expect(b.count == 0)
    }

    /// A chunk over the reader's 64 MiB limit is refused by the writer, not written unreadable.
    @Test func oversizedLabelChunkIsRefusedAtWrite() throws {
        let dir = TempDir()
        var options = BuildOptions()
        options.labelsPerChunk = 64
        options.maxRawChunkBytes = 4096   // the real limit is 64 MiB: same check, smaller data
        var b = DatabaseBuilder(options: options)
        for i in 0..<100 { try b.add(UInt64(1000 + i), label: String(repeating: "x", count: 100) + "\(i)") }
        #expect { try b.write(to: dir.path("big.cid")) } throws: { ($0 as? CallerIDError)?.code == .limitExceeded }
        #expect(!FileManager.default.fileExists(atPath: dir.path("big.cid")))
    }

    @Test func moreThan256CategoriesIsAnError() throws {
        var b = DatabaseBuilder()
        for i in 0..<254 { try b.add(UInt64(i + 1), label: "", category: Category("c\(i)", action: .block)) }
        #expect { try b.add(1000, label: "", category: Category("one-too-many", action: .block)) } throws: {
            ($0 as? CallerIDError)?.code == .limitExceeded
        }
    }

    @Test func failedWriteLeavesNoFileAndKeepsTheOldOne() throws {
        let dir = TempDir()
        var b = DatabaseBuilder()
        try b.add(79131234567, label: "x")
        #expect { try b.write(to: dir.path("no/such/dir/d.cid")) } throws: { ($0 as? CallerIDError)?.code == .fileNotFound }

        // An invalid option fails before anything is written: the old file stays as it was.
        _ = try b.write(to: dir.path("d.cid"))
        let before = try Data(contentsOf: URL(fileURLWithPath: dir.path("d.cid")))
        var bad = b
        bad.options.blockSize = 0
        #expect(throws: CallerIDError.self) { try bad.write(to: dir.path("d.cid")) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path("d.cid"))) == before)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: dir.url.path).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty)
    }

    @Test func labelsAreOrderedByFrequencyAndCompressedWhenItPays() throws {
        let dir = TempDir()
        var b = DatabaseBuilder()
        for i in 0..<20000 {
            try b.add(UInt64(79_000_000_000 + i * 7), label: i % 3 == 0 ? "Most frequent label" : "Business number \(i % 9000) of the city directory")
        }
        _ = try b.write(to: dir.path("d.cid"))
        let db = try Database(path: dir.path("d.cid"), verify: true)
        #expect(try db.sharedLabel(0).elementsEqual("Most frequent label".utf8))
        #expect(db.info.compressedLabelChunks > 0)
        #expect(db.dictionaryChunks > 0)
        #expect(db.labelDictionary.count <= 65_536)
    }

    @Test func goldenHashesPinTheCLibrary() {
        #expect(Codec.xxh64(Array("abc".utf8)) == 0x44BC_2CF5_AD77_0999)
        #expect(Codec.xxh64([]) == 0xEF46_DB37_51D8_E999)
        #expect(Codec.xxh3([]) == 0x2D06_8005_38D3_94C2)
    }
}

@Suite struct PhoneNumberTests {
    @Test(arguments: [
        ("+7 913 123-45-67", UInt64(79131234567)), ("79131234567", 79131234567), ("+79131234567", 79131234567),
        ("+7 (913) 123.45.67", 79131234567), ("7\u{00A0}913\u{00A0}1234567", 79131234567), ("1", 1),
        ("999999999999999", 999_999_999_999_999), ("+82 2-758-8163", 8227588163),
    ])
    func parses(text: String, expected: UInt64) throws {
        #expect(try PhoneNumber.parse(text) == expected)
    }

    @Test(arguments: ["", "+", "abc", "7913abc", "1234567890123456", "0079131234567", "4.93E+12", "++7913", "7 913 ext 12", "79131234567\u{0}"])
    func rejects(text: String) {
        #expect { try PhoneNumber.parse(text) } throws: { ($0 as? CallerIDError)?.code == .invalidNumber }
    }
}
