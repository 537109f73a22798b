// Format 2.0, optional section kind 12: ranges (docs/FORMAT.md §5.12, the normative
// description). Its reader (`RangeTable`) and its writer (`RangeWriter`), beside the drawing of
// its bytes (little-endian; offsets relative to the section's start):
//
//   offset  size    field        value
//   ------  ------  -----------  --------------------------------------------------------------
//        0       4  rangeCount   ranges, sorted, disjoint
//        4       4  valueCount   range values (each a category and a label of two parts)
//        8       4  hotCount     label parts 0 ..< hotCount are raw
//       12       2  blockSize    ranges per block, 1 … 1,024 (the writer: 4)
//       14       2  keyBytes     width of a block entry's first-number delta: 4 or 8
//       16  4 × 9   partLengths  the lengths of parts P0 … P8
//       52       4  partCount    label parts
//       56  2 × 16  spanTable    16 decimal codes of frequent spans
//       88       …  P0 … P8      back to back, no padding:
//
//   P0 index        per group of 16 blocks: u64 groupFirst, u32 record offset in P1; a sentinel
//                   (u64 0, u32 length of P1); then per block: its first number − groupFirst
//                   (u32 or u64, keyBytes), u16 record length (bits 0–14) | entries-inside (bit 15)
//   P1 records      per block its ranges, each: varint head (bits 0–2 kind = 3·gap + mode,
//                   bits 3… span symbol), a varint decimal-coded gap when gap = 2, a varint
//                   value id when mode = 0
//   P2 value categories  u8 per range value (ValueCategories.swift)
//   P3 … P7         the label parts: hot offsets, hot parts, symbol table, cold index, cold
//                   parts (LabelTable.swift, LabelSymbolTable.swift)
//   P8 value parts  per range value: prefix and suffix part ids, u16 each (≤ 65,536 parts) or u32

/// One decoded range of the ranges section.
struct RawRange: Equatable {
    var first: UInt64
    var last: UInt64
    var value: Int
}

/// The ranges section (kind 12), checked at open in O(1) and at use. A class: a lookup
/// borrows it without copying (and retaining) its views and decoders.
final class RangeTable: Sendable {
    /// Where each field of the section's header starts (the drawing above).
    enum Offset {
        static let rangeCount = 0
        static let valueCount = 4
        static let hotCount = 8
        static let blockSize = 12
        static let keyBytes = 14
        static let partLengths = 16
        static let partCount = 52
        static let spanTable = 56
    }

    let rangeCount: Int
    let blockCount: Int
    let blockSize: Int
    let groupCount: Int
    /// Bytes of a block entry's first-number delta: 4 or 8.
    let keyBytes: Int
    /// The group entries (12 bytes each, then the sentinel).
    let groups: ByteView
    /// The block entries (`keyBytes + 2` bytes each).
    let blocks: ByteView
    let records: ByteView
    /// Range values: per value a category code (P2) and its label's two parts (P8).
    let valueCount: Int
    let valueCategories: ByteView
    let valueParts: ByteView
    /// Bytes of a part id in P8: 2 when there are at most 65,536 parts, else 4.
    let partIdBytes: Int
    /// The label parts.
    let labels: LabelTable
    let path: String
    /// 10^0 … 10^15, then the span table's 16 spans, then its 16 codes.
    private let powers: FixedBuffer<UInt64>
    /// The span table's decimal codes (verify: an escaped span must not be one of them).
    let spanCodes: [UInt64]

