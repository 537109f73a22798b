/// An entry of a database: a number, its label and its category.
public struct Entry: Hashable, Sendable, CustomStringConvertible {
    /// The E.164 number (country code and national number, digits only).
    public var number: UInt64
    /// The label shown for the number (may be empty, typically for blocked numbers).
    public var label: String
    public var category: Category
    /// How a lookup found it: ``MatchKind/entry``, or the range of ``Database/answer(_:)``'s
    /// fallback.
    public var match: MatchKind

    public init(number: UInt64, label: String, category: Category = .identify, match: MatchKind = .entry) {
        self.number = number
        self.label = label
        self.category = category
        self.match = match
    }

    public var description: String { "\(number)\t\(label)\t\(category.name)" }
}

/// A borrowed view of an entry: the label bytes live in the mapped file (a hot label) or in
/// memory holding a decoded cold label. No allocation.
///
/// A view is lent, never handed out: to the closure of the database call that made it, or by
/// an ``EntryBatch`` until the batch is filled again. The type is non-escapable, so the
/// compiler holds every use to that: a closure cannot return a view or store it (`db.withEntry(n)
/// { $0 }` does not compile), and a batch cannot be filled while a view of it is alive. Keep an
/// ``entry`` (a copy that owns its label) instead.
public struct EntryView: ~Escapable {
    public let number: UInt64
    /// The label's UTF-8 bytes (package access: the C ABI and the tool pass them on in place).
    @usableFromInline package let labelBytes: UnsafeRawBufferPointer
    @usableFromInline let categoryCode: Int
    /// How the answer was found: ``MatchKind/entry`` for every view but those of
    /// ``Database/withAnswer(_:_:)`` that fell back to a range.
    public let match: MatchKind
    /// True when `labelBytes` point into the database's own bytes (valid while it is open),
    /// false when they point into a decode buffer.
    @usableFromInline package let labelIsMapped: Bool
    // Unretained: a view cannot outlive the call that lent it (the caller holds the database
    // for the call) or the batch that holds it (which holds the database).
    @usableFromInline let unretainedDatabase: Unretained<Database>

    /// A view lent for the duration of a call on `database`.
    @usableFromInline @_lifetime(borrow database)
    init(number: UInt64, categoryCode: Int, labelBytes: UnsafeRawBufferPointer, database: borrowing Database, labelIsMapped: Bool = false,
         match: MatchKind = .entry) {
        self.match = match
        self.number = number
        self.categoryCode = categoryCode
        self.labelBytes = labelBytes
        self.unretainedDatabase = Unretained(copy database)
        self.labelIsMapped = labelIsMapped
    }

    /// Entry `i` of `batch`'s last fill, lent until the batch is filled again. Inlinable, as
    /// the batch's subscript is: a scan makes one per entry.
    @inlinable @_lifetime(borrow batch)
    init(_ i: Int, of batch: borrowing EntryBatch) {
        match = .entry
        number = batch.numberStorage[i]
        categoryCode = Int(batch.categoryStorage[i])
        labelBytes = batch.labelStorage[i]
        unretainedDatabase = Unretained(batch.database!)
        labelIsMapped = false
    }

    var database: Database { unretainedDatabase.object }

    public var category: Category { database.categories[categoryCode] }

    /// The category's position in ``Database/categories`` (no copy, no reference counting).
    public var categoryIndex: Int { categoryCode }

    /// The label as a `String` (allocates for labels over 15 bytes).
    public var label: String { String(decoding: labelBytes, as: UTF8.self) }

    /// The label's length in UTF-8 bytes.
    public var labelByteCount: Int { labelBytes.count }

    /// A copy that owns its label.
    public var entry: Entry { Entry(number: number, label: label, category: category, match: match) }
}

/// Where a section of a database file lies; see ``DatabaseInfo``.
public struct SectionInfo: Sendable, Equatable {
    public var name: String
    public var offset: Int
    public var bytes: Int
    public var checksum: UInt64
}

