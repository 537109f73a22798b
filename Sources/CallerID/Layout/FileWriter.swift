// Format 2.0: the writer. docs/FORMAT.md is the normative description of every byte.

/// Writer settings resolved from ``BuildOptions``.
struct LayoutOptions {
    var blockSize = 256
    var syncShift = 5
    var summaryShift = 4
    /// Raw bytes of the hot labels (the most frequent values), stored uncompressed.
    var hotLabelBytes = 64 * 1024
    /// How the cold labels are coded. The writer's own default is the symbol table (the
    /// format's tests build on it); ``BuildOptions`` sets ``LabelCoding/auto``.
    var labelCoding = LabelCoding.symbols
    /// LZ4 cold values kept alone, each its own group (the format allows it; the writer keeps
    /// none: groups of 8 throughout made the smaller files, BENCHMARKS.md). For tests.
    var lz4Singles = 0
    /// LZ4 groups of 2^lz4GroupShift cold labels (0 … 6; the writer's 3). For tests.
    var lz4GroupShift = Format.lz4GroupShift
    /// Key codec 2 may be used (the file is then major version 3): the writer sets it from
    /// ``BlockRecord/KeyCodecPlan`` before the first record.
    var runBitmap = false
    /// From this many entries the blocks and the label sections are encoded on two threads
    /// (below it a thread costs more than it saves); the same bytes either way.
    var concurrentFrom = 65_536
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
    /// - Returns: the image, its bytes by part, the number of distinct values, and the version
    ///   its header says (3.1 with LZ4 cold labels, else 3.0 when a record uses key codec 2, else 2.0).
    static func encode(keys: [UInt64], values: [UInt32], labelCount: Int, label: (Int) -> ArraySlice<UInt8>,
                       valueCategory: (Int) -> UInt8, categories: [Category],
                       options: LayoutOptions, extraSections: [(kind: UInt32, bytes: [UInt8])] = []) throws(CallerIDError)
        -> (image: [UInt8], parts: LayoutParts, distinctValues: Int, version: (major: UInt16, minor: UInt16)) {
        guard (1...Format.maxBlockEntries).contains(options.blockSize) else {
            throw CallerIDError(.invalidInput, "blockSize must be 1...\(Format.maxBlockEntries)")
        }
        precondition(keys.count == values.count)
        var options = options
        var plan = BlockRecord.KeyCodecPlan(blockSize: options.blockSize)
        for k in keys { plan.add(k) }
        // A file with LZ4 labels is of major version 3 anyway: every block may then take key
        // codec 2 where it is smaller (and verify expects it there). Whether the labels end up
        // LZ4 is known only once they are coded, so the blocks assume it unless the labels
        // cannot be; they are coded again in the rare case the guess was wrong.
        options.runBitmap = plan.usesRunBitmap() || options.labelCoding != .symbols
        let ids = try ValueIds(values: values, labelCount: labelCount)
        // The blocks and the label sections depend on the value ids only: a large file encodes
        // them on two threads (the labels read what `label` lends, nothing else is shared).
        var parts = LayoutParts(), labelParts = LayoutParts()
        func encodeKeys() -> Result<EncodedBlocks, CallerIDError> {
            Result { () throws(CallerIDError) in try encodeBlocks(keys: keys, values: values, ids: ids, options: options, parts: &parts) }
        }
        func encodeLabels() -> Result<(sections: [(UInt32, [UInt8])], hotCount: Int), CallerIDError> {
            Result { () throws(CallerIDError) in
                try valueSections(ids: ids, label: label, valueCategory: valueCategory, parts: &labelParts, options: options)
            }
        }
        let (encodedBlocks, encodedTail) = keys.count >= options.concurrentFrom
            ? runConcurrently(encodeKeys, encodeLabels) : (encodeKeys(), encodeLabels())
        // A failure of each is reported as the one-thread order would: the blocks' first.
        var blocks = try encodedBlocks.get()
        let tail = try encodedTail.get()
        if options.runBitmap && !plan.usesRunBitmap() && !tail.sections.contains(where: { $0.0 == Format.Section.lz4ColdIndex.rawValue }) {
            options.runBitmap = false
            parts = LayoutParts()
            blocks = try encodeBlocks(keys: keys, values: values, ids: ids, options: options, parts: &parts)
        }
        parts.values += labelParts.values
        parts.hotValues = labelParts.hotValues
        parts.labels = labelParts.labels
        for v in values where ids.idOf[Int(v)] < tail.hotCount { parts.hotEntries += 1 }
        let sections: [(UInt32, [UInt8])] = [
            (Format.Section.categories.rawValue, Categories.encode(categories)),
            (Format.Section.summary.rawValue, blocks.summary),
            (Format.Section.blockIndex.rawValue, blocks.index),
            (Format.Section.blocks.rawValue, blocks.records),
        ] + tail.sections + extraSections.map { ($0.kind, $0.bytes) }
        parts.index = blocks.summary.count + blocks.index.count
        let file = assemble(sections: sections, major: blocks.major, entries: keys.count, blockCount: blocks.count, valueCount: ids.valueCount,
                            hotCount: tail.hotCount, options: options)
        parts.other = file.count - parts.keys - parts.values - parts.index - parts.labels
        return (file, parts, ids.valueCount, Frame.version(major: blocks.major, sections: sections.map(\.0)))
    }