    /// Checks the section's header, the sizes of its parts, the index's ends, the hot offsets'
    /// and cold index's spans and the symbol table: O(1) in the number of ranges.
    init(_ s: ByteView, path: String) throws(CallerIDError) {
        func bad(_ what: String) -> CallerIDError { CallerIDError.corrupt(path, "ranges: \(what)") }
        guard s.count >= Format.rangesHeaderSize else { throw bad("section is \(s.count) bytes, shorter than its \(Format.rangesHeaderSize)-byte header") }
        let rangeCount = Int(s.u32(Offset.rangeCount)), valueCount = Int(s.u32(Offset.valueCount))
        let hotCount = Int(s.u32(Offset.hotCount)), partCount = Int(s.u32(Offset.partCount))
        let blockSize = Int(s.u16(Offset.blockSize)), keyBytes = Int(s.u16(Offset.keyBytes))
        guard keyBytes == 4 || keyBytes == 8 else { throw bad("key width \(keyBytes) is neither 4 nor 8") }
        guard (1...Format.maxBlockEntries).contains(blockSize) else { throw bad("block size \(blockSize) outside 1...\(Format.maxBlockEntries)") }
        var parts: [ByteView] = []
        var at = Format.rangesHeaderSize
        for i in 0..<Format.rangesPartCount {
            let length = Int(s.u32(Offset.partLengths + 4 * i))
            guard let part = s.slice(at, length) else { throw bad("part \(i) (\(length) bytes at \(at)) runs past the section's \(s.count) bytes") }
            parts.append(part)
            at += length
        }
        guard at == s.count else { throw bad("parts end at \(at), the section at \(s.count)") }
        let index = parts[0], records = parts[1], categories = parts[2], hotOffsets = parts[3]
        let hotLabels = parts[4], symbolTable = parts[5], coldIndex = parts[6], coldLabels = parts[7], valueParts = parts[8]
        let blockCount = (rangeCount + blockSize - 1) / blockSize
        let groupCount = (blockCount + Format.rangeGroupBlocks - 1) / Format.rangeGroupBlocks
        // Every range costs at least 1 record byte (its head).
        guard rangeCount <= records.count else { throw bad("\(rangeCount) ranges cannot fit \(records.count) record bytes") }
        guard hotCount <= partCount, valueCount <= rangeCount, (valueCount == 0) == (rangeCount == 0), (partCount == 0) == (valueCount == 0) else {
            throw bad("\(valueCount) values of \(partCount) label parts (\(hotCount) hot) for \(rangeCount) ranges")
        }
        let partIdBytes = partCount <= 1 << 16 ? 2 : 4
        func size(_ name: String, _ view: ByteView, _ expected: Int) throws(CallerIDError) {
            guard view.count == expected else { throw bad("\(name) is \(view.count) bytes; it must be \(expected)") }
        }
        let groupBytes = Format.rangeGroupEntrySize * (groupCount + 1)
        try size("index", index, groupBytes + (keyBytes + 2) * blockCount)
        try size("value categories", categories, valueCount)
        try size("value parts", valueParts, 2 * partIdBytes * valueCount)
        guard Int(index.u32(Format.rangeGroupEntrySize * groupCount + 8)) == records.count, groupCount == 0 || index.u32(8) == 0 else {
            throw bad("the index does not start at 0 and end at the records' \(records.count) bytes")
        }
        let labels = try LabelTable(valueCount: partCount, hotCount: hotCount, hotOffsets: hotOffsets, hotLabels: hotLabels,
                                    coldIndex: coldIndex, coldLabels: coldLabels, symbolTable: symbolTable, path: path,
                                    what: "range label part", part: { $0 }, bad: bad)
        var spanCodes: [UInt64] = []
        for i in 0..<Format.rangeSpanTableSize {
            let code = UInt64(s.u16(Offset.spanTable + 2 * i))
            guard RangeTable.span(ofCode: code) != nil else { throw bad("span table entry \(i) (code \(code)) exceeds the largest number") }
            spanCodes.append(code)
        }
        var powers = FixedBuffer<UInt64>(repeating: 0, count: 16 + 2 * Format.rangeSpanTableSize)
        for e in 0..<16 { powers[e] = RangeTable.powerOf10(e) }
        for (i, code) in spanCodes.enumerated() {
            powers[16 + i] = RangeTable.span(ofCode: code)!
            powers[16 + Format.rangeSpanTableSize + i] = code
        }
        self.powers = powers
        self.spanCodes = spanCodes
        self.rangeCount = rangeCount
        self.blockCount = blockCount
        self.blockSize = blockSize
        self.groupCount = groupCount
        self.keyBytes = keyBytes
        groups = index.slice(0, groupBytes)!
        blocks = index.slice(groupBytes, index.count - groupBytes)!
        self.records = records
        self.path = path
        self.valueCount = valueCount
        valueCategories = categories
        self.valueParts = valueParts
        self.partIdBytes = partIdBytes
        self.labels = labels
    }

    @inline(__always)
    func groupKey(_ g: Int) -> UInt64 { groups.u64(Format.rangeGroupEntrySize &* g) }

    @inline(__always)
    func groupOffset(_ g: Int) -> Int { Int(groups.u32(Format.rangeGroupEntrySize &* g &+ 8)) }

    /// Block `b`'s first number minus its group's.
    @inline(__always)
    func blockDelta(_ b: Int) -> UInt64 {
        let at = (keyBytes &+ 2) &* b
        return keyBytes == 4 ? UInt64(blocks.u32(at)) : blocks.u64(at)
    }

    /// Block `b`'s record length.
    @inline(__always)
    func blockLength(_ b: Int) -> Int { Int(blocks.u16((keyBytes &+ 2) &* b &+ keyBytes)) & 0x7FFF }
    /// Bit 15 of the block's length field: an entry of the file lies inside one of its ranges
    /// (the writer sets it; verify recomputes it). Clear: no number of these ranges has an entry.
    func blockHasEntries(_ b: Int) -> Bool { blocks.u16((keyBytes &+ 2) &* b &+ keyBytes) & 0x8000 != 0 }

    /// The last group whose first number is ≤ x, or −1: a four-way search (three keys compared
    /// at once, independent loads; the step is their count, not a branch), then bisection
    /// steps for the last three or fewer candidates.
    @inline(__always)
    func groupFor(_ x: UInt64) -> Int {
        var lo = 0, n = groupCount
        guard n > 0, groupKey(0) <= x else { return -1 }
        @inline(__always) func le(_ g: Int) -> Int { groupKey(g) <= x ? 1 : 0 }
        while n >= 4 {
            let q = n &>> 2
            lo &+= q &* (le(lo &+ q) &+ le(lo &+ 2 &* q) &+ le(lo &+ 3 &* q))
            n &-= 3 &* q
        }
        while n > 1 {
            let half = n &>> 1
            lo &+= half &* le(lo &+ half)
            n &-= half
        }
        return lo
    }

    /// The last block of group `g` whose first number is ≤ x (the group's first block when
    /// none is), with the offset of its record: every block entry of the group is read, without
    /// branches on their keys.
    @inline(__always)
    func blockFor(_ x: UInt64, inGroup g: Int) -> (block: Int, start: Int) {
        let b0 = g &* Format.rangeGroupBlocks
        let bEnd = min(b0 &+ Format.rangeGroupBlocks, blockCount)
        let d = x &- groupKey(g)
        var b = b0, start = groupOffset(g)
        var k = b0 &+ 1
        while k < bEnd {
            let above = Int(truncatingIfNeeded: Int64(bitPattern: d &- blockDelta(k)) &>> 63)
            start &+= blockLength(k &- 1) & ~above
            b &+= 1 &+ above
            k &+= 1
        }
        return (b, start)
    }

