/// An entry of a database: a number, its label and its category.
public struct Entry: Hashable, Sendable, CustomStringConvertible {
    /// The E.164 number (country code and national number, digits only).
    public var number: UInt64
    /// The label shown for the number (may be empty, typically for blocked numbers).
    public var label: String
    public var category: Category

    public init(number: UInt64, label: String, category: Category = .identify) {
        self.number = number
        self.label = label
        self.category = category
    }

    public var description: String { "\(number)\t\(label)\t\(category.name)" }
}

/// A borrowed view of an entry: the label bytes point into the mapped file or into a decoded
/// chunk and are valid only inside the closure that receives the view. No allocation.
public struct EntryView {
    public let number: UInt64
    /// The label's UTF-8 bytes; do not let them escape the closure.
    public let labelBytes: UnsafeRawBufferPointer
    let categoryCode: Int
    // Unretained: a view never outlives the closure of the database call that made it.
    unowned(unsafe) let database: Database

    init(number: UInt64, categoryCode: Int, labelBytes: UnsafeRawBufferPointer, database: Database) {
        self.number = number
        self.categoryCode = categoryCode
        self.labelBytes = labelBytes
        self.database = database
    }

    public var category: Category { database.categories[categoryCode] }

    /// The category's position in ``Database/categories`` (no copy, no reference counting).
    public var categoryIndex: Int { categoryCode }

    /// The label as a `String` (allocates for labels over 15 bytes).
    public var label: String { String(decoding: labelBytes, as: UTF8.self) }

    /// A copy that owns its label.
    public var entry: Entry { Entry(number: number, label: label, category: category) }
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
    public var labelChunks: Int
    public var compressedLabelChunks: Int
    public var labelBytesRaw: Int
    public var fileBytes: Int
    public var sections: [SectionInfo]
    public var categories: [Category]
    public var bytesPerEntry: Double { entries == 0 ? 0 : Double(fileBytes) / Double(entries) }
}

/// A read-only database file, memory-mapped.
///
/// Opening validates the header, the section table and every offset and length the reader
/// will use (O(blocks)); nothing read from the file is trusted before that check.
/// ``verify()`` additionally checks every checksum and decodes everything.
///
/// A `Database` is safe to use from several threads at once: lookups share a lazily
/// decoded label cache published with atomics; each cursor has its own state.
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
public final class Database: @unchecked Sendable {
    // @unchecked: all stored state is immutable after init except `decoded`, whose slots are
    // published once with C11 atomics (see PublishOnceSlots).
    public let path: String
    public let categories: [Category]
    /// Number of entries (distinct numbers).
    public let count: Int
    let file: MappedFile
    let blockSize: Int
    let blockCount: Int
    let labelShift: Int
    let valueCount: Int
    let chunkCount: Int
    let blockKeys: ByteView
    let descriptors: ByteView
    let keyData: ByteView
    let valueData: ByteView
    let valueCategories: ByteView
    let chunkTable: ByteView
    let labelData: ByteView
    /// The raw leading label chunks that every compressed chunk was compressed against.
    let labelDictionary: ByteView
    let dictionaryChunks: Int
    /// The largest decoded size of a compressed label chunk (sizes a cursor's cache slots).
    let maxCompressedChunkRaw: Int
    let sections: [(kind: UInt32, offset: Int, length: Int, checksum: UInt64)]
    let tableOffset: Int
    let decoded: PublishOnceSlots