    /// The sections after the blocks: code lengths, value categories and the label parts
    /// (sections 5–11), with how many values are hot; counts their bytes in `parts`.
    static func valueSections(ids: ValueIds, label: (Int) -> ArraySlice<UInt8>, valueCategory: (Int) -> UInt8,
                              parts: inout LayoutParts, options: LayoutOptions) throws(CallerIDError) -> (sections: [(UInt32, [UInt8])], hotCount: Int) {
        // Labels: hot ones raw, cold ones coded with the symbol table in groups.
        let labels = try encodeLabels(count: ids.valueCount, label: { label(ids.ordered[$0]) }, hotLabelBytes: options.hotLabelBytes,
                                      coding: options.labelCoding, lz4Singles: options.lz4Singles,
                                      lz4GroupShift: options.lz4GroupShift)
        parts.hotValues = labels.hotCount
        let valueCats = ValueCategories.encode(count: ids.valueCount) { valueCategory(ids.ordered[$0]) }
        let codeLengths = encodeValueCodeLengths(ids.counts)
        parts.values += codeLengths.count
        parts.labels = valueCats.count + labels.hotOffsets.count + labels.hotLabels.count + labels.coldSections.reduce(0) { $0 + $1.1.count }
        return ([
            (Format.Section.codeLengths.rawValue, codeLengths),
            (Format.Section.valueCategories.rawValue, valueCats),
            (Format.Section.hotOffsets.rawValue, labels.hotOffsets),
            (Format.Section.hotLabels.rawValue, labels.hotLabels),
        ] + labels.coldSections, labels.hotCount)
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
            try self.init(frequencies: freq, first: first)
        }

        /// From each value's number of entries and the position (in number order) of its first
        /// entry (`Int.max` for a value no entry uses): what a writer that streams its entries
        /// counts in a first pass.
        init(frequencies freq: [Int], first: [Int]) throws(CallerIDError) {
            let labelCount = freq.count
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
        /// The file's major version: 3 when a record uses key codec 2, else 2.
        var major = Format.majorWithoutRunBitmap
    }

    /// Every block's record, the block index and the summary; counts key and value bytes in `parts`.
    static func encodeBlocks(keys: [UInt64], values: [UInt32], ids: ValueIds, options: LayoutOptions,
                             parts: inout LayoutParts) throws(CallerIDError) -> EncodedBlocks {
        var out = EncodedBlocks()
        var section = BlockSection(options: options)
        var start = 0
        while start < keys.count {
            let n = min(options.blockSize, keys.count - start)
            try section.append(keys: keys[start..<(start + n)], values: values[start..<(start + n)], ids: ids,
                               to: &out.records, parts: &parts)
            start += n
        }
        section.finish(records: &out.records, parts: &parts)
        out.index = section.index
        out.summary = section.summary
        out.count = section.count
        out.major = section.major
        return out
    }

