// The distinct labels of a file written by the streamed writer (the bounded-memory build),
// kept within a share of the build's memory limit however many there are.
//
// While they fit, the labels are interned in memory and the file's value ids are ordered as the
// in-memory writer orders them (`FileWriter.ValueIds`). When they outgrow the share, the entries
// are taken in chunks: each chunk interns its own labels (a local id per entry, kept in the
// entries file), and a full chunk is written as a run of its distinct values sorted by hash —
// (hash; category, chunk, local id, first position, uses, label). Then:
//
//   1. The runs are merged by hash: the records of one value come together (equal bytes among
//      equal hashes), the earliest chunk's first. Each value's uses are summed and its first
//      position kept; a value goes, with the (chunk, local id) pairs that name it, to a sort by
//      first position (unique to a value: an entry has one value). The frequencies are counted
//      in a histogram (at most √(2 × entries) distinct ones).
//   2. The code lengths come from the histogram (`valueCodeLengthCounts(histogram:)`). A value's
//      rank in the order the lengths are given in (uses, then first position) is the start of
//      its frequency's ranks plus how many values of that frequency came first, so one pass in
//      first-position order gives each value its length, and its id: ids are ordered by
//      (length, first position), so the id is the length's first id plus the values of that
//      length met so far. The labels go to one file per length (id order once concatenated);
//      each (chunk, local id) pair goes, with its id, to a sort by (chunk, local id).
//   3. The writer's block pass reads that sort chunk by chunk: a table of the chunk's local ids
//      → ids translates its entries.
//
// Memory: the chunk's interner, or one sort's buffer, or one chunk's table — each within the
// share (``LabelDictionary/peakBytes`` says how much was used); read and write buffers of the
// scratch files besides (4 KiB to 4 MiB each, a quarter of the share between a merge's files).

/// The distinct (category, label) values of a streamed file and each entry's value.
struct LabelDictionary {
    /// The memory the dictionary keeps to: a quarter of the build's memory limit (the rows'
    /// buffers take the rest); no limit: everything in memory.
    static func share(ofMemoryLimit limit: Int?) -> Int { limit.map { max($0 / 4, 1) } ?? Int.max }

    let share: Int
    private let scratch: SpillArea
    /// The current chunk's values (the whole file's while nothing was spilled).
    private(set) var interner = LabelInterner(slots: 64)
    /// Per value of ``interner``: its entries, and the position of its first entry.
    private(set) var frequencies: [Int] = []
    private(set) var firsts: [Int] = []
    /// The chunks written so far, each a run of its values by hash.
    private var chunkRuns: SpilledRuns? = nil
    /// Per chunk written: the position after its last entry, and its values.
    private var chunkEnds: [Int] = []
    private var chunkSizes: [Int] = []
    /// Entries added so far.
    private(set) var position = 0
    /// The most bytes the dictionary's structures held at once (interner, sort buffers, tables).
    private(set) var peakBytes = 0

    /// A dictionary keeping to `share` bytes, spilling to `scratch` beyond it.
    init(share: Int, scratch: SpillArea) {
        self.share = share
        self.scratch = scratch
    }

    /// True once the values outgrew the share: ids come from ``finishSpilled(hotLabelBytes:)``.
    var isSpilled: Bool { chunkRuns != nil }

    /// Bytes of the current chunk: the interner (with room for its arrays' slack) and the
    /// uses and first positions.
    private var chunkBytes: Int {
        interner.memoryBytes &+ interner.count &* 13 &+ (frequencies.capacity &+ firsts.capacity) &* 8
    }

    private mutating func note(_ bytes: Int) { if bytes > peakBytes { peakBytes = bytes } }

    /// The next entry's value: its id in the current chunk (the file's id order comes later).
    /// Throws for a label the label rule refuses.
    mutating func add(category: UInt8, label: UnsafeRawBufferPointer) throws(CallerIDError) -> UInt32 {
        let v: Int
        switch try interner.intern(category: category, bytes: label) {
        case .id(let id): v = Int(id)
        case .refused(let problem): throw CallerIDError(.invalidInput, problem.description)
        }
        if v == frequencies.count {
            frequencies.append(0)
            firsts.append(position)
        }
        frequencies[v] += 1
        position += 1
        // Half the share: a doubling of the interner's or the arrays' storage stays within it,
        // and so does what the in-memory ordering adds when nothing is spilled.
        let bytes = chunkBytes
        note(bytes)
        if bytes >= share / 2 { try spillChunk() }
        return UInt32(v)
    }