    /// Block `b`'s record offset (its group's offset plus the lengths of the blocks before it
    /// in the group).
    func blockStart(_ b: Int) -> Int {
        let g = b / Format.rangeGroupBlocks
        var start = groupOffset(g)
        for k in (g * Format.rangeGroupBlocks)..<b { start += blockLength(k) }
        return start
    }

    /// Block `b`'s first number: nil when the sum overflows (a damaged index).
    @inline(__always)
    func firstKey(_ b: Int) -> UInt64? {
        let (v, o) = groupKey(b / Format.rangeGroupBlocks).addingReportingOverflow(blockDelta(b))
        return o ? nil : v
    }

    /// Ranges in block `b`.
    @inline(__always)
    func count(ofBlock b: Int) -> Int { b == blockCount &- 1 ? rangeCount &- b &* blockSize : blockSize }

    /// A decoder positioned at block `b`'s first range, whose record starts at `start`; checks
    /// the record's bounds and the block's first number.
    @inline(__always)
    func decoder(_ b: Int, start: Int) throws(CallerIDError) -> BlockDecoder {
        let end = start &+ blockLength(b)
        guard start < end, end <= records.count, let first = firstKey(b), first <= Format.maxNumber else {
            throw CallerIDError.corrupt(path, "ranges: block \(b): record at \(start)..<\(end) or first number is damaged")
        }
        return BlockDecoder(records: records, powers: powers.elements, at: start, end: end, upcoming: first, remaining: count(ofBlock: b), isFirst: true,
                            valueCount: valueCount)
    }

    /// The range holding `x`, or nil. The same decoding and checks as ``BlockDecoder/next()``,
    /// in a loop shaped for the common case (one- and two-byte heads, gaps of 0 or 1 number, the
    /// value one of the two most recent) with few branches that depend on the data.
    @inline(__always)
    func find(_ x: UInt64) throws(CallerIDError) -> RawRange? { try findInBlock(x)?.range }

    /// ``find(_:)`` and the block the range is in.
    func findInBlock(_ x: UInt64) throws(CallerIDError) -> (range: RawRange, block: Int)? {
        guard x <= Format.maxNumber else { return nil }
        let g = groupFor(x)
        guard g >= 0 else { return nil }
        let (b, start) = blockFor(x, inGroup: g)
        var d = try decoder(b, start: start)
        let end = d.end
        var at = d.at
        var upcoming = d.upcoming
        var remaining = d.remaining
        var recent0 = -1, recent1 = -1
        let valueCount = d.valueCount
        func damaged() -> CallerIDError { CallerIDError.corrupt(path, "ranges: block \(b) is damaged") }
        var isFirst = true
        while remaining > 0 {
            // The head: one or two bytes without a branch on which; longer ones the slow way.
            var head: UInt64
            if at &+ 2 <= end, case let two = UInt64(records.u16(at)), two & 0x8080 != 0x8080 {
                let more = (two &>> 7) & 1
                head = (two & 0x7F) | (((two &>> 8) & 0x7F) &<< 7) & (0 &- more)
                at &+= 1 &+ Int(more)
            } else {
                d.at = at
                guard let h = d.varint() else { throw damaged() }
                head = h
                at = d.at
            }
            // The span: table entry or decimal code, both computed (no branch on which).
            let symbol = head &>> 3
            let inTable = symbol < UInt64(Format.rangeSpanTableSize)
            guard let coded = d.decimal(inTable ? 0 : symbol &- UInt64(Format.rangeSpanTableSize)) else { throw damaged() }
            let span = inTable ? d.powers[16 &+ Int(symbol & 15)] : coded
            let k = Int(head & 7)
            let gap = (k &* 11) &>> 5   // k / 3 for k < 8
            let mode = k &- 3 &* gap
            var first = upcoming &+ UInt64(gap & 1)
            if gap != 0 {
                guard !isFirst else { throw damaged() }
                if gap == 2 {
                    d.at = at
                    guard let c = d.varint(), let size = d.decimal(c) else { throw damaged() }
                    at = d.at
                    first = upcoming &+ size
                }
            }
            var value: Int
            if mode == 0 {
                d.at = at
                guard let v = d.varint(), v < UInt64(valueCount) else { throw damaged() }
                at = d.at
                value = Int(v)
            } else {
                value = mode == 1 ? recent0 : recent1
                guard value >= 0 else { throw damaged() }
            }
            let changed = value != recent0
            recent1 = changed ? recent0 : recent1
            recent0 = value
            let last = first &+ (span &- 1)
            guard first <= Format.maxNumber, last <= Format.maxNumber else { throw damaged() }
            if x <= last { return x < first ? nil : (RawRange(first: first, last: last, value: value), b) }
            upcoming = last &+ 1
            remaining &-= 1
            isFirst = false
        }
        return nil
    }

    /// Range value `v`'s category code, checked against the number of categories.
    @inline(__always)
    func categoryCode(_ v: Int, categoryCount: Int) throws(CallerIDError) -> Int {
        guard let code = ValueCategories.code(valueCategories, v, categoryCount: categoryCount) else {
            throw CallerIDError.corrupt(path, "range value \(v) has unknown category code \(valueCategories.u8(v))")
        }
        return code
    }

