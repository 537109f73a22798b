// The writer of a file whose entries are never all in memory (the bounded-memory build): the
// same bytes as `FileWriter.encode` from a source read twice, block records spilled to disk
// between the passes. The encoding itself (records, labels, frame) is FileWriter's.

/// Entries in strictly ascending number order that can be read more than once.
package protocol SortedEntrySource {
    /// Calls `body` with each entry: its number, its category (an index into the categories
    /// given to the writer) and its label's UTF-8 bytes (valid during the call).
    func forEach(_ body: (UInt64, Int, UnsafeRawBufferPointer) throws(CallerIDError) -> Void) throws(CallerIDError)
}

/// What ``StreamedFileWriter/write(_:categories:options:scratch:to:)`` wrote.
package struct StreamedFile {
    package var entries = 0
    package var distinctLabels = 0
    package var bytes = 0
    /// XXH3-64 of the whole file.
    package var xxh3: UInt64 = 0
    package var firstNumber: UInt64? = nil
    package var lastNumber: UInt64? = nil
    /// Entries per category, by the index given with the entries.
    package var entriesByCategory: [Int: Int] = [:]
    /// The file's format version, as its header says ("2.0", "3.0" with key codec 2, "3.1"
    /// with LZ4 cold labels).
    package var formatVersion = ""
    /// The most bytes the label dictionary held at once (its interner, sort buffers and
    /// tables; not the scratch files' read and write buffers): at most
    /// ``labelDictionaryShare``.
    package var labelDictionaryPeakBytes = 0
    /// The memory the label dictionary keeps to: a quarter of the memory limit.
    package var labelDictionaryShare = 0
    /// True when the distinct labels outgrew that share and were sorted on disk.
    package var labelDictionarySpilled = false
}