/// Facts about a database file, as printed by `lookup info`.
public struct DatabaseInfo: Sendable, Equatable {
    public var path: String
    public var formatVersion: String
    public var entries: Int
    public var distinctLabels: Int
    public var blockSize: Int
    public var blocks: Int
    /// Values whose labels are stored raw (the most frequent ones).
    public var hotLabels: Int
    /// Symbols of the table that codes the other (cold) labels (0 with LZ4).
    public var labelSymbols: Int
    /// How the cold labels are coded: ``LabelCoding/symbols`` or ``LabelCoding/lz4``.
    public var labelCoding: LabelCoding = .symbols
    /// With LZ4: cold labels stored alone (one LZ4 block each), and the labels of each other group.
    public var lz4SingleLabels = 0
    public var lz4GroupLabels = 0
    public var fileBytes: Int
    public var sections: [SectionInfo]
    public var categories: [Category]
    /// Ranges of the optional ranges section (0 when it is absent).
    public var ranges: Int = 0
    public var bytesPerEntry: Double { entries == 0 ? 0 : Double(fileBytes) / Double(entries) }
}

/// A read-only database file, memory-mapped.
///
/// Opening checks the header, footer, section table and the sizes of every section in O(1)
/// of the file's size; each block record and label is checked when it is first read, so
/// nothing read from the file is trusted before a check. ``verify()`` additionally checks
/// every checksum and decodes everything.
///
/// A `Database` is safe to use from several threads at once: it holds no mutable state
/// (lookups keep nothing between calls); each cursor has its own.
///
/// ## Replacing the file while it is open
///
/// The default ``DatabaseMapping/map`` maps the file. Replace a database that readers may
/// have open by writing a new file and `rename`-ing it over the old path (as `lookup build`
/// and ``DatabaseBuilder`` do): open databases keep reading the old file, intact, and
/// ``fileChange`` reports ``DatabaseFileChange/replaced``. Never modify the file in place
/// (`cp new.cid live.cid`, shell `>`, `truncate`): a mapped reader then reads changed bytes
/// or is killed by SIGBUS when it touches a page past the new end of the file. ``checkFile()``
/// detects such a change cheaply (one `stat`); long-running readers call it from time to
/// time (the `lookup -` batch mode does, every 1,024 lookups and whenever input arrives).
/// When the writer is not under your control, open with ``DatabaseMapping/copy``.
public final class Database: Sendable {
    public let path: String
    public let categories: [Category]
    /// Number of entries (distinct numbers).
    public let count: Int
    let file: MappedFile
    let blockCount: Int
    /// Entries of the largest block (the writer's block size; ≤ Format.maxBlockEntries).
    let blockSize: Int
    let valueCount: Int
    let syncShift: Int
    /// The highest key codec a record may use: codec 2 only in a file of major version 3.
    let maxKeyCodec: UInt8
    /// Sections 2 and 3: from a number to its block.
    let blockIndex: BlockIndex
    /// Section 4: the block records, then 8 zero bytes.
    let blocks: ByteView
    let valueCategories: ByteView
    /// The values' labels (sections 7–11).
    @usableFromInline let labels: LabelTable
    let code: ValueCode
    let sections: [(kind: UInt32, offset: Int, length: Int, checksum: UInt64)]
    let tableOffset: Int
    /// The optional ranges section (kind 12), nil when the file has none.
    let ranges: RangeTable?