    /// Range value `v`'s two label parts (prefix, suffix), checked against the part count.
    @inline(__always)
    func parts(_ v: Int) throws(CallerIDError) -> (Int, Int) {
        let a: Int, b: Int
        if partIdBytes == 2 {
            a = Int(valueParts.u16(4 &* v)); b = Int(valueParts.u16(4 &* v &+ 2))
        } else {
            a = Int(valueParts.u32(8 &* v)); b = Int(valueParts.u32(8 &* v &+ 4))
        }
        guard a < labels.valueCount, b < labels.valueCount else {
            throw CallerIDError.corrupt(path, "range value \(v) names label part \(max(a, b)) of \(labels.valueCount)")
        }
        return (a, b)
    }

    /// The range holding `x` with its value's category and its label's parts, or nil.
    @inline(__always)
    func locate(_ x: UInt64, categoryCount: Int) throws(CallerIDError) -> Database.RangeLocated? {
        guard let (found, block) = try findInBlock(x) else { return nil }
        let category = try categoryCode(found.value, categoryCount: categoryCount)
        let (a, b) = try parts(found.value)
        let aBytes = try labels.locate(a), bBytes = try labels.locate(b)
        return Database.RangeLocated(value: found.value, category: category, first: found.first, last: found.last,
                                     prefix: a, prefixBytes: aBytes, suffix: b, suffixBytes: bBytes,
                                     bufferBytes: labels.bufferBytes(a, aBytes) &+ labels.bufferBytes(b, bBytes),
                                     entriesInside: blockHasEntries(block))
    }

    /// Writes a located range's label (its two parts) to `out` (room for its `bufferBytes`);
    /// the length, at most 65,535 bytes.
    @inline(__always)
    func label(of r: Database.RangeLocated, into out: MutableByteView) throws(CallerIDError) -> Int {
        let n = try labels.copy(r.prefix, r.prefixBytes, to: out)
        let m = try labels.copy(r.suffix, r.suffixBytes, to: out.dropFirst(n))
        guard n &+ m <= Format.maxLabelBytes else {
            throw CallerIDError.corrupt(path, "range value \(r.value)'s label is longer than \(Format.maxLabelBytes) bytes")
        }
        return n &+ m
    }

    /// Calls `body` with range value `v`'s label.
    func withLabel<R>(_ v: Int, _ body: (UnsafeRawBufferPointer) throws(CallerIDError) -> R) throws(CallerIDError) -> R {
        let (a, b) = try parts(v)
        let aBytes = try labels.locate(a), bBytes = try labels.locate(b)
        let r = Database.RangeLocated(value: v, category: 0, first: 0, last: 0, prefix: a, prefixBytes: aBytes, suffix: b, suffixBytes: bBytes,
                                      bufferBytes: labels.bufferBytes(a, aBytes) + labels.bufferBytes(b, bBytes), entriesInside: true)
        return try withScratchBytes(max(r.bufferBytes, 8)) { (out) throws(CallerIDError) -> R in
            let n = try label(of: r, into: out)
            return try body(out.bytes(upTo: n))
        }
    }

    /// Decodes a block's ranges one at a time, each checked: varints inside the record and at
    /// most 9 bytes, decimal codes in range, numbers ≤ maxNumber without overflow, value ids below
    /// the value count, no gap on a block's first range.
    struct BlockDecoder {
        let records: ByteView
        /// 10^0 … 10^15 (a load instead of a switch: no indirect branch per range), the span
        /// table's spans and its codes (lent by the table, which outlives the decoder).
        let powers: UnsafeBufferPointer<UInt64>
        var at: Int
        let end: Int
        /// The smallest first number the next range may have (the block's first number for its first range).
        var upcoming: UInt64
        var remaining: Int
        var isFirst: Bool
        let valueCount: Int
        /// The two most recently used values of the block (−1: none yet).
        var recent0 = -1, recent1 = -1
        /// Set when a varint or a decimal code was not in canonical (writer's) form (checked
        /// only when `checkCanonical`: verify).
        var nonCanonical = false
        var checkCanonical = false

        @inline(__always)
        mutating func varint() -> UInt64? {
            // One byte (almost every head and value id): no loop.
            if at < end {
                let byte = records.u8(at)
                if byte < 0x80 {
                    at &+= 1
                    return UInt64(byte)
                }
            }
            var v: UInt64 = 0, shift: UInt64 = 0
            while true {
                guard at < end, shift < 63 else { return nil }
                let byte = records.u8(at)
                at &+= 1
                v |= UInt64(byte & 0x7F) &<< shift
                if byte < 0x80 {
                    if byte == 0 && shift > 0 && checkCanonical { nonCanonical = true }
                    return v
                }
                shift &+= 7
            }
        }

        /// `m × 10^e` from a decimal code `(m − 1) << 4 | e`, nil when it exceeds maxNumber + 1.
        @inline(__always)
        mutating func decimal(_ code: UInt64) -> UInt64? {
            let m = (code &>> 4) &+ 1, e = Int(code & 15)
            if checkCanonical && e < 15 && m % 10 == 0 { nonCanonical = true }
            let (v, overflow) = m.multipliedReportingOverflow(by: powers[e])
            guard !overflow, v <= Format.maxNumber &+ 1 else { return nil }
            return v
        }

