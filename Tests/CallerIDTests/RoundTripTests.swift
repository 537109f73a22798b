import Testing
@testable import CallerID

@Suite struct RoundTripTests {
    /// Sizes around the block boundary (256 by default) and some larger ones.
    @Test(arguments: [0, 1, 2, 255, 256, 257, 511, 512, 513, 1000, 100_000])
    func roundTrip(size: Int) throws {
        try checkRoundTrip(size: size, seed: UInt64(size) &+ 17, options: BuildOptions())
    }

    /// Block sizes 1…1024 (the format's maximum), each with another sync interval and hot budget.
    @Test(arguments: [(1, 0), (3, 1), (7, 2), (64, 3), (1000, 10), (1024, 5)])
    func roundTripOtherBlockSizes(blockSize: Int, syncShift: Int) throws {
        var options = BuildOptions()
        options.blockSize = blockSize
        options.syncShift = syncShift
        options.hotLabelBytes = 40 * blockSize
        try checkRoundTrip(size: 3 * blockSize + 1, seed: UInt64(blockSize), options: options)
    }

    @Test func rawLabelsRoundTrip() throws {
        var options = BuildOptions()
        options.compressLabels = false
        try checkRoundTrip(size: 5000, seed: 99, options: options)
    }

    /// No hot labels, a few, all of them: cold labels decode through the symbol table and
    /// hot ones straight from the file, with the same results.
    @Test(arguments: [0, 1000, 1 << 20])
    func roundTripHotLabelBudgets(bytes: Int) throws {
        var options = BuildOptions()
        options.hotLabelBytes = bytes
        options.blockSize = 100
        let info = try checkRoundTrip(size: 30_000, seed: UInt64(bytes) + 5, options: options).info
        switch bytes {
        case 0: #expect(info.hotLabels == 0)
        case 1000: #expect(info.hotLabels > 0 && info.hotLabels < info.distinctLabels)
        default: #expect(info.hotLabels == info.distinctLabels)
        }
    }

    /// Long runs of consecutive numbers with one label cost less than a byte per entry:
    /// such a file holds more entries than bytes and must still open.
    @Test func denserThanOneBytePerEntry() throws {
        let dir = TempDir()
        var b = DatabaseBuilder()
        for i in 0..<200_000 { try b.add(73_012_100_000 + UInt64(i), label: "Улан-Удэ", category: .identify) }
        let summary = try b.write(to: dir.path("run.cid"))
        #expect(summary.fileBytes < summary.entries)
        let db = try Database(path: dir.path("run.cid"), verify: true)
        #expect(try db.lookup(73_012_100_000 + 199_999)?.label == "Улан-Удэ")
        #expect(try db.lookup(73_012_100_000 + 200_000) == nil)
    }

    @Test func extremeNumbers() throws {
        let dir = TempDir()
        let records = [
            Entry(number: PhoneNumber.maximum, label: "max"),
            Entry(number: 1, label: "min"),
            Entry(number: 2, label: "two", category: .block),
            Entry(number: PhoneNumber.maximum - 1, label: "max-1"),
        ]
        _ = try buildDatabase(records, at: dir.path("x.cid"))
        let db = try Database(path: dir.path("x.cid"), verify: true)
        #expect(try db.lookup(PhoneNumber.maximum)?.label == "max")
        #expect(try db.lookup(1)?.label == "min")
        #expect(try db.lookup(3) == nil)
        #expect(try db.lookup(0) == nil)
        #expect(try db.lookup(UInt64.max) == nil)
        #expect(Array(db.entries()).map(\.number) == [1, 2, PhoneNumber.maximum - 1, PhoneNumber.maximum])
    }

    /// Builds `size` random records and checks every read against them; returns the database
    /// (mapped: it stays readable after its temporary directory is removed).
    @discardableResult
    func checkRoundTrip(size: Int, seed: UInt64, options: BuildOptions) throws -> Database {
        let dir = TempDir()
        let (records, expected) = randomRecords(count: size, seed: seed)
        let summary = try buildDatabase(records, at: dir.path("db.cid"), options: options)
        #expect(summary.entries == expected.count)
        #expect(summary.duplicatesMerged == records.count - expected.count)
        let db = try Database(path: dir.path("db.cid"), verify: true)
        #expect(db.count == expected.count)

        let sorted = expected.values.sorted { $0.number < $1.number }
        // Every key found with its label and category.
        for e in sorted {
            let got = try db.lookup(e.number)
            #expect(got == e)
        }
        // Neighbours that are absent are not found; below the first and above the last.
        for e in sorted.prefix(2000) {
            for n in [e.number - 1, e.number + 1] where expected[n] == nil {
                #expect(try db.lookup(n) == nil)
            }
        }
        if let first = sorted.first, let last = sorted.last {
            #expect(try db.lookup(first.number - 1) == nil)
            #expect(try db.lookup(last.number + 1) == nil)
        } else {
            #expect(try db.lookup(79131234567) == nil)
        }
        // Enumeration equals the sorted, deduplicated input.
        #expect(Array(db.entries()) == sorted)
        // Enumeration from every block boundary (and one before it) is the matching suffix; in
        // a file of more than 8 blocks, from 8 boundaries spread over it (each a whole scan).
        var b = 0
        while b < sorted.count {
            #expect(Array(db.entries(from: sorted[b].number)) == Array(sorted[b...]))
            if sorted[b].number > 1, b > 0, sorted[b - 1].number < sorted[b].number - 1 {
                #expect(Array(db.entries(from: sorted[b].number - 1)) == Array(sorted[b...]))
            }
            b += max(1, options.blockSize) * max(1, sorted.count / (options.blockSize * 8))
        }
        // Filtered enumeration equals filtering the expected list.
        let blockOnly = sorted.filter { $0.category.action == .block }
        #expect(Array(db.entries(filter: .action(.block))) == blockOnly)
        #expect(Array(db.entries(filter: .names(["spam"]))) == sorted.filter { $0.category.name == "spam" })
        return db
    }
}