    /// Opens and validates `path`; with `verify: true` also runs ``verify()``.
    ///
    /// Opening costs O(1) in the size of the file: it checks the header, the footer, the
    /// section table (each with its checksum), the sizes of all sections, the value code, the
    /// label symbol table and the categories. Each block record and label is checked when it
    /// is used, before its bytes are read.
    ///
    /// - Parameters:
    ///   - mapping: ``DatabaseMapping/map`` (default) maps the file; ``DatabaseMapping/copy``
    ///     reads it into memory, so that later changes to the file cannot affect this database.
    /// - Throws: ``CallerIDError`` with code `fileNotFound`, `io`, `corrupt` or
    ///   `unsupportedVersion` (a file of another major version, such as 1.0), and a message
    ///   naming the file and the damaged part.
    public init(path: String, verify: Bool = false, mapping: DatabaseMapping = .map) throws(CallerIDError) {
        self.path = path
        file = try MappedFile(path: path, mode: mapping)
        let b = file.bytes
        func bad(_ what: String) -> CallerIDError { CallerIDError.corrupt(path, what) }

        let header = try Header(b, path: path)
        let (entries, blockCount, valueCount, hotCount) = (header.entryCount, header.blockCount, header.valueCount, header.hotCount)
        let (syncShift, summaryShift, blockSize) = (header.syncShift, header.summaryShift, header.blockSize)
        let sectionTable = try SectionTable(b, header: header, path: path)
        let (list, rangesView, table) = (sectionTable.all, sectionTable.ranges, sectionTable.offset)
        if verify {
            try Database.verifyChecksums(b, sections: list, tableOffset: table, path: path)
        }
        func section(_ s: Format.Section) throws(CallerIDError) -> ByteView { try sectionTable.section(s, path: path) }
        let blocks = try section(.blocks)
        let valueCategories = try section(.valueCategories)
        let hotOffsets = try section(.hotOffsets)
        let hotLabels = try section(.hotLabels)
        let codeLengths = try section(.codeLengths)
        let blockIndex = try BlockIndex(try section(.blockIndex), summary: try section(.summary), records: blocks, blockCount: blockCount,
                                        summaryShift: summaryShift, path: path)
        try SectionTable.checkLength(.valueCategories, valueCategories, valueCount, path: path)
        let code = try ValueCode.read(codeLengths, valueCount: valueCount, path: path)
        // Version 3.1 keeps its cold labels in LZ4 groups (sections 13 and 14), the others with
        // the symbol table (sections 9, 10 and 11).
        let labels = header.minor == Format.minorLZ4Labels
            ? try LabelTable(valueCount: valueCount, hotCount: hotCount, hotOffsets: hotOffsets, hotLabels: hotLabels,
                             lz4Index: try section(.lz4ColdIndex), lz4Labels: try section(.lz4ColdLabels), path: path, bad: bad)
            : try LabelTable(valueCount: valueCount, hotCount: hotCount, hotOffsets: hotOffsets, hotLabels: hotLabels,
                             coldIndex: try section(.coldIndex), coldLabels: try section(.coldLabels), symbolTable: try section(.symbolTable),
                             path: path, what: "value", part: { "section '\($0)'" }, bad: bad)
        let categories = try Categories.decode(try section(.categories), path: path)
        let ranges = try rangesView.map { v throws(CallerIDError) in try RangeTable(v, path: path) }

        self.count = Int(entries)
        self.blockCount = blockCount
        self.blockSize = blockSize
        self.valueCount = valueCount
        self.syncShift = syncShift
        self.maxKeyCodec = Format.maxKeyCodec(major: header.major)
        self.blockIndex = blockIndex
        self.blocks = blocks
        self.valueCategories = valueCategories
        self.labels = labels
        self.code = code
        self.categories = categories
        self.sections = list
        self.tableOffset = table
        self.ranges = ranges
        if verify { try verifyAll(split: verifySplit, checksums: false) }  // the checksums ran above
    }

    // MARK: Blocks

    /// First key of block `b` (< blockCount).
    @inline(__always)
    func firstKey(_ b: Int) -> UInt64 { blockIndex.firstKey(b) }

    /// The smallest and the largest number of the file's entries, nil when it has none: the
    /// first block's first key, and the last block read through to its end (one block decoded).
    package func numberBounds() throws(CallerIDError) -> (first: UInt64, last: UInt64)? {
        guard blockCount > 0 else { return nil }
        var cursor = self.cursor(from: firstKey(blockCount - 1))
        var last: UInt64? = nil
        while let n = try cursor.next({ $0.number }) { last = n }
        guard let last else { return nil }
        return (firstKey(0), last)
    }

    /// Index of the block that may hold `number` (the last whose first key is ≤ number), or -1.
    @inline(__always)
    func blockFor(_ number: UInt64) -> Int { blockIndex.block(for: number) }

    /// Block `b`'s record, its header checked against the section and the index.
    @inline(__always)
    func record(_ b: Int) throws(CallerIDError) -> BlockRecord {
        let start = blockIndex.recordOffset(b), end = blockIndex.recordOffset(b &+ 1)
        blocks.prefetch(start, end &- start)  // the lines of one record, fetched in parallel
        guard let r = BlockRecord(blocks, start: start, end: end, syncShift: syncShift, maxEntries: blockSize, maxKeyCodec: maxKeyCodec) else {
            throw CallerIDError.corrupt(path, "block \(b): record at \(start)..<\(end) is damaged")
        }
        return r
    }