    /// Opens and validates `path`; with `verify: true` also runs ``verify()``.
    ///
    /// - Parameters:
    ///   - mapping: ``DatabaseMapping/map`` (default) maps the file; ``DatabaseMapping/copy``
    ///     reads it into memory, so that later changes to the file cannot affect this database.
    /// - Throws: ``CallerIDError`` with code `fileNotFound`, `io`, `corrupt` or
    ///   `unsupportedVersion`, and a message naming the file and the damaged part.
    public init(path: String, verify: Bool = false, mapping: DatabaseMapping = .map) throws(CallerIDError) {
        self.path = path
        file = try MappedFile(path: path, mode: mapping)
        let b = file.bytes
        func bad(_ what: String) -> CallerIDError { CallerIDError.corrupt(path, what) }

        // Header.
        guard b.count >= Format.headerSize + Format.footerSize else {
            throw bad(b.count == 0 ? "the file is empty" : "the file is \(b.count) bytes, too short for a header and footer (truncated?)")
        }
        guard Array(b.bytes(0, 8)) == Format.magic else {
            throw bad("bad magic: not a CallerID database")
        }
        let major = b.u16(8)
        guard major == Format.major else {
            throw CallerIDError(.unsupportedVersion, "\(path): format version \(major).\(b.u16(10)); this reader reads version \(Format.major).x")
        }
        guard Codec.xxh3(b.bytes(0, 56)) == b.u64(56) else { throw bad("header checksum mismatch (bytes 0-55)") }
        guard b.u32(12) == UInt32(Format.headerSize) else { throw bad("header size field is \(b.u32(12))") }
        guard b.u64(16) == UInt64(b.count) else {
            throw bad("the header says \(b.u64(16)) bytes but the file has \(b.count) (truncated or extended)")
        }
        let entries = b.u64(24)
        let blockSize = Int(b.u32(32))
        let shift = Int(b.u32(36))
        let tableOffset = b.u64(40)
        let sectionCount = Int(b.u32(48))
        let dictionaryChunks = Int(b.u32(52))
        guard (1...Format.maxBlockSize).contains(blockSize) else { throw bad("block size \(blockSize) outside 1...\(Format.maxBlockSize)") }
        guard shift <= Format.maxLabelsPerChunkShift else { throw bad("labels-per-chunk shift \(shift) above \(Format.maxLabelsPerChunkShift)") }
        // Every block costs 40 bytes of index and descriptor, so a file of n bytes holds at most
        // n / 40 blocks (a run of consecutive numbers can take less than a byte per entry).
        guard entries <= UInt64(b.count / 40 + 1) * UInt64(blockSize) else {
            throw bad("entry count \(entries) is impossible for a \(b.count)-byte file")
        }

        // Footer and section table.
        let footer = b.count - Format.footerSize
        guard Array(b.bytes(footer + 24, 8)) == Format.footerMagic else { throw bad("footer magic missing at offset \(footer + 24) (truncated?)") }
        guard b.u64(footer) == UInt64(b.count), b.u64(footer + 16) == entries else { throw bad("footer disagrees with the header") }
        guard (1...Format.maxSections).contains(sectionCount) else { throw bad("section count \(sectionCount) outside 1...\(Format.maxSections)") }
        // Written as a subtraction: a hostile tableOffset near 2^64 must not overflow.
        guard tableOffset >= UInt64(Format.headerSize), tableOffset <= UInt64(footer),
              UInt64(footer) - tableOffset == UInt64(sectionCount * Format.sectionEntrySize) else {
            throw bad("section table offset \(tableOffset) does not end at the footer")
        }
        let table = Int(tableOffset)
        guard Codec.xxh3(b.bytes(table, sectionCount * Format.sectionEntrySize)) == b.u64(footer + 8) else {
            throw bad("section table checksum mismatch (offset \(table))")
        }
        var found: [Format.Section: ByteView] = [:]
        var list: [(kind: UInt32, offset: Int, length: Int, checksum: UInt64)] = []
        for i in 0..<sectionCount {
            let e = table + i * Format.sectionEntrySize
            let kind = b.u32(e), offset = b.u64(e + 8), length = b.u64(e + 16)
            guard offset >= UInt64(Format.headerSize), offset <= tableOffset, length <= tableOffset - offset,
                  let view = b.slice(offset, length) else {
                throw bad("section \(i) (kind \(kind)) lies outside the data area: offset \(offset), length \(length)")
            }
            if let known = Format.Section(rawValue: kind) {
                guard found[known] == nil else { throw bad("section '\(known)' appears twice") }
                found[known] = view
            }
            list.append((kind, Int(offset), Int(length), b.u64(e + 24)))
        }
        // Empty sections sort before a section at the same offset, so they never "overlap".
        let byOffset = list.sorted { ($0.offset, $0.length) < ($1.offset, $1.length) }
        for (x, y) in zip(byOffset, byOffset.dropFirst()) where x.offset + x.length > y.offset {
            throw bad("sections of kinds \(x.kind) and \(y.kind) overlap at offset \(y.offset)")
        }
        func section(_ s: Format.Section) throws(CallerIDError) -> ByteView {
            guard let v = found[s] else { throw bad("section '\(s)' is missing") }
            return v
        }
        let blockCount = Int((entries + UInt64(blockSize) - 1) / UInt64(blockSize))
        let blockKeys = try section(.blockKeys)
        let descriptors = try section(.blockDescriptors)
        let keyData = try section(.keyData)
        let valueData = try section(.valueData)
        let valueCategories = try section(.valueCategories)
        let chunkTable = try section(.labelChunks)
        let labelData = try section(.labelData)
        guard blockKeys.count == blockCount * 8 else { throw bad("block index is \(blockKeys.count) bytes; \(blockCount) blocks need \(blockCount * 8)") }
        guard descriptors.count == blockCount * Format.descriptorSize else {
            throw bad("block descriptors are \(descriptors.count) bytes; \(blockCount) blocks need \(blockCount * Format.descriptorSize)")
        }
        guard keyData.count >= Format.packPadding, valueData.count >= Format.packPadding else { throw bad("key or value data shorter than its padding") }
        let valueCount = valueCategories.count
        guard entries == 0 || valueCount > 0 else { throw bad("entries without any label value") }
        let chunkCount = (valueCount + (1 << shift) - 1) >> shift
        guard chunkTable.count == chunkCount * Format.chunkEntrySize else {
            throw bad("label chunk table is \(chunkTable.count) bytes; \(valueCount) labels need \(chunkCount) chunks")
        }
        if verify {
            try Database.verifyChecksums(b, sections: list, tableOffset: table, path: path)
        }
        let categories = try Database.parseCategories(try section(.categories), path: path)
        // The dictionary: chunks 0..<dictionaryChunks, raw and contiguous from offset 0, ≤ 64 KiB.
        guard dictionaryChunks <= chunkCount else { throw bad("\(dictionaryChunks) dictionary chunks but only \(chunkCount) chunks") }
        var dictionaryBytes = 0
        for c in 0..<dictionaryChunks {
            let e = c * Format.chunkEntrySize
            guard chunkTable.u32(e) == UInt32(dictionaryBytes), chunkTable.u32(e + 12) == 0,
                  chunkTable.u32(e + 4) == chunkTable.u32(e + 8) else {
                throw bad("label dictionary chunk \(c) is not raw and contiguous")
            }
            dictionaryBytes += Int(chunkTable.u32(e + 4))
            guard dictionaryBytes <= Format.maxDictionaryBytes else { throw bad("label dictionary exceeds 64 KiB") }
        }
        guard let labelDictionary = labelData.slice(0, dictionaryBytes) else { throw bad("label dictionary runs past its section") }

        self.count = Int(entries)
        self.blockSize = blockSize
        self.blockCount = blockCount
        self.labelShift = shift
        self.valueCount = valueCount
        self.chunkCount = chunkCount
        self.blockKeys = blockKeys
        self.descriptors = descriptors
        self.keyData = keyData
        self.valueData = valueData
        self.valueCategories = valueCategories
        self.chunkTable = chunkTable
        self.labelData = labelData
        self.labelDictionary = labelDictionary
        self.dictionaryChunks = dictionaryChunks
        var maxRaw = 0
        for c in 0..<chunkCount where chunkTable.u32(c * Format.chunkEntrySize + 12) != 0 {
            maxRaw = max(maxRaw, Int(chunkTable.u32(c * Format.chunkEntrySize + 8)))
        }
        self.maxCompressedChunkRaw = maxRaw
        self.categories = categories
        self.sections = list
        self.tableOffset = table
        self.decoded = PublishOnceSlots(count: chunkCount)

        try validateBlocks()
        try validateChunks()
        if verify { try verifyContent() }
    }