    /// Writes the current chunk's values as a run sorted by hash; the next entry starts a chunk.
    private mutating func spillChunk() throws(CallerIDError) {
        guard interner.count > 0 else { return }
        let runs = chunkRuns ?? SpilledRuns(in: scratch, memoryLimit: share)
        chunkRuns = runs
        let chunk = chunkEnds.count
        let interner = self.interner, frequencies = self.frequencies, firsts = self.firsts
        var hashes = (0..<interner.count).map { interner.hash(of: $0) }
        var order = Array(0..<UInt32(interner.count))
        radixSortPairs(keys: &hashes, values: &order)
        try runs.write(count: hashes.count) { i, payload in
            let v = Int(order[i])
            payload.append(interner.categories[v])
            payload.appendVarint(chunk)
            payload.appendVarint(v)
            payload.appendVarint(firsts[v])
            payload.appendVarint(frequencies[v])
            payload.append(contentsOf: interner.bytes(v))
            return hashes[i]
        }
        chunkEnds.append(position)
        chunkSizes.append(interner.count)
        self.interner = LabelInterner(slots: 64)
        self.frequencies = []
        self.firsts = []
    }

    /// What a spilled dictionary hands the writer: the value count, the code lengths, each
    /// entry's id and the labels in id order.
    struct Spilled {
        let valueCount: Int
        /// `counts[len]`: values with a code of `len` bits (section 5).
        let counts: [Int]
        /// Each entry's id, read in entry order.
        var ids: ChunkIds
        /// Rows (category, label) of the values in id order, file after file.
        let labelFiles: [String]
        /// Keeps the sort that ``ids`` reads until it is done.
        fileprivate let idSort: SpilledSort
    }

    /// Orders the values of a spilled dictionary (steps 1 and 2 above), after the last entry.
    mutating func finishSpilled() throws(CallerIDError) -> Spilled {
        try spillChunk()
        guard let chunkRuns else { preconditionFailure("finishSpilled of a dictionary that spilled nothing") }
        let byFirst = SpilledSort(in: scratch, bufferBytes: share / 2)
        let histogram = try groupValues(chunkRuns, into: byFirst)
        chunkRuns.removeAll()
        let valueCount = histogram.values.reduce(0, +)
        guard valueCount < 1 << Format.maxCodeLength else {
            throw CallerIDError(.limitExceeded, "more than \(1 << Format.maxCodeLength) distinct labels")
        }
        let counts = valueCodeLengthCounts(histogram: histogram.map { ($0.key, $0.value) })
        let (idSort, labelFiles) = try assignIds(byFirst, histogram: histogram, counts: counts, valueCount: valueCount)
        let ids = ChunkIds(rows: try idSort.sorted(), chunkEnds: chunkEnds, chunkSizes: chunkSizes)
        note(chunkSizes.max().map { $0 * 4 } ?? 0)
        return Spilled(valueCount: valueCount, counts: counts, ids: ids, labelFiles: labelFiles, idSort: idSort)
    }

