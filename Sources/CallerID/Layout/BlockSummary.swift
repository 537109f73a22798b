// Format 2.0, section kind 2: the block summary (docs/FORMAT.md §5.2). Its writer and its
// reader, beside the drawing of its bytes (little-endian):
//
//   offset  size  field     value
//   ------  ----  --------  ----------------------------------------------------------------------
//   8·s        8  firstKey  the first key of block s << summaryShift, for s = 0 ..< summaryCount
//
// summaryCount = ceil(blockCount / 2^summaryShift). The first level of a lookup's search: a small
// array that stays in cache. Checked against the block index by verify only; a wrong summary
// can make a lookup answer "absent", never read out of bounds.

/// The block summary (kind 2).
struct BlockSummary {
    let view: ByteView
    static let entrySize = 8

    /// summaryCount for `blockCount` blocks.
    static func count(blockCount: Int, summaryShift: Int) -> Int { (blockCount + (1 << summaryShift) - 1) >> summaryShift }

    // MARK: Writer

    /// Appends the first key of a block whose number is a multiple of 2^summaryShift.
    static func append(firstKey: UInt64, to summary: inout [UInt8]) { summary.appendLE(firstKey) }

    // MARK: Reader

    /// The summary of a file of `blockCount` blocks; *corrupt* unless its length is exact.
    init(_ view: ByteView, blockCount: Int, summaryShift: Int, path: String) throws(CallerIDError) {
        try SectionTable.checkLength(.summary, view, BlockSummary.entrySize * BlockSummary.count(blockCount: blockCount, summaryShift: summaryShift),
                                     path: path)
        self.view = view
    }

    /// summaryCount.
    @inline(__always) var count: Int { view.count &>> 3 }

    /// Entry `s` (< count).
    @inline(__always) func key(_ s: Int) -> UInt64 { view.u64(s &<< 3) }

    /// The last entry whose key is ≤ `number` (entry 0 when none is): a bisection over every
    /// 16th key, then a count over the ≤ 15 keys after it. The loads of a count are independent
    /// of one another, so they overlap instead of waiting on each other. Count > 0.
    @inline(__always)
    func entry(for number: UInt64) -> Int {
        let s = count
        var base = 0, n = (s &+ 15) &>> 4
        @inline(__always) func step() {
            let half = n &>> 1
            base = key((base &+ half) &<< 4) <= number ? base &+ half : base
            n &-= half
        }
        while n > 64 { step() }
        // The last six steps written out, outside any loop: the compiler keeps their choices
        // as conditional moves, where in a loop it makes them branches that random numbers
        // mispredict at every other step. A step with one candidate left changes nothing.
        step(); step(); step(); step(); step(); step()
        let k = base &<< 4
        let kEnd = min(k &+ 16, s)
        var c = 0
        var j = k &+ 1
        while j < kEnd {
            c &+= key(j) <= number ? 1 : 0
            j &+= 1
        }
        return k &+ c
    }
}
