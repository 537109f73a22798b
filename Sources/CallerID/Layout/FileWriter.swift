// Format 2.0: the writer. docs/FORMAT.md is the normative description of every byte.

/// Writer settings resolved from ``BuildOptions``.
struct LayoutOptions {
    var blockSize = 256
    var syncShift = 5
    var summaryShift = 4
    /// Raw bytes of the hot labels (the most frequent values), stored uncompressed.
    var hotLabelBytes = 64 * 1024
}

/// Bytes of a written file by part (for `lookup info` and the benchmarks).
struct LayoutParts: Sendable, Equatable {
    var keys = 0, values = 0, index = 0, labels = 0, other = 0
    var hotValues = 0, hotEntries = 0
}

/// The complete file image of a sorted, deduplicated data set.
enum FileWriter {
    /// - Parameters:
    ///   - keys: strictly ascending valid numbers.
    ///   - values: for each key, an index into `labels`/`valueCategories`.
    ///   - labels: label bytes of each value (passing ``LabelText/check(_:)``: valid UTF-8, ≤ maxLabelBytes, no control or hidden character).
    static func encode(keys: [UInt64], values: [UInt32], labelCount: Int, label: (Int) -> ArraySlice<UInt8>,
                       valueCategory: (Int) -> UInt8, categories: [Category],
                       options: LayoutOptions, extraSections: [(kind: UInt32, bytes: [UInt8])] = []) throws(CallerIDError) -> (image: [UInt8], parts: LayoutParts, distinctValues: Int) {
        guard (1...Format.maxBlockEntries).contains(options.blockSize) else {
            throw CallerIDError(.invalidInput, "blockSize must be 1...\(Format.maxBlockEntries)")
        }
        precondition(keys.count == values.count)
        var parts = LayoutParts()
        let ids = try ValueIds(values: values, labelCount: labelCount)
        let blocks = try encodeBlocks(keys: keys, values: values, ids: ids, options: options, parts: &parts)

        // Labels: hot ones raw, cold ones coded with the symbol table in groups.
        let labels = try encodeLabels(count: ids.valueCount, label: { label(ids.ordered[$0]) }, hotLabelBytes: options.hotLabelBytes)
        parts.hotValues = labels.hotCount
        for v in values where ids.idOf[Int(v)] < labels.hotCount { parts.hotEntries += 1 }
        let valueCats = ids.ordered.map(valueCategory)

        var names: [UInt8] = []
        names.appendLE(UInt32(categories.count))
        for c in categories {
            names.append(c.action.rawValue)
            names.append(UInt8(c.name.utf8.count))
            names.append(contentsOf: c.name.utf8)
        }
        var codeLengths: [UInt8] = []
        for c in ids.counts { codeLengths.appendLE(UInt32(c)) }
        let sections: [(UInt32, [UInt8])] = [
            (Format.Section.categories.rawValue, names),
            (Format.Section.summary.rawValue, blocks.summary),
            (Format.Section.blockIndex.rawValue, blocks.index),
            (Format.Section.blocks.rawValue, blocks.records),
            (Format.Section.codeLengths.rawValue, codeLengths),
            (Format.Section.valueCategories.rawValue, valueCats),
            (Format.Section.hotOffsets.rawValue, labels.hotOffsets),
            (Format.Section.hotLabels.rawValue, labels.hotLabels),
            (Format.Section.symbolTable.rawValue, labels.symbols),
            (Format.Section.coldIndex.rawValue, labels.coldIndex),
            (Format.Section.coldLabels.rawValue, labels.coldLabels),
        ] + extraSections.map { ($0.kind, $0.bytes) }
        parts.index = blocks.summary.count + blocks.index.count
        parts.values += codeLengths.count
        parts.labels = valueCats.count + labels.hotOffsets.count + labels.hotLabels.count + labels.symbols.count
            + labels.coldIndex.count + labels.coldLabels.count
        let file = assemble(sections: sections, entries: keys.count, blockCount: blocks.count, valueCount: ids.valueCount,
                            hotCount: labels.hotCount, options: options)
        parts.other = file.count - parts.keys - parts.values - parts.index - parts.labels
        return (file, parts, ids.valueCount)
    }

    /// Value ids: code lengths from the frequencies; ids ordered by (code length, first
    /// occurrence in number order), so that the canonical code maps to ids by arithmetic and a
    /// scan meets the values of each length class in id order.
    struct ValueIds {
        /// The values in id order (indices into the caller's labels).
        let ordered: [Int]
        /// The id of each of the caller's values.
        let idOf: [UInt32]
        /// Code lengths: how many ids have a code of each length.
        let counts: [Int]
        let codes: [(code: UInt32, length: Int)]
        var valueCount: Int { ordered.count }