    /// Step 1: the chunks' records merged by hash, each value once to `byFirst` (key: first
    /// position; payload: uses, category, its (chunk, local id) pairs, label). Returns how many
    /// values have each frequency.
    private mutating func groupValues(_ runs: SpilledRuns, into byFirst: SpilledSort) throws(CallerIDError) -> [Int: Int] {
        struct Record {
            var category: UInt8
            var chunk: Int
            var local: Int
            var first: Int
            var uses: Int
            var label: [UInt8]
        }
        var histogram: [Int: Int] = [:]
        var group: [Record] = []
        var groupHash: UInt64 = 0
        var peak = 0
        func flush() throws(CallerIDError) {
            var taken = [Bool](repeating: false, count: group.count)
            for i in group.indices where !taken[i] {
                var uses = 0
                var members: [(chunk: Int, local: Int)] = []
                // The group is in chunk order: its first record holds the value's first entry.
                for j in i..<group.count where !taken[j] && group[j].category == group[i].category && group[j].label == group[i].label {
                    taken[j] = true
                    uses += group[j].uses
                    members.append((group[j].chunk, group[j].local))
                }
                histogram[uses, default: 0] += 1
                let record = group[i]
                try byFirst.add(UInt64(record.first)) { payload in
                    payload.appendVarint(uses)
                    payload.append(record.category)
                    payload.appendVarint(members.count)
                    for m in members {
                        payload.appendVarint(m.chunk)
                        payload.appendVarint(m.local)
                    }
                    payload.append(contentsOf: record.label)
                }
                peak = max(peak, byFirst.memoryBytes &+ histogram.count &* 32)
            }
            group.removeAll(keepingCapacity: true)
        }
        var merge = try RunMerge(runs: runs.paths, bufferBytes: runs.mergeBuffer(files: runs.paths.count))
        while try merge.next({ (hash, payload, _) throws(CallerIDError) in
            var at = 1
            guard payload.count >= 1, let chunk = Varint.read(payload, at: &at), let local = Varint.read(payload, at: &at),
                  let first = Varint.read(payload, at: &at), let uses = Varint.read(payload, at: &at) else {
                throw CallerIDError(.io, "a spilled label record is damaged")
            }
            if !group.isEmpty && hash != groupHash { try flush() }
            groupHash = hash
            group.append(Record(category: payload[0], chunk: chunk, local: local, first: first, uses: uses,
                                label: Array(UnsafeRawBufferPointer(rebasing: payload[at...]))))
        }) {}
        try flush()
        note(peak)
        return histogram
    }

    /// Step 2: each value's length and id, in first-position order; the labels to one file per
    /// length, each (chunk, local id) → id to a sort by (chunk, local id).
    private mutating func assignIds(_ byFirst: SpilledSort, histogram: [Int: Int], counts: [Int],
                                    valueCount: Int) throws(CallerIDError) -> (SpilledSort, [String]) {
        // Ranks by (uses descending, first position): each frequency's first rank.
        var rankOf: [Int: Int] = [:]
        var rank = 0
        for f in histogram.keys.sorted(by: >) {
            rankOf[f] = rank
            rank += histogram[f]!
        }
        var seenOfFrequency: [Int: Int] = [:]
        // The ranks of each length end here; ids of a length start where the shorter ones end.
        var lengthEnd = [Int](repeating: 0, count: counts.count)
        for len in 1..<counts.count { lengthEnd[len] = lengthEnd[len - 1] + counts[len] }
        var nextId = [0] + lengthEnd.dropLast()
        func length(ofRank r: Int) -> Int {
            guard valueCount > 1 else { return 0 }  // a zero-bit code: the one value has id 0
            var len = 1
            while r >= lengthEnd[len] { len += 1 }
            return len
        }
        let byChunk = SpilledSort(in: scratch, bufferBytes: share / 2)
        var files: [SpillWriter?] = Array(repeating: nil, count: counts.count)
        var rows = try byFirst.sorted()
        var peak = 0
        while try rows.next({ (_, payload) throws(CallerIDError) in
            var at = 0
            guard let uses = Varint.read(payload, at: &at), at < payload.count else { throw CallerIDError(.io, "a spilled value is damaged") }
            let category = payload[at]
            at += 1
            guard let memberCount = Varint.read(payload, at: &at) else { throw CallerIDError(.io, "a spilled value is damaged") }
            let seen = seenOfFrequency[uses, default: 0]
            seenOfFrequency[uses] = seen + 1
            let len = length(ofRank: rankOf[uses]! + seen)
            let id = nextId[len]
            nextId[len] += 1
            for _ in 0..<memberCount {
                guard let chunk = Varint.read(payload, at: &at), let local = Varint.read(payload, at: &at) else {
                    throw CallerIDError(.io, "a spilled value is damaged")
                }
                try byChunk.add(UInt64(chunk) << 32 | UInt64(local)) { $0.appendVarint(id) }
            }
            peak = max(peak, byChunk.memoryBytes &+ (rankOf.count &+ seenOfFrequency.count) &* 32)
            if files[len] == nil { files[len] = try SpillWriter(path: scratch.newPath("labels"), bufferBytes: 64 << 10) }
            try files[len]!.writeRow(UInt64(category), UnsafeRawBufferPointer(rebasing: payload[at...]))
        }) {}
        note(peak)
        var paths: [String] = []
        for file in files {
            guard let file else { continue }
            try file.finish()
            paths.append(file.path)
        }
        return (byChunk, paths)
    }
}

