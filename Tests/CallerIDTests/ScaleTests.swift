import Foundation
import Testing
@testable import CallerID

/// One million entries: full round trip, and proof that enumeration's heap use does not
/// grow with the file (mallinfo2 sampled during the scan).
@Suite(.serialized) struct ScaleTests {
    static let size = 1_000_000

    static func makeDatabase(_ dir: TempDir) throws -> [UInt64: Entry] {
        let (records, expected) = randomRecords(count: size, seed: 1_000_000, duplicateRate: 0.01)
        _ = try buildDatabase(records, at: dir.path("big.cid"))
        return expected
    }

    @Test func millionEntryRoundTripAndBoundedScanHeap() throws {
        let dir = TempDir()
        let expected = try Self.makeDatabase(dir)
        let db = try Database(path: dir.path("big.cid"), verify: true)
        #expect(db.count == expected.count)

        // Enumeration equals the sorted, deduplicated input.
        var cursor = db.cursor()
        var seen = 0
        var mismatches = 0
        var previous: UInt64 = 0
        while let e = try cursor.next() {
            if e.number <= previous || expected[e.number] != e { mismatches += 1 }
            previous = e.number
            seen += 1
        }
        #expect(seen == expected.count)
        #expect(mismatches == 0)

        // Every key found with its label and category; absent neighbours not found.
        for (k, e) in expected {
            if try db.lookup(k) != e { mismatches += 1 }
            if expected[k + 1] == nil, try db.lookup(k + 1) != nil { mismatches += 1 }
        }
        #expect(mismatches == 0)
    }

    /// mallinfo2 is process-wide, so the heap is measured in a child process of its own
    /// (a Swift Testing exit test) where no other test allocates at the same time.
    @Test func scanHeapStaysWithin64KiBAboveBaseline() async {
        await #expect(processExitsWith: .success) {
            let dir = TempDir()
            let (records, _) = randomRecords(count: 1_000_000, seed: 77, duplicateRate: 0)
            _ = try buildDatabase(records, at: dir.path("heap.cid"))
            let db = try Database(path: dir.path("heap.cid"))
            let baseline = currentHeapBytes()
            var peak = baseline
            var cursor = db.cursor()
            var seen = 0
            var labelBytes = 0
            while try cursor.next({ view in labelBytes &+= view.labelBytes.count }) != nil {
                seen += 1
                if seen & 1023 == 0 { peak = max(peak, currentHeapBytes()) }
            }
            peak = max(peak, currentHeapBytes())
            guard seen == db.count, seen > 900_000, labelBytes > 0 else { exit(3) }
            exit(peak - baseline <= 64 * 1024 ? 0 : 2)
        }
    }
}