    private static func parseCategories(_ s: ByteView, path: String) throws(CallerIDError) -> [Category] {
        func bad(_ what: String) -> CallerIDError { CallerIDError.corrupt(path, "categories: \(what)") }
        guard let n = s.readU32(0), (1...256).contains(n) else { throw bad("count outside 1...256") }
        var result: [Category] = []
        var names = Set<String>()
        var p = 4
        for _ in 0..<n {
            guard let actionByte = s.readU8(p), let action = CategoryAction(rawValue: actionByte),
                  let len = s.readU8(p + 1), let nameBytes = s.slice(p + 2, Int(len)) else {
                throw bad("entry at offset \(p) is malformed")
            }
            let name = String(decoding: nameBytes.buffer, as: UTF8.self)
            guard let c = try? Category(name, action: action), names.insert(name).inserted else {
                throw bad("invalid or repeated name at offset \(p)")
            }
            result.append(c)
            p += 2 + Int(len)
        }
        guard p == s.count else { throw bad("\(s.count - p) unexpected trailing bytes") }
        return result
    }

    /// Checks every block descriptor so that the unchecked reads of lookups and cursors stay in bounds.
    private func validateBlocks() throws(CallerIDError) {
        var previous: UInt64 = 0
        for blk in 0..<blockCount {
            func bad(_ what: String) -> CallerIDError { CallerIDError.corrupt(path, "block \(blk): \(what)") }
            let first = blockKeys.u64(blk * 8)
            guard first > previous, first <= Format.maxNumber else { throw bad("first key \(first) is not ascending or out of range") }
            previous = first
            let n = entriesIn(blk)
            let d = blk * Format.descriptorSize
            let keyOffset = Int(descriptors.u32(d + 16))
            let valueOffset = Int(descriptors.u32(d + 20))
            let keyWidth = Int(descriptors.u8(d + 28))
            let frac = Int(descriptors.u8(d + 29))
            let mode = descriptors.u8(d + 30)
            let valueWidth = Int(descriptors.u8(d + 31))
            guard keyWidth <= Format.maxKeyWidth, frac <= 16 else { throw bad("key width \(keyWidth) or fraction \(frac) out of range") }
            if keyWidth > 0 {
                guard keyOffset + ((n - 1) * keyWidth) / 8 + 8 <= keyData.count else { throw bad("key data at \(keyOffset) runs past its section") }
            }
            guard valueWidth <= Format.maxValueWidth, let m = Format.ValueMode(rawValue: mode) else {
                throw bad("value mode \(mode) or width \(valueWidth) invalid")
            }
            switch m {
            case .constant:
                break
            case .frameOfReference:
                guard valueOffset + ((n - 1) * valueWidth) / 8 + 8 <= valueData.count else { throw bad("value data at \(valueOffset) runs past its section") }
            case .palette:
                guard let p = valueData.readU16(valueOffset).map(Int.init), p >= 2, p <= n else { throw bad("palette size invalid") }
                let indexStart = valueOffset + 2 + (p * valueWidth + 7) / 8
                let indexWidth = Format.bitWidth(UInt64(p - 1))
                guard valueOffset + 2 + ((p - 1) * valueWidth) / 8 + 8 <= valueData.count,
                      indexStart + ((n - 1) * indexWidth) / 8 + 8 <= valueData.count else {
                    throw bad("palette at \(valueOffset) runs past its section")
                }
            }
        }
    }