        /// The span of symbol `s`: table entry `s` (< 16), else the decimal code `s − 16`.
        @inline(__always)
        mutating func span(_ s: UInt64) -> UInt64? {
            if s < UInt64(Format.rangeSpanTableSize) { return powers[16 &+ Int(s)] }
            let code = s &- UInt64(Format.rangeSpanTableSize)
            if checkCanonical {
                for i in 0..<Format.rangeSpanTableSize where powers[16 + Format.rangeSpanTableSize + i] == code { nonCanonical = true }
            }
            return decimal(code)
        }

        /// The next range; nil when the record is damaged (or exhausted).
        @inline(__always)
        mutating func next() -> RawRange? {
            guard remaining > 0, let head = varint(), let span = span(head &>> 3) else { return nil }
            // The kind k = 3 × gap + mode (0 … 7): gap 0 adjacent, 1 one number, 2 coded;
            // mode 0 explicit, 1 recent0, 2 recent1.
            let k = Int(head & 7)
            let gap = k / 3, mode = k &- 3 &* gap
            var first = upcoming
            if gap != 0 {
                guard !isFirst else { return nil }
                if gap == 1 {
                    first &+= 1
                } else {
                    guard let g = varint(), let size = decimal(g) else { return nil }
                    if checkCanonical && size == 1 { nonCanonical = true }
                    first &+= size   // upcoming ≤ maxNumber + 1 and size ≤ maxNumber + 1: no overflow
                }
            }
            var value: Int
            if mode == 0 {
                guard let v = varint(), v < UInt64(valueCount) else { return nil }
                value = Int(v)
                if checkCanonical && (value == recent0 || (value == recent1 && gap != 2)) { nonCanonical = true }
            } else {
                // 1: the last value, 2: the one before (selects, not branches).
                value = mode == 1 ? recent0 : recent1
                guard value >= 0 else { return nil }
            }
            let changed = value != recent0
            recent1 = changed ? recent0 : recent1
            recent0 = value
            let last = first &+ (span &- 1)
            guard first <= Format.maxNumber, last <= Format.maxNumber else { return nil }
            upcoming = last &+ 1
            remaining &-= 1
            isFirst = false
            return RawRange(first: first, last: last, value: value)
        }
    }

    /// `m × 10^e` for the decimal code `(m − 1) << 4 | e`; nil above maxNumber + 1.
    static func span(ofCode code: UInt64) -> UInt64? {
        let m = (code >> 4) + 1
        let (v, overflow) = m.multipliedReportingOverflow(by: powerOf10(Int(code & 15)))
        return !overflow && v <= Format.maxNumber + 1 ? v : nil
    }

    /// 10^e for e in 0…15.
    @inline(__always)
    static func powerOf10(_ e: Int) -> UInt64 {
        switch e & 15 {
        case 0: 1
        case 1: 10
        case 2: 100
        case 3: 1_000
        case 4: 10_000
        case 5: 100_000
        case 6: 1_000_000
        case 7: 10_000_000
        case 8: 100_000_000
        case 9: 1_000_000_000
        case 10: 10_000_000_000
        case 11: 100_000_000_000
        case 12: 1_000_000_000_000
        case 13: 10_000_000_000_000
        case 14: 100_000_000_000_000
        default: 1_000_000_000_000_000
        }
    }

    /// Verify: every block decodes completely and canonically, its record follows the previous
    /// block's, its first number is above the previous block's last, each group's first block
    /// is the group's first number, the key width is the narrowest, and the labels check out.
    func verify(categoryCount: Int) throws(CallerIDError) {
        func bad(_ m: String) -> CallerIDError { CallerIDError.corrupt(path, "ranges: \(m)") }
        try labels.verify()
        for v in 0..<valueCount {
            _ = try categoryCode(v, categoryCount: categoryCount)
            _ = try withLabel(v) { (bytes) throws(CallerIDError) in bytes.count }
        }
        var previousLast: UInt64? = nil
        var total = 0
        var start = 0
        var widest: UInt64 = 0
        for b in 0..<blockCount {
            if b % Format.rangeGroupBlocks == 0 {
                guard groupOffset(b / Format.rangeGroupBlocks) == start, blockDelta(b) == 0 else {
                    throw bad("group \(b / Format.rangeGroupBlocks) does not start at its first block")
                }
            }
            widest = max(widest, blockDelta(b))
            guard let first = firstKey(b) else { throw bad("block \(b)'s first number overflows") }
            if let p = previousLast { guard first > p else { throw bad("block \(b) starts at or before the previous block's last number") } }
            var d = try decoder(b, start: start)
            d.checkCanonical = true
            while d.remaining > 0 {
                guard let r = d.next() else { throw bad("block \(b) is damaged") }
                previousLast = r.last
                total += 1
            }
            guard d.at == d.end else { throw bad("block \(b) has \(d.end - d.at) unused bytes") }
            guard !d.nonCanonical else { throw bad("block \(b) has a varint, decimal code or value the writer would not write") }
            start = d.end
        }
        guard start == records.count else { throw bad("blocks end at \(start); the records at \(records.count)") }
        guard total == rangeCount else { throw bad("blocks hold \(total) ranges; the header says \(rangeCount)") }
        guard keyBytes == 4 || widest > UInt64(UInt32.max) else { throw bad("key width 8 where 4 would do") }
    }
}

// MARK: - Writer

/// Ranges resolved to non-overlapping pieces, and their section image.
enum RangeWriter {
    /// One resolved range: `[first, last]` (inclusive) → interned value `value`.
    struct Piece: Equatable {
        var first: UInt64
        var last: UInt64
        var value: UInt32
    }

