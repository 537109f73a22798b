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
    /// The file's format version, as its header says ("2.0", or "3.0" with key codec 2).
    package var formatVersion = ""
}

package enum StreamedFileWriter {
    /// Writes the entries of `source` as a database at `path` (through the atomic writer: a
    /// failure leaves `path` as it was), byte for byte what ``DatabaseBuilder`` writes for the
    /// same entries. Memory: the distinct labels and their counts, a block's entries, 12 bytes
    /// per block of the index; the block records go to a file in `scratch` first.
    package static func write(_ source: some SortedEntrySource, categories global: [Category], options: BuildOptions,
                              scratch: SpillArea, to path: String) throws(CallerIDError) -> StreamedFile {
        try DatabaseBuilder.check(options)
        var layout = options.layout
        var result = StreamedFile()
        var plan = BlockRecord.KeyCodecPlan(blockSize: layout.blockSize)

        // Pass 1: the labels, how often each is used and where first, the categories used.
        var interner = LabelInterner()
        var local: [Category] = [.identify, .block]
        var localByName: [String: UInt8] = ["identify": 0, "block": 1]
        var localOf = [Int](repeating: -1, count: global.count)
        var freq: [Int] = []
        var first: [Int] = []
        var position = 0
        func localCode(_ c: Int) throws(CallerIDError) -> UInt8 {
            if localOf[c] >= 0 { return UInt8(localOf[c]) }
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
            return code
        }
        func id(_ code: UInt8, _ label: UnsafeRawBufferPointer) throws(CallerIDError) -> Int {
            switch try interner.intern(category: code, bytes: label) {
            case .id(let id): return Int(id)
            case .refused(let problem): throw CallerIDError(.invalidInput, problem.description)
            }
        }
        // Each entry's number and value id, for the second pass (12 bytes an entry on disk:
        // reading them back costs less than merging and hashing the labels again).
        let entriesPath = scratch.newPath("entries")
        defer { scratch.remove(entriesPath) }
        let entriesOut = try SpillWriter(path: entriesPath)
        var pair: [UInt8] = []
        try source.forEach { (number, category, label) throws(CallerIDError) in
            let v = try id(try localCode(category), label)
            pair.removeAll(keepingCapacity: true)
            pair.appendLE(number)
            pair.appendLE(UInt32(v))
            try entriesOut.write(pair)
            plan.add(number)
            if v == freq.count {
                freq.append(0)
                first.append(position)
            }
            freq[v] += 1
            result.entriesByCategory[category, default: 0] += 1
            if result.firstNumber == nil { result.firstNumber = number }
            result.lastNumber = number
            position += 1
        }
        result.entries = position
        try entriesOut.finish()
        layout.runBitmap = plan.usesRunBitmap()

        // The category table in the builder's canonical order: identify, block, then the
        // categories used, by name.
        var used = [Bool](repeating: false, count: local.count)
        for v in 0..<interner.count { used[Int(interner.categories[v])] = true }
        let order = [0, 1] + (2..<local.count).filter { used[$0] }.sorted { local[$0].name < local[$1].name }
        var newCode = [UInt8](repeating: 0, count: local.count)
        for (new, old) in order.enumerated() { newCode[old] = UInt8(new) }
        let table = order.map { local[$0] }
        let ids = try FileWriter.ValueIds(frequencies: freq, first: first)
        freq = []
        first = []

        // Pass 2: the block records, to a scratch file.
        var parts = LayoutParts()
        var section = FileWriter.BlockSection(options: layout)
        let blocksPath = scratch.newPath("blocks")
        defer { scratch.remove(blocksPath) }
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
            try section.append(keys: keys[...], values: values[...], ids: ids, to: &records, parts: &parts)
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
                values.append(UInt32(truncatingIfNeeded: chunk.littleEndianWord(at: at + 4) >> 32))
                at += 12
                if keys.count == layout.blockSize { try endBlock() }
            }
            return !chunk.isEmpty
        }) {}
        if !keys.isEmpty { try endBlock() }
        section.finish(records: &records, parts: &parts)
        try flushRecords()
        try blocksOut.finish()

        // The rest in memory (it grows with the distinct labels only), then the file in order.
        let tail = try FileWriter.valueSections(ids: ids, label: { interner.bytes($0) },
                                                valueCategory: { newCode[Int(interner.categories[$0])] }, parts: &parts, options: layout)
        let names = Categories.encode(table)
        let before: [(UInt32, [UInt8])] = [
            (Format.Section.categories.rawValue, names),
            (Format.Section.summary.rawValue, section.summary),
            (Format.Section.blockIndex.rawValue, section.index),
        ]
        let blocksAt = before.count
        let all = before.map { ($0.0, $0.1.count, Codec.xxh3($0.1)) }
            + [(Format.Section.blocks.rawValue, section.recordBytes, blocksHash.digest)]
            + tail.sections.map { ($0.0, $0.1.count, Codec.xxh3($0.1)) }
        let frame = FileWriter.Frame(sections: all, major: section.major, entries: result.entries, blockCount: section.count,
                                     valueCount: ids.valueCount, hotCount: tail.hotCount, options: layout)
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
            for k in 0..<all.count {
                try emit([UInt8](repeating: 0, count: frame.padding(before: k)))
                if k < blocksAt {
                    try emit(before[k].1)
                } else if k == blocksAt {
                    let reader = try SpillReader(path: blocksPath)
                    while try reader.nextBytes(max: 1 << 20, { (chunk) throws(CallerIDError) -> Bool in
                        try emit(chunk)
                        return !chunk.isEmpty
                    }) {}
                } else {
                    try emit(tail.sections[k - blocksAt - 1].1)
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
        result.distinctLabels = ids.valueCount
        result.formatVersion = Header.version(major: section.major)
        result.bytes = frame.fileSize
        result.xxh3 = fileHash.digest
        return result
    }
}