    private func validateChunks() throws(CallerIDError) {
        // Decompression bombs: LZ4 never expands a block more than 255 times, so a compressed
        // chunk claiming more cannot decode; and chunks may share stored bytes, so the total
        // they may decode to is bounded too (a valid file, whose chunks do not overlap, always
        // stays under it). Heap for decoded chunks is then at most 255 × the label data.
        var compressedRaw = 0
        for c in 0..<chunkCount {
            let e = c * Format.chunkEntrySize
            let offset = Int(chunkTable.u32(e)), stored = Int(chunkTable.u32(e + 4))
            let raw = Int(chunkTable.u32(e + 8)), flags = chunkTable.u32(e + 12)
            let labels = labelsIn(chunk: c)
            guard labelData.slice(offset, stored) != nil, raw <= Format.maxRawChunkBytes, raw >= 4 * labels,
                  flags == 0 || flags == Format.compressedFlag, flags != 0 || stored == raw,
                  flags == 0 || stored > 0 else {
                throw CallerIDError.corrupt(path, "label chunk \(c): offset \(offset), stored \(stored), raw \(raw), flags \(flags) are inconsistent")
            }
            if flags != 0 {
                guard raw <= Format.maxLZ4Ratio * stored else {
                    throw CallerIDError.corrupt(path, "label chunk \(c): \(stored) compressed bytes cannot decode to \(raw) (LZ4 expands at most \(Format.maxLZ4Ratio)×)")
                }
                compressedRaw += raw
                guard compressedRaw <= Format.maxLZ4Ratio * labelData.count else {
                    throw CallerIDError.corrupt(path, "label chunk \(c): compressed chunks decode to more than \(Format.maxLZ4Ratio)× the \(labelData.count) bytes of label data (chunks overlap)")
                }
            }
        }
    }

    // MARK: Geometry

    @inline(__always)
    func entriesIn(_ block: Int) -> Int { block == blockCount - 1 ? count - block * blockSize : blockSize }

