// Format 2.0, optional section kind 12 ("ranges"): the reader. docs/FORMAT.md 5.12 is the
// normative description; `Layout/RangeWriter.swift` is the writer.

/// One decoded range of the ranges section.
struct RawRange: Equatable {
    var first: UInt64
    var last: UInt64
    var value: Int
}

/// The ranges section (kind 12), checked at open in O(1) and at use. A class: a lookup
/// borrows it without copying (and retaining) its views and decoders.
final class RangeTable: Sendable {
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
        let rangeCount = Int(s.u32(0)), valueCount = Int(s.u32(4)), hotCount = Int(s.u32(8)), partCount = Int(s.u32(52))
        let blockSize = Int(s.u16(12)), keyBytes = Int(s.u16(14))
        guard keyBytes == 4 || keyBytes == 8 else { throw bad("key width \(keyBytes) is neither 4 nor 8") }
        guard (1...Format.maxBlockEntries).contains(blockSize) else { throw bad("block size \(blockSize) outside 1...\(Format.maxBlockEntries)") }
        var parts: [ByteView] = []
        var at = Format.rangesHeaderSize
        for i in 0..<Format.rangesPartCount {
            let length = Int(s.u32(16 + 4 * i))
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
            let code = UInt64(s.u16(56 + 2 * i))
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
