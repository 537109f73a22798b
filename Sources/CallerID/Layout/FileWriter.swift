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
    ///   - labels: label bytes of each value (valid UTF-8, ≤ maxLabelBytes, no control bytes).
    static func encode(keys: [UInt64], values: [UInt32], labelCount: Int, label: (Int) -> ArraySlice<UInt8>,
                       valueCategory: (Int) -> UInt8, categories: [Category],
                       options: LayoutOptions, extraSections: [(kind: UInt32, bytes: [UInt8])] = []) throws(CallerIDError) -> (image: [UInt8], parts: LayoutParts, distinctValues: Int) {
        guard (1...Format.maxBlockEntries).contains(options.blockSize) else {
            throw CallerIDError(.invalidInput, "blockSize must be 1...\(Format.maxBlockEntries)")
        }
        precondition(keys.count == values.count)
        var parts = LayoutParts()

        // 1. Value ids: code lengths from the frequencies; ids ordered by (code length, first
        //    occurrence in number order), so that the canonical code maps to ids by arithmetic
        //    and a scan meets the values of each length class in id order.
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
        let ordered = used.sorted { lengthOf[$0] != lengthOf[$1] ? lengthOf[$0] < lengthOf[$1] : first[$0] < first[$1] }
        var idOf = [UInt32](repeating: 0, count: labelCount)
        for (id, v) in ordered.enumerated() { idOf[v] = UInt32(id) }
        let codes = valueCodes(counts: counts)
        let valueCount = ordered.count

        // 2. Block records and the block index.
        var index: [UInt8] = []
        var blocks: [UInt8] = []
        var blockFirstKeys: [UInt64] = []
        let syncInterval = 1 << options.syncShift
        var start = 0
        while start < keys.count {
            let n = min(options.blockSize, keys.count - start)
            let firstKey = keys[start]
            blockFirstKeys.append(firstKey)
            guard blocks.count <= Int(UInt32.max) - (1 << 20) else {
                throw CallerIDError(.limitExceeded, "block records exceed 4 GiB")
            }
            index.appendLE(firstKey)
            index.appendLE(UInt32(blocks.count))
            let m = n - 1
            let u = keys[start + n - 1] - firstKey
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
                    let x = keys[start + 1 + j] - firstKey
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
                if valueCount > 1 {
                    let c = codes[Int(idOf[Int(values[start + i])])]
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
            start += n
        }
        index.appendLE(UInt64(0))
        index.appendLE(UInt32(blocks.count))
        blocks.append(contentsOf: repeatElement(0, count: Format.recordPadding))
        parts.keys += Format.recordPadding
        var summary: [UInt8] = []
        for b in stride(from: 0, to: blockFirstKeys.count, by: 1 << options.summaryShift) { summary.appendLE(blockFirstKeys[b]) }

        // 3. Labels: hot ones raw, cold ones coded with the symbol table in groups.
        let labels = try encodeLabels(count: valueCount, label: { label(ordered[$0]) }, hotLabelBytes: options.hotLabelBytes)
        let hotCount = labels.hotCount
        let hotOffsets = labels.hotOffsets, hotLabels = labels.hotLabels, coldIndex = labels.coldIndex, coldLabels = labels.coldLabels
        let symbols = labels.symbols
        parts.hotValues = hotCount
        for v in values where idOf[Int(v)] < hotCount { parts.hotEntries += 1 }
        let valueCats = ordered.map(valueCategory)

        // 4. Sections, section table, header, footer.
        var names: [UInt8] = []
        names.appendLE(UInt32(categories.count))
        for c in categories {
            names.append(c.action.rawValue)
            names.append(UInt8(c.name.utf8.count))
            names.append(contentsOf: c.name.utf8)
        }
        var codeLengths: [UInt8] = []
        for c in counts { codeLengths.appendLE(UInt32(c)) }
        let sections: [(UInt32, [UInt8])] = [
            (Format.Section.categories.rawValue, names),
            (Format.Section.summary.rawValue, summary),
            (Format.Section.blockIndex.rawValue, index),
            (Format.Section.blocks.rawValue, blocks),
            (Format.Section.codeLengths.rawValue, codeLengths),
            (Format.Section.valueCategories.rawValue, valueCats),
            (Format.Section.hotOffsets.rawValue, hotOffsets),
            (Format.Section.hotLabels.rawValue, hotLabels),
            (Format.Section.symbolTable.rawValue, symbols),
            (Format.Section.coldIndex.rawValue, coldIndex),
            (Format.Section.coldLabels.rawValue, coldLabels),
        ] + extraSections.map { ($0.kind, $0.bytes) }
        parts.index = summary.count + index.count
        parts.values += codeLengths.count
        parts.labels = valueCats.count + hotOffsets.count + hotLabels.count + symbols.count + coldIndex.count + coldLabels.count
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
        header.appendLE(UInt64(keys.count))
        header.appendLE(UInt32(blockFirstKeys.count))
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
        footer.appendLE(UInt64(keys.count))
        footer.append(contentsOf: Format.footerMagic)
        file.append(contentsOf: footer)
        assert(file.count == fileSize)
        parts.other = fileSize - parts.keys - parts.values - parts.index - parts.labels
        return (file, parts, valueCount)
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