    @inline(__always)
    func labelsIn(chunk c: Int) -> Int { min(1 << labelShift, valueCount - (c << labelShift)) }

    // MARK: Keys and values of a block

    struct BlockReader {
        let base: UInt64, slope: UInt64, frac: UInt64
        let keyBit: Int, keyWidth: Int
        let mode: UInt8, valueBase: UInt32, valueWidth: Int
        let valueBit: Int, indexBit: Int, indexWidth: Int, paletteSize: Int
        let n: Int
    }

    @inline(__always)
    func blockReader(_ blk: Int) -> BlockReader {
        let d = blk * Format.descriptorSize
        let mode = descriptors.u8(d + 30)
        let valueOffset = Int(descriptors.u32(d + 20))
        let valueWidth = Int(descriptors.u8(d + 31))
        var p = 0, indexBit = 0, indexWidth = 0, valueBit = valueOffset * 8
        if mode == Format.ValueMode.palette.rawValue {
            p = Int(valueData.u16(valueOffset))
            valueBit = (valueOffset + 2) * 8
            indexBit = (valueOffset + 2 + (p * valueWidth + 7) / 8) * 8
            indexWidth = Format.bitWidth(UInt64(p - 1))
        }
        return BlockReader(base: descriptors.u64(d), slope: descriptors.u64(d + 8), frac: UInt64(descriptors.u8(d + 29)),
                           keyBit: Int(descriptors.u32(d + 16)) * 8, keyWidth: Int(descriptors.u8(d + 28)),
                           mode: mode, valueBase: descriptors.u32(d + 24), valueWidth: valueWidth,
                           valueBit: valueBit, indexBit: indexBit, indexWidth: indexWidth, paletteSize: p, n: entriesIn(blk))
    }

    @inline(__always)
    func key(_ r: BlockReader, _ i: Int) -> UInt64 {
        let residual = r.keyWidth == 0 ? 0 : keyData.bits(at: r.keyBit &+ i &* r.keyWidth, width: r.keyWidth)
        return r.base &+ ((UInt64(truncatingIfNeeded: i) &* r.slope) &>> r.frac) &+ residual
    }

    /// The value id of entry `i`; throws when the file names a value that does not exist.
    @inline(__always)
    func value(_ r: BlockReader, _ i: Int) throws(CallerIDError) -> Int {
        var v: UInt32
        switch r.mode {
        case 0:
            v = r.valueBase
        case 1:
            v = r.valueBase &+ UInt32(truncatingIfNeeded: valueData.bits(at: r.valueBit &+ i &* r.valueWidth, width: r.valueWidth))
        default:
            let idx = Int(valueData.bits(at: r.indexBit &+ i &* r.indexWidth, width: r.indexWidth))
            guard idx < r.paletteSize else { throw CallerIDError.corrupt(path, "palette index \(idx) out of range") }
            v = r.valueBase &+ UInt32(truncatingIfNeeded: valueData.bits(at: r.valueBit &+ idx &* r.valueWidth, width: r.valueWidth))
        }
        guard Int(v) < valueCount else { throw CallerIDError.corrupt(path, "value id \(v) beyond the \(valueCount) labels") }
        return Int(v)
    }

    /// Index of the block that may hold `number` (the last whose first key is ≤ number), or -1.
    @inline(__always)
    func blockFor(_ number: UInt64) -> Int {
        var lo = 0, hi = blockCount
        while lo < hi {
            let mid = (lo &+ hi) &>> 1
            if blockKeys.u64(mid &* 8) <= number { lo = mid &+ 1 } else { hi = mid }
        }
        return lo - 1
    }

    /// Position of the first entry of block reader `r` whose key is ≥ number.
    @inline(__always)
    func lowerBound(_ r: BlockReader, _ number: UInt64) -> Int {
        var lo = 0, hi = r.n
        while lo < hi {
            let mid = (lo &+ hi) &>> 1
            if key(r, mid) < number { lo = mid &+ 1 } else { hi = mid }
        }
        return lo
    }

    // MARK: Categories and labels

    @inline(__always)
    func categoryCode(_ value: Int) throws(CallerIDError) -> Int {
        let code = Int(valueCategories.u8(value))
        guard code < categories.count else { throw CallerIDError.corrupt(path, "label \(value) has unknown category code \(code)") }
        return code
    }