package enum StreamedFileWriter {
    /// Writes the entries of `source` as a database at `path` (through the atomic writer: a
    /// failure leaves `path` as it was), byte for byte what ``DatabaseBuilder`` writes for the
    /// same entries. Memory: the label dictionary within a quarter of
    /// ``BuildOptions/memoryLimit`` (``LabelDictionary``: beyond it the distinct labels are
    /// sorted on disk), a block's entries, 12 bytes per block of the index; the block records
    /// and every section that grows with the distinct labels go to files in `scratch` first.
    package static func write(_ source: some SortedEntrySource, categories global: [Category], options: BuildOptions,
                              scratch: SpillArea, to path: String) throws(CallerIDError) -> StreamedFile {
        try DatabaseBuilder.check(options)
        var layout = options.layout
        var result = StreamedFile()
        var plan = BlockRecord.KeyCodecPlan(blockSize: layout.blockSize)

        // Pass 1: the labels, how often each is used and where first, the categories used.
        var dictionary = LabelDictionary(share: LabelDictionary.share(ofMemoryLimit: options.memoryLimit), scratch: scratch)
        var categories = LocalCategories(global)
        // Each entry's number and value (its id in the dictionary's chunk), for the second pass
        // (12 bytes an entry on disk: reading them back costs less than merging and hashing
        // the labels again).
        let entriesPath = scratch.newPath("entries")
        defer { scratch.remove(entriesPath) }
        let entriesOut = try SpillWriter(path: entriesPath)
        var pair: [UInt8] = []
        try source.forEach { (number, category, label) throws(CallerIDError) in
            let code = try categories.code(category)
            let v = try dictionary.add(category: code, label: label)
            pair.removeAll(keepingCapacity: true)
            pair.appendLE(number)
            pair.appendLE(v)
            try entriesOut.write(pair)
            plan.add(number)
            result.entriesByCategory[category, default: 0] += 1
            if result.firstNumber == nil { result.firstNumber = number }
            result.lastNumber = number
        }
        result.entries = dictionary.position
        try entriesOut.finish()
        let (table, newCode) = categories.table()
        // A file with LZ4 labels is of major version 3 anyway: its blocks may take key codec 2
        // wherever it is smaller (as the in-memory writer's do). The label sections come first.
        func runBitmap(_ tail: (sections: [(UInt32, SectionContent)], hotCount: Int)) -> Bool {
            plan.usesRunBitmap() || tail.sections.contains { $0.0 == Format.Section.lz4ColdIndex.rawValue }
        }

        // Pass 2: the block records, to a scratch file; then the sections after them.
        let blocks: EncodedBlockFile
        let tail: (sections: [(UInt32, SectionContent)], hotCount: Int)
        let valueCount: Int
        if dictionary.isSpilled {
            var values = try dictionary.finishSpilled()
            tail = try FileWriter.spilledValueSections(values, valueCategory: { newCode[Int($0)] }, hotLabelBytes: layout.hotLabelBytes,
                                                       coding: layout.labelCoding, scratch: scratch)
            layout.runBitmap = runBitmap(tail)
            blocks = try encodeBlocks(entriesPath, layout: layout, coder: CanonicalValueCode(counts: values.counts), scratch: scratch) {
                (local) throws(CallerIDError) in try values.ids.next(local: local)
            }
            valueCount = values.valueCount
        } else {
            let ids = try FileWriter.ValueIds(frequencies: dictionary.frequencies, first: dictionary.firsts)
            var parts = LayoutParts()
            let interner = dictionary.interner
            let inMemory = try FileWriter.valueSections(ids: ids, label: { interner.bytes($0) },
                                                        valueCategory: { newCode[Int(interner.categories[$0])] }, parts: &parts, options: layout)
            tail = (inMemory.sections.map { ($0.0, SectionContent.bytes($0.1)) }, inMemory.hotCount)
            layout.runBitmap = runBitmap(tail)
            blocks = try encodeBlocks(entriesPath, layout: layout, coder: ids, scratch: scratch) { (v) throws(CallerIDError) in v }
            valueCount = ids.valueCount
        }
        defer { scratch.remove(blocks.path) }
        defer { for (_, section) in tail.sections { if case .file(let p, _, _) = section { scratch.remove(p) } } }

        let sections: [(UInt32, SectionContent)] = [
            (Format.Section.categories.rawValue, .bytes(Categories.encode(table))),
            (Format.Section.summary.rawValue, .bytes(blocks.summary)),
            (Format.Section.blockIndex.rawValue, .bytes(blocks.index)),
            (Format.Section.blocks.rawValue, .file(path: blocks.path, size: blocks.size, xxh3: blocks.xxh3)),
        ] + tail.sections
        let frame = FileWriter.Frame(sections: sections.map { ($0.0, $0.1.size, $0.1.xxh3) }, major: blocks.major, entries: result.entries,
                                     blockCount: blocks.count, valueCount: valueCount, hotCount: tail.hotCount, options: layout)
        result.xxh3 = try emit(frame, sections.map(\.1), to: path)
        result.distinctLabels = valueCount
        let version = FileWriter.Frame.version(major: blocks.major, sections: sections.map(\.0))
        result.formatVersion = Header.version(major: version.major, minor: version.minor)
        result.bytes = frame.fileSize
        result.labelDictionaryPeakBytes = dictionary.peakBytes
        result.labelDictionaryShare = dictionary.share
        result.labelDictionarySpilled = dictionary.isSpilled
        return result
    }

    /// The block records of the entries spilled by pass 1 (`value(v)` gives an entry's value
    /// as `coder` takes it), written to a scratch file and hashed; the index and summary.
    private static func encodeBlocks(_ entriesPath: String, layout: LayoutOptions, coder: some ValueCoder, scratch: SpillArea,
                                     value: (UInt32) throws(CallerIDError) -> UInt32) throws(CallerIDError) -> EncodedBlockFile {
        var parts = LayoutParts()
        var section = FileWriter.BlockSection(options: layout)
        let blocksPath = scratch.newPath("blocks")
        let blocksOut = try SpillWriter(path: blocksPath)
        var blocksHash = StreamingXXH3()
        var records: [UInt8] = []
        var keys: [UInt64] = []
        var values: [UInt32] = []
        keys.reserveCapacity(layout.blockSize)
        values.reserveCapacity(layout.blockSize)
        func flushRecords() throws(CallerIDError) {
            blocksHash.update(records)
            try blocksOut.write(records)
            records.removeAll(keepingCapacity: true)
        }
        func endBlock() throws(CallerIDError) {
            try section.append(keys: keys[...], values: values[...], ids: coder, to: &records, parts: &parts)
            keys.removeAll(keepingCapacity: true)
            values.removeAll(keepingCapacity: true)
            if records.count >= 1 << 20 { try flushRecords() }
        }
        let entriesIn = try SpillReader(path: entriesPath)
        while try entriesIn.nextBytes(max: 12 << 16, unit: 12, { (chunk) throws(CallerIDError) -> Bool in
            guard chunk.count % 12 == 0 else { throw CallerIDError(.io, "\(entriesPath): a spilled entry is cut") }
            var at = 0
            while at < chunk.count {
                keys.append(chunk.littleEndianWord(at: at))
                values.append(try value(UInt32(truncatingIfNeeded: chunk.littleEndianWord(at: at + 4) >> 32)))
                at += 12
                if keys.count == layout.blockSize { try endBlock() }
            }
            return !chunk.isEmpty
        }) {}
        if !keys.isEmpty { try endBlock() }
        section.finish(records: &records, parts: &parts)
        try flushRecords()
        try blocksOut.finish()
        return EncodedBlockFile(path: blocksPath, size: section.recordBytes, xxh3: blocksHash.digest, index: section.index,
                                summary: section.summary, count: section.count, major: section.major)
    }

    /// The block records in a scratch file, and what the frame needs of them.
    private struct EncodedBlockFile {
        let path: String
        let size: Int
        let xxh3: UInt64
        let index: [UInt8]
        let summary: [UInt8]
        let count: Int
        let major: UInt16
    }

    /// Writes the file in order — header, sections (from memory or their scratch files), section
    /// table, footer — through the atomic writer; returns its XXH3-64.
    private static func emit(_ frame: FileWriter.Frame, _ sections: [SectionContent], to path: String) throws(CallerIDError) -> UInt64 {
        var out = try AtomicFileWriter(path: path)
        var fileHash = StreamingXXH3()
        func emit(_ bytes: UnsafeRawBufferPointer) throws(CallerIDError) {
            fileHash.update(bytes)
            try out.write(bytes)
        }
        func emit(_ bytes: [UInt8]) throws(CallerIDError) {
            try bytes.withUnsafeBytes { raw in Result { () throws(CallerIDError) in try emit(raw) } }.get()
        }
        do {
            try emit(frame.header)
            for (k, section) in sections.enumerated() {
                try emit([UInt8](repeating: 0, count: frame.padding(before: k)))
                switch section {
                case .bytes(let bytes):
                    try emit(bytes)
                case .file(let file, _, _):
                    let reader = try SpillReader(path: file)
                    while try reader.nextBytes(max: 1 << 20, { (chunk) throws(CallerIDError) -> Bool in
                        try emit(chunk)
                        return !chunk.isEmpty
                    }) {}
                }
            }
            try emit([UInt8](repeating: 0, count: frame.paddingBeforeTable))
            try emit(frame.table)
            try emit(frame.footer)
            try out.commit()
        } catch {
            out.abandon()
            throw error
        }
        return fileHash.digest
    }
}