    /// Resolves overlapping ranges (given in the order they were added) into sorted,
    /// non-overlapping pieces. Rule: at every number, the narrowest range holding it wins; among
    /// ranges of equal width, the one added last. A range that wins in several places gives one
    /// piece per contiguous stretch it wins. O(n log n).
    static func resolve(first: [UInt64], last: [UInt64], value: [UInt32]) -> [Piece] {
        let n = first.count
        guard n > 0 else { return [] }
        let order = (0..<n).sorted { first[$0] != first[$1] ? first[$0] < first[$1] : $0 < $1 }
        // Fast path: no overlap at all (the usual case for a numbering plan).
        var overlaps = false
        for k in 1..<n where first[order[k]] <= last[order[k - 1]] { overlaps = true; break }
        if !overlaps { return order.map { Piece(first: first[$0], last: last[$0], value: value[$0]) } }

        // Sweep: a heap of the ranges that started, best (narrowest, then latest) on top.
        var heap = MinHeap<Candidate>()
        func candidate(_ i: Int) -> Candidate { Candidate(width: last[i] - first[i], index: i) }
        var pieces: [Piece] = []
        var owners: [Int] = []
        var k = 0
        var pos = first[order[0]]
        while k < n || !heap.isEmpty {
            if heap.isEmpty { pos = max(pos, first[order[k]]) }
            while k < n && first[order[k]] <= pos { heap.push(candidate(order[k])); k += 1 }
            while let top = heap.min, last[top.index] < pos { heap.popMin() }
            guard let top = heap.min?.index else { continue }
            var end = last[top]
            if k < n && first[order[k]] - 1 < end { end = first[order[k]] - 1 }
            if let o = owners.last, o == top, pieces[pieces.count - 1].last &+ 1 == pos {
                pieces[pieces.count - 1].last = end
            } else {
                pieces.append(Piece(first: pos, last: end, value: value[top]))
                owners.append(top)
            }
            if end == UInt64.max { break }
            pos = end + 1
        }
        return pieces
    }

    /// The decimal code of `v` ≥ 1: `(m − 1) << 4 | e` with `v = m × 10^e`, `e` as large as
    /// possible (≤ 15). Numbering plans are decimal: a block of 10,000 numbers has code 4.
    @inline(__always)
    static func decimalCode(_ v: UInt64) -> UInt64 {
        var m = v, e: UInt64 = 0
        while e < 15 && m % 10 == 0 { m /= 10; e += 1 }
        return (m - 1) << 4 | e
    }

    /// A range's value: given explicitly, or the value of the block's most recently used
    /// value (`recent0`), or the one used before it (`recent1`).
    static let valueExplicit: UInt64 = 0, valueRecent0: UInt64 = 1, valueRecent1: UInt64 = 2
    /// A range's start: adjacent to the previous range, one number after it (a single number
    /// between two ranges: a numbering plan's one-number rows are entries), or after a coded gap.
    static let gapNone: UInt64 = 0, gapOne: UInt64 = 1, gapCoded: UInt64 = 2

    /// The head's kind `3 × gap + mode`, and the mode actually written: kind 8 (a coded gap
    /// with `recent1`) does not exist, so such a range writes its value explicitly (kind 6).
    @inline(__always)
    static func kind(gap: UInt64, mode: UInt64) -> (kind: UInt64, mode: UInt64) {
        gap == gapCoded && mode == valueRecent1 ? (6, valueExplicit) : (3 * gap + mode, mode)
    }

    /// The gap kind between `previous` (nil: a block's first range) and `p`.
    @inline(__always)
    static func gapKind(_ p: Piece, after previous: Piece?) -> (kind: UInt64, gap: UInt64) {
        guard let q = previous else { return (gapNone, 0) }
        let gap = p.first - q.last - 1
        return (gap == 0 ? gapNone : gap == 1 ? gapOne : gapCoded, gap)
    }

    /// The section image for sorted, non-overlapping `pieces` whose values index `label` and
    /// `valueCategory` (interned ids; only the ones used are stored).
    /// - Parameter entryKeys: the file's entry numbers, ascending: a block whose ranges hold one
    ///   of them gets its "entries inside" bit (bit 15 of its record length, FORMAT.md 5.12).
    static func encode(_ pieces: [Piece], entryKeys: [UInt64] = [], labelCount: Int, label: (Int) -> ArraySlice<UInt8>,
                       valueCategory: (Int) -> UInt8, blockSize: Int, hotLabelBytes: Int) throws(CallerIDError) -> [UInt8] {
        guard (1...Format.maxBlockEntries).contains(blockSize) else {
            throw CallerIDError(.invalidInput, "rangeBlockSize must be 1...\(Format.maxBlockEntries)")
        }
        guard pieces.count <= Int(UInt32.max) else { throw CallerIDError(.limitExceeded, "more than 2^32 - 1 ranges") }
        let (ordered, idOf) = valueIds(pieces, labelCount: labelCount, blockSize: blockSize)
        let spanTable = spanTable(pieces)
        let blocks = try encodeRecords(pieces, entryKeys: entryKeys, idOf: idOf, spanTable: spanTable, blockSize: blockSize)
        let (index, wide) = try encodeIndex(blocks)
        let labels = try encodeLabelParts(pieces, ordered: ordered, labelCount: labelCount, label: label, hotLabelBytes: hotLabelBytes)
        let categories = ordered.map(valueCategory)

        let parts = [index, blocks.records, categories, labels.table.hotOffsets, labels.table.hotLabels, labels.table.symbols,
                     labels.table.coldIndex, labels.table.coldLabels, labels.valueParts]
        var out: [UInt8] = []
        out.appendLE(UInt32(pieces.count))
        out.appendLE(UInt32(ordered.count))
        out.appendLE(UInt32(labels.table.hotCount))
        out.appendLE(UInt16(blockSize))
        out.appendLE(UInt16(wide ? 8 : 4))
        assert(out.count == RangeTable.Offset.partLengths)
        for p in parts {
            guard p.count <= Int(UInt32.max) else { throw CallerIDError(.limitExceeded, "a part of the ranges section exceeds 4 GiB") }
            out.appendLE(UInt32(p.count))
        }
        out.appendLE(UInt32(labels.partCount))
        assert(out.count == RangeTable.Offset.spanTable)
        for i in 0..<Format.rangeSpanTableSize { out.appendLE(UInt16(i < spanTable.count ? spanTable[i] : 0)) }
        assert(out.count == Format.rangesHeaderSize)
        for p in parts { out.append(contentsOf: p) }
        return out
    }

