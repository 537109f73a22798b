import Foundation
import Testing
@testable import CallerID

/// A quarter of a million entries (about 1,000 blocks): full round trip, and proof that
/// enumeration's heap use does not grow with the file (mallinfo2 sampled during the scan). The
/// 4,000,000-entry figures (scan heap peak, lookups) are the benchmark's (BENCHMARKS.md); a unit
/// test needs only enough blocks that a per-block leak or a whole-file buffer would show.
struct ScaleTests {
    static let size = 250_000

    static func makeDatabase(_ dir: TempDir) throws -> [UInt64: Entry] {
        let (records, expected) = randomRecords(count: size, seed: 1_000_000, duplicateRate: 0.01)
        _ = try buildDatabase(records, at: dir.path("big.cid"))
        return expected
    }

    @Test func largeRoundTripAndBoundedScanHeap() throws {
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

    /// Point lookups keep nothing. Every label cold (decoded per lookup), 200,000
    /// lookups of present and absent numbers, the batch cursor's fills and one per-entry cursor
    /// over the whole file: the heap afterwards is the heap before (no cache grows with
    /// the labels touched), and during the lookups it never rises by more than one label's
    /// temporary buffer.
    @Test func lookupsKeepNoHeapAndCursorsStayBounded() async {
        await #expect(processExitsWith: .success) {
            let dir = TempDir()
            var options = BuildOptions()
            options.hotLabelBytes = 0  // every label cold
            var builder = DatabaseBuilder(options: options)
            var numbers: [UInt64] = []
            for i in 0..<60_000 {
                let n = 79_000_000_000 + UInt64(i) * 37
                numbers.append(n)
                try builder.add(n, label: "Label \(i % 20_000) of a long-ish directory name \(i % 7)")
            }
            _ = try builder.write(to: dir.path("cold.cid"))
            let db = try Database(path: dir.path("cold.cid"))
            let baseline = currentHeapBytes()
            var peak = baseline
            var found = 0
            for k in 0..<200_000 {
                let n = numbers[(k &* 7919) % numbers.count] &+ UInt64(k & 1)
                if try db.withEntry(n, { $0.labelBytes.count }) != nil { found += 1 }
                if k & 1023 == 0 { peak = max(peak, currentHeapBytes()) }
            }
            let after = currentHeapBytes()
            guard found == 100_000 else { exit(3) }
            // The test runner's own threads may allocate a little while the lookups run (seen
            // once on a loaded machine); a cache of the 20,000 labels touched, or one byte kept
            // per lookup, would be hundreds of KB: 16 KiB tells the two apart.
            guard abs(after - baseline) <= 16 * 1024 else { exit(4) }
            guard peak - baseline <= 64 * 1024 + 64 else { exit(5) }
            // A batch of 1,024 and its label buffer: 21 B per entry + at most 64 KiB + 8.
            var batch = EntryBatch(capacity: 1024)
            var cursor = db.cursor()
            var seen = 0
            while true {
                let k = try cursor.nextBatch(&batch)
                if k == 0 { break }
                seen += k
                peak = max(peak, currentHeapBytes())
            }
            guard seen == numbers.count, peak - baseline <= 21 * 1024 + 64 * 1024 + 8 + 4096 + 12 * 1024 + 1024 else { exit(6) }
            exit(0)
        }
    }
}