    /// The raw bytes of label chunk `c`: from the mapping, or decoded once into the shared cache.
    func sharedChunk(_ c: Int) throws(CallerIDError) -> ByteView {
        let e = c * Format.chunkEntrySize
        let offset = Int(chunkTable.u32(e)), stored = Int(chunkTable.u32(e + 4)), raw = Int(chunkTable.u32(e + 8))
        if chunkTable.u32(e + 12) == 0 {
            return ByteView(base: labelData.base + offset, count: stored)
        }
        if let p = decoded.load(c) { return ByteView(base: p, count: raw) }
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: max(raw, 1), alignment: 8)
        guard Codec.decompress(labelData.bytes(offset, stored), into: UnsafeMutableRawBufferPointer(start: buffer, count: raw),
                               dictionary: labelDictionary.buffer) else {
            buffer.deallocate()
            throw CallerIDError.corrupt(path, "label chunk \(c) does not decompress to \(raw) bytes")
        }
        return ByteView(base: decoded.publish(c, buffer), count: raw)
    }

    /// The bytes of label `j` within decoded chunk `chunk` holding `labels` labels.
    @inline(__always)
    func label(in chunk: ByteView, index j: Int, labels: Int) throws(CallerIDError) -> UnsafeRawBufferPointer {
        let end = Int(chunk.u32(j &* 4))
        let start = j == 0 ? 0 : Int(chunk.u32((j &- 1) &* 4))
        let area = labels &* 4
        guard start <= end, end <= chunk.count &- area else {
            throw CallerIDError.corrupt(path, "label offsets \(start)..<\(end) outside their chunk")
        }
        return chunk.bytes(area &+ start, end &- start)
    }

    @inline(__always)
    func sharedLabel(_ value: Int) throws(CallerIDError) -> UnsafeRawBufferPointer {
        let c = value &>> labelShift
        return try label(in: try sharedChunk(c), index: value & ((1 << labelShift) - 1), labels: labelsIn(chunk: c))
    }

    // MARK: Point lookup

    /// The entry for `number`, or nil when the database does not hold it.
    ///
    /// Throws only when the file is damaged in the part this lookup touched.
    public func lookup(_ number: UInt64) throws(CallerIDError) -> Entry? {
        try withEntry(number) { $0.entry }
    }

    /// Zero-copy lookup: calls `body` with a borrowed view of the entry when `number` is present.
    /// The label bytes come straight from the mapping (or the shared decoded-chunk cache).
    @inline(__always)
    public func withEntry<R>(_ number: UInt64, _ body: (EntryView) -> R) throws(CallerIDError) -> R? {
        guard let v = try findValue(number) else { return nil }
        let code = try categoryCode(v)
        return body(EntryView(number: number, categoryCode: code, labelBytes: try sharedLabel(v), database: self))
    }

    /// True when `number` is present (no label access).
    public func contains(_ number: UInt64) throws(CallerIDError) -> Bool {
        try findValue(number) != nil
    }

    @inline(__always)
    func findValue(_ number: UInt64) throws(CallerIDError) -> Int? {
        let blk = blockFor(number)
        guard blk >= 0 else { return nil }
        let r = blockReader(blk)
        let i = lowerBound(r, number)
        guard i < r.n, key(r, i) == number else { return nil }
        return try value(r, i)
    }

    // MARK: Enumeration

    /// A cursor over the entries in ascending order, starting at the first number ≥ `from`,
    /// optionally only those matching `filter`. Heap use is fixed when it is created and does
    /// not grow with the file: one block of keys and values (16 bytes per entry of a block)
    /// plus a decoded-label cache of at most `labelCacheBytes` (one chunk at least, about
    /// 1 KiB). A merge over many files can pass a small cache per cursor.
    public func cursor(from: UInt64 = 0, filter: CategoryFilter? = nil, labelCacheBytes: Int = 40 * 1024) -> EntryCursor {
        EntryCursor(database: self, from: from, filter: filter, labelCacheBytes: labelCacheBytes)
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
    /// place (and it is mapped, not copied). A replacement by `rename` or a removal is not an
    /// error: the open database still reads its own, intact file.
    ///
    /// - Throws: ``CallerIDError`` with code `fileChanged`.
    public func checkFile() throws(CallerIDError) {
        guard file.mode == .map, file.change() == .modifiedInPlace else { return }
        throw CallerIDError(.fileChanged, "\(path): the database file was modified in place while open (size, mtime or ctime changed); replace database files with rename, never by writing over them, and reopen")
    }
}
