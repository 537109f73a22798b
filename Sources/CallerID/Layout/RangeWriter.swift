// Format 2.0, optional section kind 12 ("ranges"): the writer. docs/FORMAT.md 5.12 is the
// normative description of every byte.

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

    static func appendVarint(_ v: UInt64, to out: inout [UInt8]) {
        var v = v
        while v >= 0x80 {
            out.append(UInt8(v & 0x7F) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
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
        for p in parts {
            guard p.count <= Int(UInt32.max) else { throw CallerIDError(.limitExceeded, "a part of the ranges section exceeds 4 GiB") }
            out.appendLE(UInt32(p.count))
        }
        out.appendLE(UInt32(labels.partCount))
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
                appendVarint(span << 3 | k, to: &out.records)
                if gap == gapCoded { appendVarint(decimalCode(gapSize), to: &out.records) }
                if mode == valueExplicit { appendVarint(UInt64(idOf[Int(p.value)]), to: &out.records) }
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