        init(values: [UInt32], labelCount: Int) throws(CallerIDError) {
            var freq = [Int](repeating: 0, count: labelCount)
            var first = [Int](repeating: Int.max, count: labelCount)
            for (i, v) in values.enumerated() {
                freq[Int(v)] += 1
                if first[Int(v)] == Int.max { first[Int(v)] = i }
            }
            let used = (0..<labelCount).filter { freq[$0] > 0 }
            guard used.count < 1 << Format.maxCodeLength else {
                throw CallerIDError(.limitExceeded, "more than \(1 << Format.maxCodeLength) distinct labels")
            }
            let byFreq = used.sorted { freq[$0] != freq[$1] ? freq[$0] > freq[$1] : first[$0] < first[$1] }
            let counts = valueCodeLengthCounts(frequencies: byFreq.map { freq[$0] })
            var lengthOf = [Int](repeating: 0, count: labelCount)
            var r = 0
            for len in 1..<counts.count {
                for _ in 0..<counts[len] {
                    lengthOf[byFreq[r]] = len
                    r += 1
                }
            }
            ordered = used.sorted { lengthOf[$0] != lengthOf[$1] ? lengthOf[$0] < lengthOf[$1] : first[$0] < first[$1] }
            var idOf = [UInt32](repeating: 0, count: labelCount)
            for (id, v) in ordered.enumerated() { idOf[v] = UInt32(id) }
            self.idOf = idOf
            self.counts = counts
            codes = valueCodes(counts: counts)
        }
    }

    /// The block records (sections 3–4) and their summary (section 2).
    struct EncodedBlocks {
        var index: [UInt8] = []
        var records: [UInt8] = []
        var summary: [UInt8] = []
        var count = 0
    }

    /// Every block's record, the block index and the summary; counts key and value bytes in `parts`.
    static func encodeBlocks(keys: [UInt64], values: [UInt32], ids: ValueIds, options: LayoutOptions,
                             parts: inout LayoutParts) throws(CallerIDError) -> EncodedBlocks {
        var out = EncodedBlocks()
        var firstKeys: [UInt64] = []
        var start = 0
        while start < keys.count {
            let n = min(options.blockSize, keys.count - start)
            firstKeys.append(keys[start])
            guard out.records.count <= Int(UInt32.max) - (1 << 20) else {
                throw CallerIDError(.limitExceeded, "block records exceed 4 GiB")
            }
            out.index.appendLE(keys[start])
            out.index.appendLE(UInt32(out.records.count))
            try appendRecord(keys: keys[start..<(start + n)], values: values[start..<(start + n)], ids: ids,
                             syncInterval: 1 << options.syncShift, to: &out.records, parts: &parts)
            start += n
        }
        out.index.appendLE(UInt64(0))
        out.index.appendLE(UInt32(out.records.count))
        out.records.append(contentsOf: repeatElement(0, count: Format.recordPadding))
        parts.keys += Format.recordPadding
        for b in stride(from: 0, to: firstKeys.count, by: 1 << options.summaryShift) { out.summary.appendLE(firstKeys[b]) }
        out.count = firstKeys.count
        return out
    }

    /// One block's record (docs/FORMAT.md §5.4): the header, the sync points, the keys as
    /// Elias–Fano (or nothing for a run of consecutive numbers), then the value codes.
    static func appendRecord(keys: ArraySlice<UInt64>, values: ArraySlice<UInt32>, ids: ValueIds, syncInterval: Int,
                             to blocks: inout [UInt8], parts: inout LayoutParts) throws(CallerIDError) {
        let n = keys.count
        let firstKey = keys.first!
        let m = n - 1
        let u = keys.last! - firstKey
        var codec = Format.keyCodecEliasFano
        var l = 0
        var upper: [UInt64] = []
        var lower = BitWriter()
        if m > 0 && u == UInt64(m) {
            codec = Format.keyCodecRun  // consecutive numbers: nothing to store
        } else if m > 0 {
            if u / UInt64(m) >= 1 { l = min(56, 63 - (u / UInt64(m)).leadingZeroBitCount) }
            let bits = Int(u >> UInt64(l)) + m
            upper = [UInt64](repeating: 0, count: (bits + 63) / 64)
            for j in 0..<m {
                let x = keys[keys.startIndex + 1 + j] - firstKey
                let p = Int(x >> UInt64(l)) + j
                upper[p >> 6] |= 1 << UInt64(p & 63)
                lower.write(x, width: l)
            }
            lower.alignToByte()
        }
        var stream = MSBBitWriter()
        var sync: [UInt16] = []
        for i in 0..<n {
            if i > 0 && i % syncInterval == 0 {
                guard stream.bitCount <= Int(UInt16.max) else {
                    throw CallerIDError(.limitExceeded, "a block's value codes exceed 65,535 bits: use a smaller block size")
                }
                sync.append(UInt16(stream.bitCount))
            }
            if ids.valueCount > 1 {
                let c = ids.codes[Int(ids.idOf[Int(values[values.startIndex + i])])]
                stream.write(c.code, c.length)
            }
        }
        guard upper.count <= Int(UInt16.max), lower.bytes.count <= Int(UInt16.max) else {
            throw CallerIDError(.limitExceeded, "block keys too sparse for one record")
        }
        blocks.appendLE(UInt16(n))
        blocks.append(UInt8(l))
        blocks.append(codec)
        blocks.appendLE(UInt16(upper.count))
        blocks.appendLE(UInt16(lower.bytes.count))
        for s in sync { blocks.appendLE(s) }
        for w in upper { blocks.appendLE(w) }
        blocks.append(contentsOf: lower.bytes)
        let valueBytes = stream.finished
        blocks.append(contentsOf: valueBytes)
        parts.keys += Format.recordHeaderSize + 8 * upper.count + lower.bytes.count
        parts.values += 2 * sync.count + valueBytes.count
    }

