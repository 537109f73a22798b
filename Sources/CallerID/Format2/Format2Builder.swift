// Format 2.0 prototype: the writer. Layout in docs/FORMAT-2.0-DESIGN.md.

/// A distinct (label, category code) pair of the prototype writer's input.
@_spi(Format2Prototype) public struct Format2Value: Hashable, Sendable {
    public var label: [UInt8]
    public var category: UInt8
    public init(label: [UInt8], category: UInt8) {
        self.label = label
        self.category = category
    }
}

/// Writer settings of the prototype (the figures in the design note use the defaults).
@_spi(Format2Prototype) public struct Format2Options: Sendable {
    /// Entries per block record.
    public var blockSize = 256
    /// A value sync point every 2^syncShift entries of a block.
    public var syncShift = 5
    /// Raw label bytes of the hot labels (the most frequent values), stored uncompressed;
    /// they are also the LZ4 dictionary of the cold chunks (its last 64 KiB).
    public var hotLabelBytes = 64 * 1024
    /// A cold chunk is closed once it holds this many raw bytes.
    public var chunkBytes = 2048
    public var compressionLevel: Int32 = 12
    public init() {}
}

/// Bytes of a prototype file by part.
@_spi(Format2Prototype) public struct Format2Parts: Sendable {
    /// Block headers, Elias–Fano upper and lower bits.
    public var keys = 0
    /// Sync tables, Huffman value streams, code table.
    public var values = 0
    /// Summary, block first keys, block offsets.
    public var index = 0
    /// Hot labels, their offsets, cold chunk table and chunks, value categories.
    public var labels = 0
    /// Header, section directory, category names, padding.
    public var other = 0
    public var hotValues = 0
    public var coldChunks = 0
    /// Entries whose value is hot (raw label, no decoding).
    public var hotEntries = 0
}

/// Section kinds of the prototype, in file order.
enum Format2Section: Int, CaseIterable {
    case summary = 0, blockKeys, blockOffsets, blocks, codeCounts, valueCategories, hotOffsets, hotBytes,
         chunkTable, coldData, categories
}