    /// The file around its sections (docs/FORMAT.md §3): header, sections at aligned offsets,
    /// section table, footer.
    static func assemble(sections: [(UInt32, [UInt8])], major: UInt16, entries: Int, blockCount: Int, valueCount: Int, hotCount: Int,
                         options: LayoutOptions) -> [UInt8] {
        let frame = Frame(sections: sections.map { ($0.0, $0.1.count, Codec.xxh3($0.1)) }, major: major, entries: entries, blockCount: blockCount,
                          valueCount: valueCount, hotCount: hotCount, options: options)
        var file = frame.header
        for (k, (_, bytes)) in sections.enumerated() {
            file.append(contentsOf: repeatElement(0, count: frame.padding(before: k)))
            file.append(contentsOf: bytes)
        }
        file.append(contentsOf: repeatElement(0, count: frame.paddingBeforeTable))
        file.append(contentsOf: frame.table)
        file.append(contentsOf: frame.footer)
        assert(file.count == frame.fileSize)
        return file
    }

    /// What surrounds the sections of a file, from their kinds, sizes and hashes alone: the
    /// header, where each section starts, the section table and the footer. A writer that
    /// streams a section it never holds whole writes the same bytes as ``assemble``.
    struct Frame {
        let header: [UInt8]
        /// Offset and size of each section in the file.
        let offsets: [Int]
        let sizes: [Int]
        let tableOffset: Int
        let table: [UInt8]
        let footer: [UInt8]
        let fileSize: Int

        init(sections: [(kind: UInt32, size: Int, xxh3: UInt64)], major: UInt16, entries: Int, blockCount: Int, valueCount: Int, hotCount: Int,
             options: LayoutOptions) {
            var at = Format.headerSize
            var table: [UInt8] = []
            var offsets: [Int] = []
            for (kind, size, hash) in sections {
                at += (Format.sectionAlignment - at % Format.sectionAlignment) % Format.sectionAlignment
                offsets.append(at)
                SectionTable.appendEntry(kind: kind, offset: at, length: size, checksum: hash, to: &table)
                at += size
            }
            at += (Format.sectionAlignment - at % Format.sectionAlignment) % Format.sectionAlignment
            let tableOffset = at
            let fileSize = at + table.count + Format.footerSize
            let version = Frame.version(major: major, sections: sections.map(\.kind))
            let header = Header(major: version.major, minor: version.minor, fileSize: UInt64(fileSize), entryCount: UInt64(entries), blockCount: blockCount, valueCount: valueCount,
                                hotCount: hotCount, syncShift: options.syncShift, summaryShift: options.summaryShift,
                                blockSize: options.blockSize, tableOffset: UInt64(tableOffset)).encoded
            let footer = Footer.encode(fileSize: fileSize, tableChecksum: Codec.xxh3(table), entryCount: entries)
            self.header = header
            self.offsets = offsets
            self.sizes = sections.map(\.size)
            self.tableOffset = tableOffset
            self.table = table
            self.footer = footer
            self.fileSize = fileSize
        }

        /// The version of a file of these sections whose blocks need major `major`: 3.1 when
        /// the cold labels are LZ4 groups (whatever the blocks), else `major`.0.
        static func version(major: UInt16, sections kinds: [UInt32]) -> (major: UInt16, minor: UInt16) {
            kinds.contains(Format.Section.lz4ColdIndex.rawValue) ? (Format.major, Format.minorLZ4Labels) : (major, 0)
        }

        /// Zero bytes between the end of section `k - 1` (or the header) and section `k`.
        func padding(before k: Int) -> Int {
            offsets[k] - (k == 0 ? Format.headerSize : offsets[k - 1] + sizes[k - 1])
        }

        /// Zero bytes between the last section and the section table.
        var paddingBeforeTable: Int { tableOffset - (offsets.last.map { $0 + sizes[sizes.count - 1] } ?? Format.headerSize) }
    }
}