    /// The file around its sections (docs/FORMAT.md §3): header, sections at aligned offsets,
    /// section table, footer.
    static func assemble(sections: [(UInt32, [UInt8])], entries: Int, blockCount: Int, valueCount: Int, hotCount: Int,
                         options: LayoutOptions) -> [UInt8] {
        var file = [UInt8](repeating: 0, count: Format.headerSize)
        var table: [UInt8] = []
        for (kind, bytes) in sections {
            file.padZero(toMultipleOf: Format.sectionAlignment)
            table.appendLE(kind)
            table.appendLE(UInt32(0))
            table.appendLE(UInt64(file.count))
            table.appendLE(UInt64(bytes.count))
            table.appendLE(Codec.xxh3(bytes))
            file.append(contentsOf: bytes)
        }
        file.padZero(toMultipleOf: 8)
        let tableOffset = file.count
        file.append(contentsOf: table)
        let fileSize = file.count + Format.footerSize

        var header: [UInt8] = Format.magic
        header.appendLE(Format.major)
        header.appendLE(Format.minor)
        header.appendLE(UInt32(Format.headerSize))
        header.appendLE(UInt64(fileSize))
        header.appendLE(UInt64(entries))
        header.appendLE(UInt32(blockCount))
        header.appendLE(UInt32(valueCount))
        header.appendLE(UInt32(hotCount))
        header.append(UInt8(options.syncShift))
        header.append(UInt8(options.summaryShift))
        header.appendLE(UInt16(options.blockSize))
        header.appendLE(UInt64(tableOffset))
        header.appendLE(Codec.xxh3(header))
        file.replaceSubrange(0..<Format.headerSize, with: header)

        var footer: [UInt8] = []
        footer.appendLE(UInt64(fileSize))
        footer.appendLE(Codec.xxh3(table))
        footer.appendLE(UInt64(entries))
        footer.append(contentsOf: Format.footerMagic)
        file.append(contentsOf: footer)
        assert(file.count == fileSize)
        return file
    }
}

/// The label parts of a value table (sections 7–11 of the file, or the same parts inside the
/// ranges section): hot labels raw, cold labels coded with a trained symbol table in groups.
struct EncodedLabels {
    var hotCount = 0
    var hotOffsets: [UInt8] = []
    var hotLabels: [UInt8] = []
    var symbols: [UInt8] = []
    var coldIndex: [UInt8] = []
    var coldLabels: [UInt8] = []
}

extension FileWriter {
    /// Labels of values `0 ..< count` in id order: values are hot, in id order, while the running
    /// total of their bytes stays ≤ `hotLabelBytes`; the rest are cold.
    static func encodeLabels(count valueCount: Int, label: (Int) -> ArraySlice<UInt8>, hotLabelBytes: Int) throws(CallerIDError) -> EncodedLabels {
        var out = EncodedLabels()
        out.hotOffsets.appendLE(UInt32(0))
        while out.hotCount < valueCount, out.hotLabels.count + label(out.hotCount).count <= hotLabelBytes {
            out.hotLabels.append(contentsOf: label(out.hotCount))
            out.hotOffsets.appendLE(UInt32(out.hotLabels.count))
            out.hotCount += 1
        }
        let coldValues = out.hotCount..<valueCount
        let symbols = LabelSymbolTable.train(coldValues.map { Array(label($0)) })
        var coded: [UInt8] = []
        for (k, v) in coldValues.enumerated() {
            if k & ((1 << Format.coldGroupShift) - 1) == 0 {
                guard out.coldLabels.count <= Int(UInt32.max) else { throw CallerIDError(.limitExceeded, "cold labels exceed 4 GiB") }
                out.coldIndex.appendLE(UInt32(out.coldLabels.count))
            }
            coded.removeAll(keepingCapacity: true)
            symbols.encode(Array(label(v)), into: &coded)
            var len = coded.count
            while len >= 0x80 {
                out.coldLabels.append(UInt8(len & 0x7F) | 0x80)
                len >>= 7
            }
            out.coldLabels.append(UInt8(len))
            out.coldLabels.append(contentsOf: coded)
        }
        guard out.coldLabels.count <= Int(UInt32.max) else { throw CallerIDError(.limitExceeded, "cold labels exceed 4 GiB") }
        out.coldIndex.appendLE(UInt32(out.coldLabels.count))
        out.symbols = symbols.serialized
        return out
    }
}
