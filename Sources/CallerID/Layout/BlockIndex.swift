// Format 2.0, section kind 3: the block index (docs/FORMAT.md §5.3). Its writer and its reader,
// beside the drawing of its bytes (little-endian): blockCount + 1 entries of 12 bytes, entry b
// at 12·b:
//
//   offset  size  field         value
//   ------  ----  ------------  ------------------------------------------------------------------
//        0     8  firstKey      the number of block b's first entry (the sentinel's: 0, unread)
//        8     4  recordOffset  where block b's record starts, relative to section 4
//
// Entry blockCount is the sentinel: its recordOffset is the end of the last record, so block
// b's record is [recordOffset(b), recordOffset(b + 1)). Checked at open: the sentinel's
// recordOffset = length of section 4 − 8 (the records' zero padding), recordOffset(0) = 0.

/// The block index (kind 3) with the summary above it (kind 2): the search from a number to
/// its block.
struct BlockIndex {
    let view: ByteView
    let summary: BlockSummary
    let blockCount: Int
    let summaryShift: Int

    /// Where each field of an entry starts (the drawing above).
    enum Offset {
        static let firstKey = 0
        static let recordOffset = 8
    }
    static let entrySize = Format.indexEntrySize

    // MARK: Writer

    /// Appends one entry.
    static func appendEntry(firstKey: UInt64, recordOffset: Int, to index: inout [UInt8]) {
        index.appendLE(firstKey)
        index.appendLE(UInt32(recordOffset))
    }

    // MARK: Reader

    /// The index of `blockCount` blocks over the block records `records` (section 4), with the
    /// summary: *corrupt* unless both lengths are exact, the records end with 8 zero bytes at
    /// the sentinel's offset and the first record starts at 0.
    init(_ view: ByteView, summary: ByteView, records: ByteView, blockCount: Int, summaryShift: Int, path: String) throws(CallerIDError) {
        self.summary = try BlockSummary(summary, blockCount: blockCount, summaryShift: summaryShift, path: path)
        try SectionTable.checkLength(.blockIndex, view, BlockIndex.entrySize * (blockCount + 1), path: path)
        guard records.count >= Format.recordPadding, records.isZero(records.count - Format.recordPadding, Format.recordPadding),
              view.u32(BlockIndex.entrySize * blockCount + Offset.recordOffset) == UInt32(records.count - Format.recordPadding),
              view.u32(Offset.recordOffset) == 0 || blockCount == 0 else {
            throw CallerIDError.corrupt(path, "block records do not end with the block index's last offset and 8 zero bytes")
        }
        self.view = view
        self.blockCount = blockCount
        self.summaryShift = summaryShift
    }

    /// First key of block `b` (< blockCount).
    @inline(__always)
    func firstKey(_ b: Int) -> UInt64 { view.u64(BlockIndex.entrySize &* b &+ Offset.firstKey) }

    /// Where block `b`'s record starts in section 4 (b ≤ blockCount: the sentinel's is the records' end).
    @inline(__always)
    func recordOffset(_ b: Int) -> Int { Int(view.u32(BlockIndex.entrySize &* b &+ Offset.recordOffset)) }

    /// Index of the block that may hold `number` (the last whose first key is ≤ number), or -1.
    ///
    /// Three short, branch-free levels instead of one long binary search: the summary's entry
    /// (``BlockSummary/entry(for:)``), then a count over the ≤ 2^summaryShift index entries
    /// under it (independent loads that overlap).
    @inline(__always)
    func block(for number: UInt64) -> Int {
        guard blockCount > 0 else { return -1 }
        var b = summary.entry(for: number) &<< summaryShift
        let bEnd = min(b &+ (1 &<< summaryShift), blockCount)
        var c = 0
        var j = b &+ 1
        while j < bEnd {
            c &+= firstKey(j) <= number ? 1 : 0
            j &+= 1
        }
        b &+= c
        return firstKey(b) <= number ? b : -1
    }

    /// Verify: first keys strictly ascending, record offsets non-decreasing, every record
    /// non-empty, the summary equal to every 2^summaryShift-th first key.
    func verify(path: String) throws(CallerIDError) {
        func bad(_ what: String) -> CallerIDError { CallerIDError.corrupt(path, what) }
        var previousOffset = 0
        for b in 0..<blockCount {
            if b > 0 { guard firstKey(b) > firstKey(b - 1) else { throw bad("block index keys not ascending at block \(b)") } }
            let offset = recordOffset(b)
            guard offset >= previousOffset else { throw bad("block index offsets descend at block \(b)") }
            previousOffset = offset
            if b & ((1 << summaryShift) - 1) == 0 {
                guard summary.key(b >> summaryShift) == firstKey(b) else { throw bad("block summary disagrees with block \(b)") }
            }
            guard recordOffset(b + 1) > offset else { throw bad("block \(b) record is empty") }
        }
    }
}

extension FileWriter {
    /// The writer of sections 2–4 as blocks are added one at a time: each block's record goes
    /// to the caller's `records` (which a streaming writer empties to disk between blocks); the
    /// block index (section 3) and the summary (section 2) are kept, 12 and 8/16 bytes per block.
    struct BlockSection {
        let options: LayoutOptions
        private(set) var index: [UInt8] = []
        private(set) var summary: [UInt8] = []
        private(set) var count = 0
        /// Bytes of block records so far, the ones handed out and written elsewhere included.
        private(set) var recordBytes = 0
        /// The file's major version: 3 once a record uses key codec 2, else 2 (docs/FORMAT.md §9).
        private(set) var major = Format.majorWithoutRunBitmap

        init(options: LayoutOptions) { self.options = options }

        /// Appends one block's record (1…blockSize entries) to `records`.
        mutating func append(keys: ArraySlice<UInt64>, values: ArraySlice<UInt32>, ids: some ValueCoder,
                             to records: inout [UInt8], parts: inout LayoutParts) throws(CallerIDError) {
            guard recordBytes <= Int(UInt32.max) - (1 << 20) else {
                throw CallerIDError(.limitExceeded, "block records exceed 4 GiB")
            }
            if count % (1 << options.summaryShift) == 0 { BlockSummary.append(firstKey: keys.first!, to: &summary) }
            BlockIndex.appendEntry(firstKey: keys.first!, recordOffset: recordBytes, to: &index)
            let before = records.count
            let codec = try BlockRecord.append(keys: keys, values: values, ids: ids, syncInterval: 1 << options.syncShift,
                                               runBitmap: options.runBitmap, to: &records, parts: &parts)
            if codec == Format.keyCodecRunBitmap { major = Format.major }
            recordBytes += records.count - before
            count += 1
        }

        /// The index's sentinel and the records' padding (appended to `records`).
        mutating func finish(records: inout [UInt8], parts: inout LayoutParts) {
            BlockIndex.appendEntry(firstKey: 0, recordOffset: recordBytes, to: &index)
            records.append(contentsOf: repeatElement(0, count: Format.recordPadding))
            recordBytes += Format.recordPadding
            parts.keys += Format.recordPadding
        }
    }
}
