import Testing
@testable import CallerID

/// The borrowed label of an `EntryView` is lent through a closure: the same bytes
/// as the label, hot (mapped) and cold (decoded) alike.
@Suite struct EntryViewTests {
    @Test func labelBytesAreLentNotHandedOut() throws {
        let dir = TempDir()
        let (records, expected) = randomRecords(count: 3_000, seed: 31)
        _ = try buildDatabase(records, at: dir.path("v.cid"))
        let db = try Database(path: dir.path("v.cid"))
        var checked = 0
        for (number, entry) in expected.prefix(500) {
            let ok = try db.withEntry(number) { view -> Bool in
                let lent = view.withLabelBytes { Array($0) }
                return lent == Array(entry.label.utf8) && view.labelByteCount == lent.count && view.label == entry.label
            }
            #expect(ok == true, "\(number)")
            checked += 1
        }
        #expect(checked == 500)
        // A throwing body's error comes out typed.
        struct Stop: Error {}
        let result = try db.withEntry(expected.first!.key) { view in
            Result { () throws(Stop) in try view.withLabelBytes { _ throws(Stop) -> Int in throw Stop() } }
        }
        #expect(throws: Stop.self) { try result?.get() }
    }
}