/// Each entry's id in a spilled dictionary, in entry order: the rows (chunk, local id) → id
/// read one chunk at a time into a table of that chunk's values.
struct ChunkIds {
    fileprivate var rows: SpilledSort.SortedRows
    let chunkEnds: [Int]
    let chunkSizes: [Int]
    private var chunk = -1
    private var end = 0
    private var position = 0
    private var table: [UInt32] = []

    fileprivate init(rows: SpilledSort.SortedRows, chunkEnds: [Int], chunkSizes: [Int]) {
        self.rows = rows
        self.chunkEnds = chunkEnds
        self.chunkSizes = chunkSizes
    }

    /// The id of the next entry, whose local id in its chunk is `local`.
    mutating func next(local: UInt32) throws(CallerIDError) -> UInt32 {
        while position == end { try loadChunk() }
        position += 1
        guard Int(local) < table.count else { throw CallerIDError(.io, "a spilled entry names no value of its chunk") }
        return table[Int(local)]
    }

    private mutating func loadChunk() throws(CallerIDError) {
        chunk += 1
        guard chunk < chunkEnds.count else { throw CallerIDError(.io, "more spilled entries than the label chunks hold") }
        end = chunkEnds[chunk]
        var table = [UInt32](repeating: 0, count: chunkSizes[chunk])
        let expected = UInt64(chunk)
        for _ in 0..<chunkSizes[chunk] {
            guard try rows.next({ (key, payload) throws(CallerIDError) in
                var at = 0
                guard key >> 32 == expected, Int(key & 0xFFFF_FFFF) < table.count, let id = Varint.read(payload, at: &at),
                      at == payload.count, id <= Int(UInt32.max) else {
                    throw CallerIDError(.io, "a spilled value id is out of place")
                }
                table[Int(key & 0xFFFF_FFFF)] = UInt32(id)
            }) else { throw CallerIDError(.io, "the spilled value ids end early") }
        }
        self.table = table
    }
}

// MARK: The label sections of a spilled dictionary

/// A section of the file written to a scratch file as it is made, hashed as it goes: sections
/// that grow with the distinct labels are never held whole.
final class SectionFile {
    let path: String
    private let out: SpillWriter
    private var hash = StreamingXXH3()
    private(set) var size = 0

    init(in scratch: SpillArea, _ name: String) throws(CallerIDError) {
        path = scratch.newPath(name)
        out = try SpillWriter(path: path, bufferBytes: 256 << 10)
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws(CallerIDError) {
        hash.update(bytes)
        size += bytes.count
        try out.write(bytes)
    }

    func write(_ bytes: [UInt8]) throws(CallerIDError) {
        try bytes.withUnsafeBytes { raw in Result { () throws(CallerIDError) in try write(raw) } }.get()
    }

    /// The section, written: where it is, its size and its XXH3-64.
    func finish() throws(CallerIDError) -> SectionContent {
        try out.finish()
        return .file(path: path, size: size, xxh3: hash.digest)
    }
}

/// A section's bytes for the streamed writer: in memory, or in a scratch file.
enum SectionContent {
    case bytes([UInt8])
    case file(path: String, size: Int, xxh3: UInt64)

    var size: Int {
        switch self {
        case .bytes(let b): b.count
        case .file(_, let size, _): size
        }
    }