    /// Value ids by descending frequency of explicit use (ties: first occurrence), so that the
    /// values most often written get one-byte varints. Within a block, a value equal to one of
    /// the two most recently used is mostly not written (a numbering plan's neighbouring ranges
    /// mostly share their operator and region). Returns the used values in id order and the id
    /// of each value.
    static func valueIds(_ pieces: [Piece], labelCount: Int, blockSize: Int) -> (ordered: [Int], idOf: [UInt32]) {
        var freq = [Int](repeating: 0, count: labelCount)
        var firstUse = [Int](repeating: Int.max, count: labelCount)
        var recent: (UInt32?, UInt32?) = (nil, nil)
        for (i, p) in pieces.enumerated() {
            if i % blockSize == 0 { recent = (nil, nil) }
            let gap = gapKind(p, after: i % blockSize == 0 ? nil : pieces[i - 1]).kind
            let mode = recent.0 == p.value ? valueRecent0 : recent.1 == p.value ? valueRecent1 : valueExplicit
            if kind(gap: gap, mode: mode).mode == valueExplicit { freq[Int(p.value)] += 1 }
            if recent.0 != p.value { recent = (p.value, recent.0) }
            if firstUse[Int(p.value)] == Int.max { firstUse[Int(p.value)] = i }
        }
        let ordered = (0..<labelCount).filter { freq[$0] > 0 }
            .sorted { freq[$0] != freq[$1] ? freq[$0] > freq[$1] : firstUse[$0] < firstUse[$1] }
        var idOf = [UInt32](repeating: 0, count: labelCount)
        for (id, v) in ordered.enumerated() { idOf[v] = UInt32(id) }
        return (ordered, idOf)
    }

    /// The span table: the most frequent span codes that fit 16 bits (ties: the smaller code),
    /// written as symbols 0 … 15 in one-byte heads; other spans are symbol 16 + their code.
    static func spanTable(_ pieces: [Piece]) -> [UInt64] {
        var spanUses: [UInt64: Int] = [:]
        for p in pieces { spanUses[decimalCode(p.last - p.first + 1), default: 0] += 1 }
        return spanUses.filter { $0.key <= 0xFFFF }.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
            .prefix(Format.rangeSpanTableSize).map(\.key)
    }

    /// The records, and per block its first number, record start and "entries inside" bit.
    struct EncodedRecords {
        var records: [UInt8] = []
        var blockFirst: [UInt64] = []
        /// Record offsets of the blocks, then the records' end.
        var blockStart: [Int] = []
        var blockHasEntries: [Bool] = []
    }

    static func encodeRecords(_ pieces: [Piece], entryKeys: [UInt64], idOf: [UInt32], spanTable: [UInt64],
                              blockSize: Int) throws(CallerIDError) -> EncodedRecords {
        var spanSymbol: [UInt64: UInt64] = [:]
        for (i, c) in spanTable.enumerated() { spanSymbol[c] = UInt64(i) }
        var out = EncodedRecords()
        var nextEntry = 0   // the first entry key not below the current piece (both ascend)
        var start = 0
        while start < pieces.count {
            let n = min(blockSize, pieces.count - start)
            var inside = false
            for p in pieces[start..<(start + n)] {
                while nextEntry < entryKeys.count && entryKeys[nextEntry] < p.first { nextEntry += 1 }
                if nextEntry < entryKeys.count && entryKeys[nextEntry] <= p.last { inside = true }
            }
            out.blockHasEntries.append(inside)
            guard out.records.count <= Int(UInt32.max) - (1 << 20) else { throw CallerIDError(.limitExceeded, "range records exceed 4 GiB") }
            out.blockFirst.append(pieces[start].first)
            out.blockStart.append(out.records.count)
            var recent: (UInt32?, UInt32?) = (nil, nil)
            for i in start..<(start + n) {
                let p = pieces[i]
                let code = decimalCode(p.last - p.first + 1)  // ≤ maxNumber + 1: never 0, never overflows
                let span = spanSymbol[code] ?? UInt64(Format.rangeSpanTableSize) + code
                let (gap, gapSize) = gapKind(p, after: i == start ? nil : pieces[i - 1])
                let (k, mode) = kind(gap: gap, mode: recent.0 == p.value ? valueRecent0 : recent.1 == p.value ? valueRecent1 : valueExplicit)
                out.records.appendVarint(Int(span << 3 | k))
                if gap == gapCoded { out.records.appendVarint(Int(decimalCode(gapSize))) }
                if mode == valueExplicit { out.records.appendVarint(Int(idOf[Int(p.value)])) }
                if recent.0 != p.value { recent = (p.value, recent.0) }
            }
            start += n
        }
        guard out.records.count <= Int(UInt32.max) else { throw CallerIDError(.limitExceeded, "range records exceed 4 GiB") }
        out.blockStart.append(out.records.count)
        return out
    }