    /// Block `b` decoded into `keys` and `ids` (room for `blockSize` each), with every check a
    /// reader needs: the record header, a first key above `previous` (the last key before it),
    /// keys strictly ascending and at most the largest number, every value code valid and every
    /// id below the value count. Returns the record and the bits of value codes it read.
    func decodeBlock(_ b: Int, after previous: UInt64, keys: inout FixedBuffer<UInt64>,
                     ids: inout FixedBuffer<UInt32>) throws(CallerIDError) -> (record: BlockRecord, codeBits: Int) {
        let r = try record(b)
        let first = firstKey(b)
        guard first > previous, let bits = r.decodeAllBits(firstKey: first, code: code, keys: &keys, ids: &ids) else {
            throw damagedBlock(b)
        }
        // Every decoded id is below the code's symbol count, which the open check made equal
        // to valueCount (BlockRecord.decodeAllBits): no id needs a check here.
        assert(code.symbolCount == valueCount)
        return (r, bits)
    }

    /// Verify's ``decodeBlock(_:after:keys:ids:)``: the same checks and the same damage
    /// refused, the value codes only measured (verify needs no id: each code's is one of the
    /// values by construction).
    func checkBlock(_ b: Int, after previous: UInt64, keys: inout FixedBuffer<UInt64>) throws(CallerIDError) -> (record: BlockRecord, codeBits: Int) {
        let r = try record(b)
        let first = firstKey(b)
        guard first > previous, let bits = r.checkAllBits(firstKey: first, code: code, keys: &keys) else { throw damagedBlock(b) }
        return (r, bits)
    }

    private func damagedBlock(_ b: Int) -> CallerIDError {
        CallerIDError.corrupt(path, "block \(b): keys out of order, beyond the largest number, or a damaged value code")
    }

    // MARK: Categories and labels

    @inline(__always)
    func categoryCode(_ value: Int) throws(CallerIDError) -> Int {
        guard let code = ValueCategories.code(valueCategories, value, categoryCount: categories.count) else {
            throw CallerIDError.corrupt(path, "value \(value) has unknown category code \(valueCategories.u8(value))")
        }
        return code
    }

    /// Where a lookup's answer is: the value id (−1 when absent), its category code, and its
    /// label — raw bytes in the mapping (hot) or the coded bytes to decode (cold).
    @usableFromInline
    struct Located {
        @usableFromInline var value: Int
        @usableFromInline var category: Int
        @usableFromInline var isHot: Bool
        @usableFromInline var bytes: UnsafeRawBufferPointer

        @usableFromInline init(value: Int, category: Int, isHot: Bool, bytes: UnsafeRawBufferPointer) {
            self.value = value
            self.category = category
            self.isHot = isHot
            self.bytes = bytes
        }
    }

    /// The non-generic part of a lookup (so that ``withEntry(_:_:)`` can be specialized in the
    /// caller's module without runtime generic metadata).
    @usableFromInline
    func locate(_ number: UInt64) throws(CallerIDError) -> Located {
        guard let v = try findValue(number) else { return Located(value: -1, category: 0, isHot: false, bytes: UnsafeRawBufferPointer(start: nil, count: 0)) }
        let code = try categoryCode(v)
        if v < labels.hotCount { return Located(value: v, category: code, isHot: true, bytes: try labels.hotLabel(v)) }
        return Located(value: v, category: code, isHot: false, bytes: try labels.coldCodes(v))
    }

    // MARK: Point lookup

    /// The entry for `number`, or nil when the database does not hold it.
    ///
    /// Throws only when the file is damaged in the part this lookup touched.
    public func lookup(_ number: UInt64) throws(CallerIDError) -> Entry? {
        try withEntry(number) { $0.entry }
    }

    /// Zero-copy lookup: calls `body` with a borrowed view of the entry when `number` is present.
    /// The label bytes come straight from the mapping (hot labels) or from memory on the stack
    /// (a cold label, decoded for this call); the view is valid only inside `body`. A lookup
    /// allocates no heap memory that outlives it.
    @inlinable
    public func withEntry<R>(_ number: UInt64, _ body: (EntryView) -> R) throws(CallerIDError) -> R? {
        let found = try locate(number)
        if found.value < 0 { return nil }
        if found.isHot {
            return body(EntryView(number: number, categoryCode: found.category, labelBytes: found.bytes, database: self, labelIsMapped: true))
        }
        return try withScratchBytes(labels.coldBufferBytes(found.bytes)) { (out) throws(CallerIDError) -> R in
            let n = try labels.decodeCold(found.bytes, found.value, into: out)
            return body(EntryView(number: number, categoryCode: found.category, labelBytes: out.bytes(upTo: n),
                                  database: self, labelIsMapped: false))
        }
    }