    var xxh3: UInt64 {
        switch self {
        case .bytes(let b): Codec.xxh3(b)
        case .file(_, _, let hash): hash
        }
    }
}

extension FileWriter {
    /// Sections 5–11 (or 5–8, 13 and 14) of a spilled dictionary's values, byte for byte what
    /// ``valueSections(ids:label:valueCategory:parts:options:)`` makes of the same values, the
    /// ones that grow with the values written to scratch files: the labels are read in id
    /// order up to four times (hot labels and the cold labels' size; the LZ4 groups; the
    /// symbol table's sample; the cold labels coded). `valueCategory` maps a label row's category to the file's code.
    static func spilledValueSections(_ values: LabelDictionary.Spilled, valueCategory: (UInt8) -> UInt8, hotLabelBytes: Int,
                                     coding: LabelCoding, scratch: SpillArea) throws(CallerIDError) -> (sections: [(UInt32, SectionContent)], hotCount: Int) {
        func forEachLabel(from start: Int, _ body: (UInt8, UnsafeRawBufferPointer) throws(CallerIDError) -> Void) throws(CallerIDError) {
            var v = 0
            for path in values.labelFiles {
                let reader = try SpillReader(path: path, bufferBytes: 256 << 10)
                while try reader.nextRow({ (category, label) throws(CallerIDError) -> Bool in
                    if v >= start { try body(UInt8(truncatingIfNeeded: category), label) }
                    v += 1
                    return true
                }) != nil {}
            }
        }
        // Value categories and hot labels; the cold labels' size.
        let categories = try SectionFile(in: scratch, "value-categories")
        let hotOffsets = try SectionFile(in: scratch, "hot-offsets")
        let hotLabels = try SectionFile(in: scratch, "hot-labels")
        var hot = true, hotCount = 0, coldBytes = 0
        var dictionary: [UInt8] = []  // the hot labels' last 64 KiB (at most 128 KiB held)
        try hotOffsets.write(UInt32(0).littleEndianBytes)
        try forEachLabel(from: 0) { (category, label) throws(CallerIDError) in
            try categories.write([valueCategory(category)])
            if hot && hotLabels.size + label.count <= hotLabelBytes {
                try hotLabels.write(label)
                dictionary.append(contentsOf: label)
                if dictionary.count > 2 * Format.lz4DictionaryBytes { dictionary.removeFirst(dictionary.count - Format.lz4DictionaryBytes) }
                guard hotLabels.size <= Int(UInt32.max) else { throw CallerIDError(.limitExceeded, "hot labels exceed 4 GiB") }
                try hotOffsets.write(UInt32(hotLabels.size).littleEndianBytes)
                hotCount += 1
            } else {
                hot = false
                coldBytes += label.count
            }
        }
        let head: [(UInt32, SectionContent)] = [
            (Format.Section.codeLengths.rawValue, .bytes(encodeValueCodeLengths(values.counts))),
            (Format.Section.valueCategories.rawValue, try categories.finish()),
            (Format.Section.hotOffsets.rawValue, try hotOffsets.finish()),
            (Format.Section.hotLabels.rawValue, try hotLabels.finish()),
        ]
        // The cold labels as the in-memory writer codes them (``encodeLabels``): in LZ4 groups,
        // with the symbol table, or both and the smaller kept.
        var lz4: [(UInt32, SectionContent)]? = nil
        if coding != .symbols {
            do {
                lz4 = try spilledLZ4(dictionary, singles: 0, scratch: scratch) { body throws(CallerIDError) in
                    try forEachLabel(from: hotCount) { (_, label) throws(CallerIDError) in try body(label) }
                }
            } catch where coding == .auto && error.code == .limitExceeded {
                lz4 = nil  // a group too long for LZ4: the symbol table holds any label
            }
            if lz4 == nil && coding == .lz4 {
                throw CallerIDError(.invalidInput, "this build cannot write LZ4 cold labels (built without liblz4); use --labels symbols")
            }
        }
        if let lz4, coding == .lz4 { return (head + lz4, hotCount) }
        let symbols = try spilledSymbols(coldBytes: coldBytes, scratch: scratch) { body throws(CallerIDError) in
            try forEachLabel(from: hotCount) { (_, label) throws(CallerIDError) in try body(label) }
        }
        let size = { (sections: [(UInt32, SectionContent)]) in sections.reduce(0) { $0 + $1.1.size } }
        let (kept, dropped) = if let lz4, size(lz4) < size(symbols) { (lz4, symbols) } else { (symbols, lz4 ?? []) }
        for (_, section) in dropped { if case .file(let p, _, _) = section { scratch.remove(p) } }
        return (head + kept, hotCount)
    }