    /// The index: per group of blocks its first number and record offset (then a sentinel),
    /// then per block its first number's distance from its group's and its record length.
    /// `wide`: the distances need 8 bytes.
    static func encodeIndex(_ blocks: EncodedRecords) throws(CallerIDError) -> (index: [UInt8], wide: Bool) {
        let groupBlocks = Format.rangeGroupBlocks
        let blockFirst = blocks.blockFirst, blockStart = blocks.blockStart
        var wide = false
        for b in 0..<blockFirst.count where blockFirst[b] - blockFirst[b - b % groupBlocks] > UInt64(UInt32.max) { wide = true }
        var index: [UInt8] = []
        for b in stride(from: 0, to: blockFirst.count, by: groupBlocks) {
            index.appendLE(blockFirst[b])
            index.appendLE(UInt32(blockStart[b]))
        }
        index.appendLE(UInt64(0))
        index.appendLE(UInt32(blocks.records.count))
        for b in 0..<blockFirst.count {
            let delta = blockFirst[b] - blockFirst[b - b % groupBlocks]
            if wide { index.appendLE(delta) } else { index.appendLE(UInt32(delta)) }
            let length = blockStart[b + 1] - blockStart[b]   // ≤ 1,024 × 27 bytes: bit 15 is free
            guard length < 0x8000 else { throw CallerIDError(.limitExceeded, "range block record of \(length) bytes (at most 32,767)") }
            index.appendLE(UInt16(length) | (blocks.blockHasEntries[b] ? 0x8000 : 0))
        }
        return (index, wide)
    }

    /// Labels as two parts each, split after the last ", " (a plan's labels join operator and
    /// region: 8,448 Rossvyaz labels are pairs of 1,803 operators and 2,355 regions), the parts
    /// deduplicated and stored like entry labels, most used first (hot); and per value its two
    /// part ids.
    static func encodeLabelParts(_ pieces: [Piece], ordered: [Int], labelCount: Int, label: (Int) -> ArraySlice<UInt8>,
                                 hotLabelBytes: Int) throws(CallerIDError) -> (table: EncodedLabels, valueParts: [UInt8], partCount: Int) {
        var rangesOf = [Int](repeating: 0, count: ordered.count)
        var valueOf = [Int](repeating: -1, count: labelCount)
        for (id, v) in ordered.enumerated() { valueOf[v] = id }
        for p in pieces { rangesOf[valueOf[Int(p.value)]] += 1 }
        var partId: [ArraySlice<UInt8>: Int] = [:]
        var partBytes: [ArraySlice<UInt8>] = []
        var partWeight: [Int] = []
        var pairs: [(Int, Int)] = []
        pairs.reserveCapacity(ordered.count)
        func intern(_ bytes: ArraySlice<UInt8>, _ weight: Int) -> Int {
            if let id = partId[bytes] { partWeight[id] += weight; return id }
            partId[bytes] = partBytes.count
            partBytes.append(bytes)
            partWeight.append(weight)
            return partBytes.count - 1
        }
        for (id, v) in ordered.enumerated() {
            let bytes = label(v)
            var cut = bytes.endIndex
            var i = bytes.endIndex - 1
            while i > bytes.startIndex {
                if bytes[i] == 0x20 && bytes[i - 1] == 0x2C { cut = i + 1; break }
                i -= 1
            }
            pairs.append((intern(bytes[..<cut], rangesOf[id]), intern(bytes[cut...], rangesOf[id])))
        }
        let partOrder = partBytes.indices.sorted { partWeight[$0] != partWeight[$1] ? partWeight[$0] > partWeight[$1] : $0 < $1 }
        var partRank = [Int](repeating: 0, count: partBytes.count)
        for (rank, p) in partOrder.enumerated() { partRank[p] = rank }
        guard partBytes.count <= Int(UInt32.max) else { throw CallerIDError(.limitExceeded, "more than 2^32 - 1 range label parts") }
        let table = try FileWriter.encodeLabels(count: partBytes.count, label: { partBytes[partOrder[$0]] }, hotLabelBytes: hotLabelBytes)
        var valueParts: [UInt8] = []
        let narrow = partBytes.count <= 1 << 16
        for (a, b) in pairs {
            if narrow {
                valueParts.appendLE(UInt16(partRank[a]))
                valueParts.appendLE(UInt16(partRank[b]))
            } else {
                valueParts.appendLE(UInt32(partRank[a]))
                valueParts.appendLE(UInt32(partRank[b]))
            }
        }
        return (table, valueParts, partBytes.count)
    }
}

/// A range in the sweep of ``RangeWriter/resolve(first:last:value:)``: the narrowest is least,
/// and among ranges of equal width the one added last.
private struct Candidate: Comparable {
    var width: UInt64
    var index: Int
    static func < (a: Candidate, b: Candidate) -> Bool { a.width != b.width ? a.width < b.width : a.index > b.index }
}
