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

    /// Rows that mix many categories row by row keep each one's code (the builder compares the
    /// first codes before it hashes a name), and a name used with the other action is refused
    /// wherever its code is.
    @Test func categoriesMixedRowByRowKeepTheirCodes() throws {
        let dir = TempDir()
        let categories = try (0..<12).map { try Category("c\($0)", action: $0 % 3 == 0 ? .block : .identify) }
        var b = DatabaseBuilder()
        var expected: [UInt64: Category] = [:]
        for i in 0..<600 {
            let c = categories[(i * 7) % categories.count]
            try b.add(UInt64(100_000 + i), label: "name \(i % 5)", category: c)
            expected[UInt64(100_000 + i)] = c
        }
        for c in [categories[1], categories[4], categories[11]] {
            let other = try Category(c.name, action: c.action == .block ? .identify : .block)
            #expect(throws: CallerIDError.self, "\(c.name)") { try b.add(1, label: "x", category: other) }
        }
        let path = dir.path("mixed.cid")
        _ = try b.write(to: path)
        let db = try Database(path: path, verify: true)
        #expect(db.count == 600)
        #expect(db.entries().allSatisfy { expected[$0.number] == $0.category })
    }

    @Test(arguments: ["tab\there", "new\nline", "cr\r", "nul\u{0}", "del\u{7F}", "\u{1F}"])
    func controlCharactersInLabelsAreRejected(label: String) {
        var b = DatabaseBuilder()
        #expect { try b.add(79131234567, label: label) } throws: { ($0 as? CallerIDError)?.code == .invalidInput }
        #expect(b.count == 0)
    }

    /// Options outside their ranges (block size 1…1024, sync shift 0…10, a non-negative hot
    /// label budget) are refused before anything is written; the boundaries themselves work.
    @Test func optionsOutsideTheirRangesAreRefusedAtWrite() throws {
        let dir = TempDir()
        var b = DatabaseBuilder()
        for i in 0..<2100 { try b.add(UInt64(1000 + 3 * i), label: "L\(i % 37)", category: i % 5 == 0 ? .block : .identify) }
        let invalid: [(String, (inout BuildOptions) -> Void)] = [
            ("blockSize 0", { $0.blockSize = 0 }), ("blockSize 1025", { $0.blockSize = 1025 }),
            ("blockSize -1", { $0.blockSize = -1 }), ("syncShift -1", { $0.syncShift = -1 }),
            ("syncShift 11", { $0.syncShift = 11 }), ("hotLabelBytes -1", { $0.hotLabelBytes = -1 }),
        ]
        for (name, change) in invalid {
            var bad = b
            change(&bad.options)
            #expect(throws: CallerIDError.self, "\(name)") { try bad.write(to: dir.path("bad.cid")) }
            #expect(!FileManager.default.fileExists(atPath: dir.path("bad.cid")), "\(name)")
        }
        let valid: [(String, (inout BuildOptions) -> Void)] = [
            ("blockSize 1", { $0.blockSize = 1 }), ("blockSize 1024", { $0.blockSize = 1024 }),
            ("syncShift 0", { $0.syncShift = 0 }), ("syncShift 10", { $0.syncShift = 10 }),
            ("hotLabelBytes 0", { $0.hotLabelBytes = 0 }), ("hotLabelBytes Int.max", { $0.hotLabelBytes = .max }),
        ]
        for (name, change) in valid {
            var good = b
            change(&good.options)
            let s = try good.write(to: dir.path("good.cid"))
            #expect(s.entries == 2100, "\(name)")
            let db = try Database(path: dir.path("good.cid"), verify: true)
            #expect(try db.lookup(1000 + 3 * 2099) == Entry(number: 1000 + 3 * 2099, label: "L\(2099 % 37)", category: .identify), "\(name)")
            #expect(try db.lookup(1000 + 3 * 5) == Entry(number: 1000 + 3 * 5, label: "L5", category: .block), "\(name)")
        }
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

    /// Labels L0…L10 with frequencies 512, 256, …, 2, 1, 1 (shuffled, so first occurrence
    /// says nothing): the hot labels, stored raw within `hotLabelBytes`, are the most
    /// frequent ones, as many as fit; the rest are cold (coded) and read back the same.
    @Test func theMostFrequentLabelsAreHot() throws {
        let dir = TempDir()
        let labels = (0...10).map { "Label \($0) " + String(repeating: "ж", count: 3 + $0 % 4) }
        var records: [Entry] = []
        for k in 0...10 {
            for _ in 0..<(k == 10 ? 1 : 512 >> k) { records.append(Entry(number: 0, label: labels[k], category: k % 2 == 0 ? .identify : .block)) }
        }
        var rng = SeededGenerator(seed: 42)
        records.shuffle(using: &rng)
        for i in records.indices { records[i].number = 79_000_000_000 + UInt64(i) * 11 }
        func build(_ name: String, hotBytes: Int, compress: Bool = true) throws -> Database {
            var options = BuildOptions()
            options.blockSize = 64
            options.hotLabelBytes = hotBytes
            options.compressLabels = compress
            _ = try buildDatabase(records, at: dir.path(name), options: options)
            let db = try Database(path: dir.path(name), verify: true)
            #expect(db.info.distinctLabels == 11)
            for r in records { #expect(try db.lookup(r.number) == r) }
            #expect(Array(db.entries()) == records)
            return db
        }
        func hotSet(_ db: Database) throws -> Set<String> {
            Set(try (0..<db.info.hotLabels).map { String(decoding: try db.labels.hotLabel($0), as: UTF8.self) })
        }
        let three = labels.prefix(3).reduce(0) { $0 + $1.utf8.count }
        let exact = try build("three.cid", hotBytes: three)
        #expect(exact.info.hotLabels == 3)
        #expect(try hotSet(exact) == Set(labels.prefix(3)))
        let short = try build("two.cid", hotBytes: three - 1)
        #expect(short.info.hotLabels == 2)
        #expect(try hotSet(short) == Set(labels.prefix(2)))
        // hotLabelBytes 0: every label is cold; compressLabels false: every label is hot.
        let cold = try build("cold.cid", hotBytes: 0)
        #expect(cold.info.hotLabels == 0)
        #expect(cold.info.sections.first { $0.name == "hot labels" }?.bytes == 0)
        let raw = try build("raw.cid", hotBytes: 0, compress: false)
        #expect(raw.info.hotLabels == 11)
        #expect(try hotSet(raw) == Set(labels))
        #expect(raw.info.sections.first { $0.name == "cold labels" }?.bytes == 0)
        let all = try build("all.cid", hotBytes: 1 << 20)
        #expect(all.info.hotLabels == 11)
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