    /// True when `number` is present (no label access).
    public func contains(_ number: UInt64) throws(CallerIDError) -> Bool {
        try findValue(number) != nil
    }

    /// The value id of `number`, or nil when it is absent.
    @inline(__always)
    func findValue(_ number: UInt64) throws(CallerIDError) -> Int? {
        guard number &- 1 < Format.maxNumber else { return nil }  // 1 … maxNumber
        let b = blockFor(number)
        guard b >= 0 else { return nil }
        let r = try record(b)
        guard let i = r.find(number &- firstKey(b)) else { return nil }
        guard let v = r.value(at: i, code: code) else { throw CallerIDError.corrupt(path, "block \(b): value code of entry \(i) is damaged") }
        return v
    }

    // MARK: Enumeration

    /// A cursor over the entries in ascending order, starting at the first number ≥ `from`,
    /// optionally only those matching `filter`. Its heap use is fixed and does not grow with
    /// the file: the keys and value ids of one block (12 bytes per entry of a block, at most
    /// 12 KiB) plus a buffer for the longest cold label decoded so far (at most 64 KiB).
    public func cursor(from: UInt64 = 0, filter: CategoryFilter? = nil) -> EntryCursor {
        EntryCursor(database: self, from: from, filter: filter)
    }

    /// The entries in ascending order as a `Sequence` of ``Entry`` values.
    ///
    /// Iteration stops at a damaged block; the iterator's ``EntrySequence/Iterator/error`` then
    /// says why. Open with `verify: true`, or use ``cursor(from:filter:)``, to get errors thrown.
    public func entries(from: UInt64 = 0, filter: CategoryFilter? = nil) -> EntrySequence {
        EntrySequence(database: self, from: from, filter: filter)
    }

    /// Calls `body` for every entry in ascending order with a borrowed view; stops and
    /// rethrows if `body` throws, throws ``CallerIDError`` for damaged data.
    public func forEachEntry(from: UInt64 = 0, filter: CategoryFilter? = nil, _ body: (EntryView) throws -> Void) throws {
        var c = cursor(from: from, filter: filter)
        var failure: (any Error)? = nil
        try c.forEach { view in
            do { try body(view); return true } catch { failure = error; return false }
        }
        if let failure { throw failure }
    }
}

extension Database {
    /// How this database holds its file's bytes.
    public var mapping: DatabaseMapping { file.mode }

    /// What happened to the file at ``path`` since this database opened it: one `stat`, no
    /// read of the mapping. See "Replacing the file while it is open" above.
    public var fileChange: DatabaseFileChange { file.change() }

    /// Throws when further use of this database is unsafe because its file was modified in
    /// place, or a read of it faulted past the end of its cut-short file (and it is mapped, not
    /// copied). A replacement by `rename` or a removal is not an error: the open database still
    /// reads its own, intact file.
    ///
    /// - Throws: ``CallerIDError`` with code `fileChanged`.
    public func checkFile() throws(CallerIDError) {
        guard file.mode == .map else { return }
        if file.faulted {
            throw CallerIDError(.fileChanged, "\(path): the database file was cut short while open (a read past its new end faulted; what was read since it was opened is discarded); replace database files with rename, never by writing over them, and reopen")
        }
        guard file.change() == .modifiedInPlace else { return }
        throw CallerIDError(.fileChanged, "\(path): the database file was modified in place while open (size, mtime or ctime changed); replace database files with rename, never by writing over them, and reopen")
    }

    /// True once a read of this database's mapping faulted past its file's end and read zeros
    /// instead (the file was cut short in place; only with ``MappingGuard`` installed, which
    /// keeps such a read from killing the process). Answers read from the database may then be
    /// wrong: a caller discards what it read and stops using the database. One atomic load;
    /// ``checkFile()`` throws `fileChanged` from then on.
    package var mappingFaulted: Bool { file.faulted }
}