    /// Sections 13 and 14 of the cold labels `forEachCold` gives in id order, against
    /// `dictionary`; nil when this build cannot compress LZ4.
    private static func spilledLZ4(_ dictionary: [UInt8], singles: Int, scratch: SpillArea,
                                   forEachCold: ((UnsafeRawBufferPointer) throws(CallerIDError) -> Void) throws(CallerIDError) -> Void)
        throws(CallerIDError) -> [(UInt32, SectionContent)]? {
        guard var writer = LZ4ColdLabelWriter(hotLabels: dictionary, singles: singles) else { return nil }
        let index = try SectionFile(in: scratch, "lz4-index")
        let groups = try SectionFile(in: scratch, "lz4-labels")
        try index.write(writer.indexHeader)
        func emit(_ offset: UInt32, _ group: [UInt8]) throws(CallerIDError) {
            try index.write(offset.littleEndianBytes)
            try groups.write(group)
        }
        try forEachCold { label throws(CallerIDError) in try writer.add(label, emit: emit) }
        try writer.finish(emit: emit)
        try index.write(UInt32(groups.size).littleEndianBytes)
        return [(Format.Section.lz4ColdIndex.rawValue, try index.finish()), (Format.Section.lz4ColdLabels.rawValue, try groups.finish())]
    }

    /// Sections 9, 10 and 11 of the cold labels `forEachCold` gives in id order (read twice:
    /// the symbol table's sample, then the labels coded).
    private static func spilledSymbols(coldBytes: Int, scratch: SpillArea,
                                       forEachCold: ((UnsafeRawBufferPointer) throws(CallerIDError) -> Void) throws(CallerIDError) -> Void)
        throws(CallerIDError) -> [(UInt32, SectionContent)] {
        // The symbol table, trained on a sample of the cold labels as the in-memory writer's is.
        var sample = LabelSample(totalBytes: coldBytes)
        try forEachCold { label throws(CallerIDError) in sample.add(label) }
        let symbols = LabelSymbolTable.train(sample)
        sample = LabelSample(totalBytes: 0)
        // The cold labels coded, in groups.
        let coldIndex = try SectionFile(in: scratch, "cold-index")
        let coldLabels = try SectionFile(in: scratch, "cold-labels")
        var k = 0
        var coded: [UInt8] = []
        try forEachCold { label throws(CallerIDError) in
            if k & ((1 << Format.coldGroupShift) - 1) == 0 {
                guard coldLabels.size <= Int(UInt32.max) else { throw CallerIDError(.limitExceeded, "cold labels exceed 4 GiB") }
                try coldIndex.write(UInt32(coldLabels.size).littleEndianBytes)
            }
            coded.removeAll(keepingCapacity: true)
            symbols.encode(label, into: &coded)
            var length: [UInt8] = []
            length.appendVarint(coded.count)  // LEB128, as every varint of the core
            try coldLabels.write(length)
            try coldLabels.write(coded)
            k += 1
        }
        guard coldLabels.size <= Int(UInt32.max) else { throw CallerIDError(.limitExceeded, "cold labels exceed 4 GiB") }
        try coldIndex.write(UInt32(coldLabels.size).littleEndianBytes)
        return [
            (Format.Section.symbolTable.rawValue, .bytes(symbols.serialized)),
            (Format.Section.coldIndex.rawValue, try coldIndex.finish()),
            (Format.Section.coldLabels.rawValue, try coldLabels.finish()),
        ]
    }
}

extension UInt32 {
    /// The four bytes of this value, little-endian.
    fileprivate var littleEndianBytes: [UInt8] {
        var out: [UInt8] = []
        out.appendLE(self)
        return out
    }
}