/// The categories of a streamed file: the codes the entries' categories get in the order they
/// are met (identify and block first), then the table in the builder's canonical order.
private struct LocalCategories {
    let global: [Category]
    var local: [Category] = [.identify, .block]
    var localByName: [String: UInt8] = ["identify": 0, "block": 1]
    var localOf: [Int]
    var used = [Bool](repeating: false, count: 256)

    init(_ global: [Category]) {
        self.global = global
        localOf = [Int](repeating: -1, count: global.count)
    }

    /// The local code of global category `c`, given on first use.
    mutating func code(_ c: Int) throws(CallerIDError) -> UInt8 {
        if localOf[c] >= 0 {
            used[localOf[c]] = true
            return UInt8(localOf[c])
        }
        let category = global[c]
        let code: UInt8
        if let known = localByName[category.name] {
            guard local[Int(known)].action == category.action else {
                throw CallerIDError(.invalidInput, "category '\(category.name)' used with both actions identify and block")
            }
            code = known
        } else {
            guard local.count < 256 else { throw CallerIDError(.limitExceeded, "more than 256 categories") }
            code = UInt8(local.count)
            local.append(category)
            localByName[category.name] = code
        }
        localOf[c] = Int(code)
        used[Int(code)] = true
        return code
    }

    /// The category table in the builder's canonical order — identify, block, then the
    /// categories used, by name — and each local code's code in it.
    func table() -> (table: [Category], newCode: [UInt8]) {
        let order = [0, 1] + (2..<local.count).filter { used[$0] }.sorted { local[$0].name < local[$1].name }
        var newCode = [UInt8](repeating: 0, count: local.count)
        for (new, old) in order.enumerated() { newCode[old] = UInt8(new) }
        return (order.map { local[$0] }, newCode)
    }
}
