// Regression of a reader fuzz finding (tools/fuzz.sh reader): a crafted file whose block index
// keys do not match its records made `cursor(from:)` return numbers below `from`. A cursor now
// skips every entry below `from`, whatever the index says.
@testable import CallerID
import Foundation
import Testing

@Suite struct CursorFromTests {
    /// Every block's index key replaced by each of a few wrong values (re-sealed, so the file
    /// opens), then cursors from every number of the sample and its neighbours: no entry below
    /// `from`, strictly ascending, or an error — never a number the cursor was told to skip.
    @Test func cursorNeverReturnsNumbersBelowFromEvenWithAWrongIndex() throws {
        let path = NSTemporaryDirectory() + "callerid-cursor-from-\(getpid()).cid"
        defer { unlink(path) }
        let good = ImageEditor(HostileSample.image)
        var wrongCursors = 0, files = 0
        for b in 0..<good.blockCount {
            for replacement: UInt64 in [1, good.firstKey(b) &+ 500, PhoneNumber.maximum] {
                var image = good
                image.set64(image.indexEntry(b), replacement)
                image.seal()
                Access.write(image.bytes, path)
                guard let db = try? Database(path: path) else { continue }
                files += 1
                for n in HostileSample.numbers + [1, 79_000_001_100, PhoneNumber.maximum] {
                    for from in [n &- 1, n, n &+ 1] {
                        var cursor = db.cursor(from: from)
                        var previous: UInt64? = nil
                        while let e = try? cursor.next() {
                            if e.number < from || (previous.map { e.number <= $0 } ?? false) { wrongCursors += 1; break }
                            previous = e.number
                        }
                        var batch = EntryBatch(capacity: 3)
                        var batchCursor = db.cursor(from: from)
                        while let k = try? batchCursor.nextBatch(&batch), k > 0 {
                            if Array(copying: batch.numbers).contains(where: { $0 < from }) { wrongCursors += 1; break }
                        }
                    }
                }
            }
        }
        #expect(files > 0, "the re-sealed files should open (the damage is behind the open-time checks)")
        #expect(wrongCursors == 0)
    }

    /// Second reader fuzz finding: a header whose entry count is lower than the entries its
    /// blocks hold (open accepts it: the count is within the blocks' bounds) made a cursor
    /// return more entries than `count`. Now the cursor stops with `corrupt` first.
    @Test func cursorNeverReturnsMoreThanTheHeaderCount() throws {
        let path = NSTemporaryDirectory() + "callerid-cursor-count-\(getpid()).cid"
        defer { unlink(path) }
        let good = ImageEditor(HostileSample.image)
        let actual = HostileSample.entries.count
        for lower in [actual - 1, actual - 4, actual - 30] {  // still ≥ the 37 values and the blocks: open accepts
            var image = good
            image.setEntryCount(UInt64(lower))
            image.seal()
            Access.write(image.bytes, path)
            let db = try Database(path: path)
            #expect(db.count == lower)
            var cursor = db.cursor()
            var seen = 0
            var failure: CallerIDError?
            do {
                while try cursor.next() != nil { seen += 1 }
            } catch {
                failure = error
            }
            #expect(seen <= lower)
            #expect(failure?.code == .corrupt)
            var batch = EntryBatch(capacity: 5)
            var batchCursor = db.cursor()
            var batched = 0
            while let k = try? batchCursor.nextBatch(&batch), k > 0 { batched += k }
            #expect(batched <= lower)
            #expect(throws: CallerIDError.self) { try db.verify() }
        }
    }
}