@_spi(Format2Prototype) public enum Format2Builder {
    /// Builds a prototype file. `numbers` strictly ascending valid numbers; `valueIndex[i]`
    /// indexes `values` for `numbers[i]`; category codes index `categories`.
    public static func build(numbers: [UInt64], valueIndex: [Int], values: [Format2Value], categories: [Category],
                             options: Format2Options = Format2Options()) throws(CallerIDError) -> (bytes: [UInt8], parts: Format2Parts) {
        guard numbers.count == valueIndex.count else { throw CallerIDError(.invalidInput, "numbers and values differ in count") }
        guard (1...Format2.maxBlockEntries).contains(options.blockSize), (0...12).contains(options.syncShift) else {
            throw CallerIDError(.invalidInput, "bad block size or sync interval")
        }
        guard !categories.isEmpty, categories.count <= 256 else { throw CallerIDError(.invalidInput, "1-256 categories") }
        var prev: UInt64 = 0
        for n in numbers {
            guard n > prev, n <= PhoneNumber.maximum else { throw CallerIDError(.invalidInput, "numbers must be ascending valid E.164 numbers") }
            prev = n
        }
        for v in values {
            guard v.label.count <= Format2.maxLabelBytes, Int(v.category) < categories.count else {
                throw CallerIDError(.invalidInput, "label too long or unknown category")
            }
        }
        var parts = Format2Parts()

        // 1. Value ids: used values by descending frequency get code lengths; ids are then
        //    ordered by (code length, first occurrence in number order).
        var freq = [Int](repeating: 0, count: values.count)
        var first = [Int](repeating: Int.max, count: values.count)
        for (i, v) in valueIndex.enumerated() {
            guard v >= 0, v < values.count else { throw CallerIDError(.invalidInput, "value index out of range") }
            freq[v] += 1
            if first[v] == Int.max { first[v] = i }
        }
        let used = (0..<values.count).filter { freq[$0] > 0 }
        guard used.count < 1 << Format2.maxCodeLength else { throw CallerIDError(.limitExceeded, "too many distinct values") }
        let byFreq = used.sorted { freq[$0] != freq[$1] ? freq[$0] > freq[$1] : first[$0] < first[$1] }
        let counts = format2CodeLengthCounts(frequencies: byFreq.map { freq[$0] })
        var lengthOf = [Int](repeating: 0, count: values.count)
        do {
            var r = 0
            for len in 1..<counts.count {
                for _ in 0..<counts[len] {
                    lengthOf[byFreq[r]] = len
                    r += 1
                }
            }
        }
        let ordered = used.sorted { lengthOf[$0] != lengthOf[$1] ? lengthOf[$0] < lengthOf[$1] : first[$0] < first[$1] }
        var idOf = [Int](repeating: -1, count: values.count)
        for (id, v) in ordered.enumerated() { idOf[v] = id }
        let codes = Format2Code.codes(counts: counts)  // codes[id]
        let valueCount = ordered.count

        // 2. Block records.
        var blockKeys: [UInt64] = []
        var blockOffsets: [UInt32] = []
        var blocks: [UInt8] = []
        let syncInterval = 1 << options.syncShift
        var start = 0
        while start < numbers.count {
            let n = min(options.blockSize, numbers.count - start)
            let firstKey = numbers[start]
            blockKeys.append(firstKey)
            guard blocks.count <= Int(UInt32.max) - (1 << 20) else { throw CallerIDError(.limitExceeded, "block section exceeds 4 GiB") }
            blockOffsets.append(UInt32(blocks.count))
            // Elias–Fano of x_j = key_{j+1} − firstKey, j = 0 … n−2.
            let m = n - 1
            let u = m > 0 ? numbers[start + n - 1] - firstKey : 0
            var l = 0
            if m > 0, u / UInt64(m) >= 1 { l = min(56, Int(63 - (u / UInt64(m)).leadingZeroBitCount)) }
            var upper = Format2LSBWriter()
            var lower = Format2LSBWriter()
            for j in 0..<m {
                let x = numbers[start + 1 + j] - firstKey
                upper.setBit(Int(x >> UInt64(l)) + j)
                lower.write(x & ((1 << UInt64(l)) - 1), l)
            }
            let upperWords = (upper.bitCount + 63) / 64
            upper.bytes += [UInt8](repeating: 0, count: upperWords * 8 - upper.bytes.count)
            // Values, with a sync point (bit offset) every syncInterval entries.
            var stream = Format2MSBWriter()
            var sync: [UInt16] = []
            for i in 0..<n {
                if i > 0 && i % syncInterval == 0 {
                    guard stream.bitCount <= Int(UInt16.max) else { throw CallerIDError(.limitExceeded, "block value stream too long: lower blockSize") }
                    sync.append(UInt16(stream.bitCount))
                }
                let c = codes.isEmpty ? (code: UInt32(0), length: 0) : codes[idOf[valueIndex[start + i]]]
                stream.write(c.code, c.length)
            }
            guard upperWords <= Int(UInt16.max), lower.bytes.count <= Int(UInt16.max) else {
                throw CallerIDError(.limitExceeded, "block too large")
            }
            appendU16(&blocks, UInt16(n))
            blocks.append(UInt8(l))
            blocks.append(0)
            appendU16(&blocks, UInt16(upperWords))
            appendU16(&blocks, UInt16(lower.bytes.count))
            for s in sync { appendU16(&blocks, s) }
            blocks += upper.bytes
            blocks += lower.bytes
            blocks += stream.bytes
            parts.keys += 8 + upper.bytes.count + lower.bytes.count
            parts.values += 2 * sync.count + stream.bytes.count
            start += n
        }
        blockOffsets.append(UInt32(blocks.count))
        blocks += [UInt8](repeating: 0, count: 8)  // every 8-byte load inside a record stays in the section
        parts.keys += 8
        var summary: [UInt64] = []
        for b in stride(from: 0, to: blockKeys.count, by: Format2.summaryStride) { summary.append(blockKeys[b]) }

        // 3. Labels: hot (raw) then cold chunks.
        var hotCount = 0
        var hotBytes: [UInt8] = []
        var hotOffsets: [UInt32] = [0]
        while hotCount < valueCount, hotBytes.count + values[ordered[hotCount]].label.count <= options.hotLabelBytes {
            hotBytes += values[ordered[hotCount]].label
            hotOffsets.append(UInt32(hotBytes.count))
            hotCount += 1
        }
        parts.hotValues = hotCount
        for v in valueIndex where idOf[v] < hotCount { parts.hotEntries += 1 }
        let compressor = DictionaryCompressor(dictionary: Array(hotBytes.suffix(65_536)), level: options.compressionLevel)
        var chunkTable: [UInt8] = []
        var coldData: [UInt8] = []
        var id = hotCount
        while id < valueCount {
            let firstId = id
            var raw: [UInt8] = []
            while id < valueCount, raw.count < options.chunkBytes {
                let label = values[ordered[id]].label
                var len = label.count
                while len >= 0x80 {
                    raw.append(UInt8(len & 0x7F) | 0x80)
                    len >>= 7
                }
                raw.append(UInt8(len))
                raw += label
                id += 1
            }
            appendU32(&chunkTable, UInt32(firstId))
            appendU32(&chunkTable, UInt32(coldData.count))
            if let z = compressor.compress(raw, limit: raw.count - 1) {
                appendU32(&chunkTable, UInt32(raw.count) | 1 << 31)
                coldData += z
            } else {
                appendU32(&chunkTable, UInt32(raw.count))
                coldData += raw
            }
            parts.coldChunks += 1
            guard coldData.count < Int(UInt32.max) else { throw CallerIDError(.limitExceeded, "cold labels exceed 4 GiB") }
        }
        appendU32(&chunkTable, UInt32(valueCount))
        appendU32(&chunkTable, UInt32(coldData.count))
        appendU32(&chunkTable, 0)
        let valueCategories = ordered.map { values[$0].category }

        // 4. Sections.
        var names: [UInt8] = []
        appendU16(&names, UInt16(categories.count))
        for c in categories {
            names.append(c.action.rawValue)
            names.append(UInt8(c.name.utf8.count))
            names += Array(c.name.utf8)
        }
        var sections = [[UInt8]](repeating: [], count: Format2Section.allCases.count)
        sections[Format2Section.summary.rawValue] = summary.flatMap(le64)
        sections[Format2Section.blockKeys.rawValue] = blockKeys.flatMap(le64)
        sections[Format2Section.blockOffsets.rawValue] = blockOffsets.flatMap(le32)
        sections[Format2Section.blocks.rawValue] = blocks
        sections[Format2Section.codeCounts.rawValue] = counts.flatMap { le32(UInt32($0)) }
        sections[Format2Section.valueCategories.rawValue] = valueCategories
        sections[Format2Section.hotOffsets.rawValue] = hotOffsets.flatMap(le32)
        sections[Format2Section.hotBytes.rawValue] = hotBytes
        sections[Format2Section.chunkTable.rawValue] = chunkTable
        sections[Format2Section.coldData.rawValue] = coldData
        sections[Format2Section.categories.rawValue] = names
        parts.index = sections[0].count + sections[1].count + sections[2].count
        parts.values += sections[Format2Section.codeCounts.rawValue].count
        parts.labels = (5...9).reduce(0) { $0 + sections[$1].count }

        let headSize = 64 + 16 * sections.count
        var out = [UInt8](repeating: 0, count: headSize)
        var directory: [(Int, Int)] = []
        for s in sections {
            while out.count % 8 != 0 { out.append(0) }
            directory.append((out.count, s.count))
            out += s
        }
        var head: [UInt8] = Format2.magic
        appendU16(&head, Format2.major)
        appendU16(&head, Format2.minor)
        appendU32(&head, UInt32(headSize))
        head += le64(UInt64(out.count))
        head += le64(UInt64(numbers.count))
        appendU32(&head, UInt32(blockKeys.count))
        appendU32(&head, UInt32(valueCount))
        appendU32(&head, UInt32(hotCount))
        head.append(UInt8(options.syncShift))
        head.append(UInt8(sections.count))
        appendU16(&head, 0)
        appendU32(&head, UInt32(options.blockSize))
        while head.count < 64 { head.append(0) }
        for (o, l) in directory {
            head += le64(UInt64(o))
            head += le64(UInt64(l))
        }
        out.replaceSubrange(0..<headSize, with: head)
        parts.other = out.count - parts.keys - parts.values - parts.index - parts.labels
        return (out, parts)
    }
}

@inline(__always) func le64(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: v >> UInt64(8 * $0)) } }
@inline(__always) func le32(_ v: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> UInt32(8 * $0)) } }
@inline(__always) func appendU16(_ a: inout [UInt8], _ v: UInt16) { a.append(UInt8(v & 0xFF)); a.append(UInt8(v >> 8)) }
@inline(__always) func appendU32(_ a: inout [UInt8], _ v: UInt32) { a += le32(v) }
