/// Options for writing a database file.
public struct BuildOptions: Sendable {
    /// Entries per key block (1…4096). Smaller blocks search faster and compress worse.
    public var blockSize: Int = 128
    /// Labels per dictionary chunk (a power of two ≤ 4096), or nil to aim at ~1 KiB chunks.
    public var labelsPerChunk: Int? = nil
    /// LZ4HC level for label chunks (1…12). The most frequent labels' chunks (up to 64 KiB) are
    /// stored raw and serve as the LZ4 dictionary of every other chunk; a chunk is stored raw
    /// unless compression saves ≥ 12.5%. Builds with the portable codecs (Apple platforms,
    /// `--traits PortableCodecs`) use a greedy LZ4 encoder instead and ignore the level.
    public var compressionLevel: Int = 12
    /// When false, label chunks are always stored raw: larger files, no decoding on access.
    public var compressLabels: Bool = true
    /// At most this many bytes (0…65,536) of the most frequent labels' chunks are stored raw
    /// as the LZ4 dictionary of the other chunks.
    public var labelDictionaryBytes: Int = Format.maxDictionaryBytes
    /// The largest raw label chunk the writer will produce (the reader's limit; lowered by tests).
    var maxRawChunkBytes: Int = Format.maxRawChunkBytes

    public init() {}
}

/// What a build wrote.
public struct BuildSummary: Sendable, Equatable {
    /// Entries written (distinct numbers).
    public var entries: Int
    /// Records dropped because a later record had the same number.
    public var duplicatesMerged: Int
    /// Distinct (label, category) values in the dictionary.
    public var distinctLabels: Int
    /// Size of the file written.
    public var fileBytes: Int

    public init(entries: Int, duplicatesMerged: Int, distinctLabels: Int, fileBytes: Int) {
        self.entries = entries
        self.duplicatesMerged = duplicatesMerged
        self.distinctLabels = distinctLabels
        self.fileBytes = fileBytes
    }

    /// File bytes per entry (0 for an empty database).
    public var bytesPerEntry: Double { entries == 0 ? 0 : Double(fileBytes) / Double(entries) }
}

/// Collects records in any order and writes a database file.
///
/// Numbers may repeat: the last record added for a number wins, and
/// ``BuildSummary/duplicatesMerged`` counts the others. Memory use is about 12 bytes per
/// record plus the distinct labels.
///
/// ```swift
/// var builder = DatabaseBuilder()
/// try builder.add(79131234567, label: "Pizza Hut")
/// try builder.add(79990000000, label: "", category: .block)
/// let summary = try builder.write(to: "city.cid")
/// ```
public struct DatabaseBuilder {
    public var options: BuildOptions
    private var numbers: [UInt64] = []
    private var values: [UInt32] = []
    private var interner = LabelInterner()
    private var categories: [Category] = [.identify, .block]
    private var categoryCodes: [String: UInt8] = ["identify": 0, "block": 1]
    private var lastCategory: (category: Category, code: UInt8)?

    public init(options: BuildOptions = BuildOptions()) {
        self.options = options
    }

    /// Records added so far (duplicates included).
    public var count: Int { numbers.count }

    /// Adds a record. Throws for an invalid number, a label over 65,535 UTF-8 bytes or with a
    /// control character (U+0000–U+001F, U+007F), a category name used with two different
    /// actions, or a 257th category.
    public mutating func add(_ number: UInt64, label: String, category: Category = .identify) throws(CallerIDError) {
        var label = label
        let result = label.withUTF8 { bytes in
            Result { () throws(CallerIDError) in try add(number, utf8Label: UnsafeRawBufferPointer(bytes), category: category) }
        }
        try result.get()
    }

    /// Adds a record whose label is given as UTF-8 bytes (validated).
    mutating func add(_ number: UInt64, utf8Label: UnsafeRawBufferPointer, category: Category) throws(CallerIDError) {
        guard PhoneNumber.isValid(number) else {
            throw CallerIDError(.invalidNumber, "number \(number) is outside 1...\(PhoneNumber.maximum)")
        }
        guard utf8Label.count <= Format.maxLabelBytes else {
            throw CallerIDError(.invalidInput, "label is \(utf8Label.count) bytes; the limit is \(Format.maxLabelBytes)")
        }
        if let bad = utf8Label.firstIndex(where: { $0 < 0x20 || $0 == 0x7F }) {
            throw CallerIDError(.invalidInput, "label has control byte 0x\(String(utf8Label[bad], radix: 16)) at byte \(bad + 1); labels are one line of text")
        }
        let code = try categoryCode(category)
        let value = try interner.intern(category: code, bytes: utf8Label)
        numbers.append(number)
        values.append(value)
    }

    private mutating func categoryCode(_ category: Category) throws(CallerIDError) -> UInt8 {
        // Consecutive records mostly share a category: skip the dictionary then.
        if let last = lastCategory, last.category == category { return last.code }
        let code = try lookUpCategoryCode(category)
        lastCategory = (category, code)
        return code
    }

    private mutating func lookUpCategoryCode(_ category: Category) throws(CallerIDError) -> UInt8 {
        if let code = categoryCodes[category.name] {
            guard categories[Int(code)].action == category.action else {
                throw CallerIDError(.invalidInput, "category '\(category.name)' used with both actions identify and block")
            }
            return code
        }
        guard categories.count < 256 else {
            throw CallerIDError(.limitExceeded, "more than 256 categories")
        }
        let code = UInt8(categories.count)
        categories.append(category)
        categoryCodes[category.name] = code
        return code
    }

    /// Writes the database to `path` atomically (temporary file, fsync, rename).
    /// The builder keeps its records: calling it again writes the same bytes.
    ///
    /// A symbolic link is followed: its target gets the database and the link stays. A FIFO or
    /// a device (not a regular file) is written to in place, never replaced.
    public func write(to path: String) throws(CallerIDError) -> BuildSummary {
        try writeHashing(to: path).summary
    }

    /// ``write(to:)``, also returning the XXH3-64 (seed 0) of the bytes written, for callers
    /// that cannot read the output back (a pipe).
    package func writeHashing(to path: String) throws(CallerIDError) -> (summary: BuildSummary, xxh3: UInt64) {
        guard (1...Format.maxBlockSize).contains(options.blockSize) else {
            throw CallerIDError(.invalidInput, "blockSize must be 1...\(Format.maxBlockSize)")
        }
        guard (0...Format.maxDictionaryBytes).contains(options.labelDictionaryBytes) else {
            throw CallerIDError(.invalidInput, "labelDictionaryBytes must be 0...\(Format.maxDictionaryBytes)")
        }
        if let l = options.labelsPerChunk, l < 1 || l > (1 << Format.maxLabelsPerChunkShift) || l & (l - 1) != 0 {
            throw CallerIDError(.invalidInput, "labelsPerChunk must be a power of two in 1...4096")
        }
        let (image, summary) = try encode()
        var out = try AtomicFileWriter(path: path)
        try out.write(image)
        try out.commit()
        return (summary, Codec.xxh3(image))
    }

    /// The complete file image.
    func encode() throws(CallerIDError) -> ([UInt8], BuildSummary) {
        // 1. Sort by number (stable: the last record for a number stays last), then dedupe.
        var keys = numbers
        var vals = values
        radixSortPairs(keys: &keys, values: &vals)
        var w = 0
        for i in 0..<keys.count {
            if i + 1 < keys.count && keys[i + 1] == keys[i] { continue }
            keys[w] = keys[i]
            vals[w] = vals[i]
            w += 1
        }
        let duplicates = keys.count - w
        keys.removeSubrange(w...)
        vals.removeSubrange(w...)

        // 2. Dictionary: only values still referenced, most frequent first (ties: category, bytes).
        var freq = [Int](repeating: 0, count: interner.count)
        for v in vals { freq[Int(v)] += 1 }
        var order = (0..<interner.count).filter { freq[$0] > 0 }
        order.sort { a, b in
            if freq[a] != freq[b] { return freq[a] > freq[b] }
            if interner.categories[a] != interner.categories[b] { return interner.categories[a] < interner.categories[b] }
            return interner.bytes(a).lexicographicallyPrecedes(interner.bytes(b))
        }
        var remap = [UInt32](repeating: 0, count: interner.count)
        for (newID, old) in order.enumerated() { remap[old] = UInt32(newID) }
        for i in 0..<vals.count { vals[i] = remap[Int(vals[i])] }

        // 3. Key and value columns.
        let columns = try encodeBlocks(keys: keys, values: vals)

        // 4. Label chunks.
        let labels = try encodeLabels(order: order)
        let shift = labels.shift
        let dictionaryChunks = labels.dictionaryChunks

        // 5. Categories and per-value category codes.
        var catSection: [UInt8] = []
        catSection.appendLE(UInt32(categories.count))
        for c in categories {
            catSection.append(c.action.rawValue)
            catSection.append(UInt8(c.name.utf8.count))
            catSection.append(contentsOf: c.name.utf8)
        }
        let valueCats = order.map { interner.categories[$0] }

        // 6. Assemble: header, aligned sections, section table, footer.
        let sections: [(Format.Section, [UInt8])] = [
            (.categories, catSection),
            (.blockKeys, columns.blockKeys),
            (.blockDescriptors, columns.descriptors),
            (.keyData, columns.keyData),
            (.valueData, columns.valueData),
            (.valueCategories, valueCats),
            (.labelChunks, labels.table),
            (.labelData, labels.data),
        ]
        for (kind, bytes) in sections where bytes.count > Int(UInt32.max) {
            throw CallerIDError(.limitExceeded, "section \(kind) would be \(bytes.count) bytes; v1 allows 4 GiB")
        }
        var file = [UInt8](repeating: 0, count: Format.headerSize)
        var table: [UInt8] = []
        for (kind, bytes) in sections {
            file.padZero(toMultipleOf: Format.sectionAlignment)
            table.appendLE(kind.rawValue)
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
        header.appendLE(UInt32(options.blockSize))
        header.appendLE(UInt32(shift))
        header.appendLE(UInt64(tableOffset))
        header.appendLE(UInt32(sections.count))
        header.appendLE(UInt32(dictionaryChunks))
        header.appendLE(Codec.xxh3(header))
        file.replaceSubrange(0..<Format.headerSize, with: header)

        var footer: [UInt8] = []
        footer.appendLE(UInt64(fileSize))
        footer.appendLE(Codec.xxh3(table))
        footer.appendLE(UInt64(keys.count))
        footer.append(contentsOf: Format.footerMagic)
        file.append(contentsOf: footer)
        assert(file.count == fileSize)

        let summary = BuildSummary(entries: keys.count, duplicatesMerged: duplicates,
                                   distinctLabels: order.count, fileBytes: fileSize)
        return (file, summary)
    }

    // MARK: Columns

    private struct Columns {
        var blockKeys: [UInt8] = []
        var descriptors: [UInt8] = []
        var keyData: [UInt8] = []
        var valueData: [UInt8] = []
    }

    private func encodeBlocks(keys: [UInt64], values: [UInt32]) throws(CallerIDError) -> Columns {
        var c = Columns()
        let bs = options.blockSize
        var keyBits = BitWriter()
        var valueBits = BitWriter()
        var start = 0
        while start < keys.count {
            let n = min(bs, keys.count - start)
            let k = keys[start..<(start + n)]
            let v = values[start..<(start + n)]
            c.blockKeys.appendLE(k.first!)

            // Keys: key_i = base + ((i * slope) >> frac) + residual_i, residuals ≥ 0 packed in `width` bits.
            // A linear model through the first and last key; plain frame-of-reference when narrower.
            let model = KeyModel.best(k)
            let keyOffset = keyBits.alignToByte()
            for (i, key) in k.enumerated() {
                keyBits.write(model.residual(key, index: i), width: model.width)
            }

            // Values: constant, frame-of-reference or palette, whichever is smallest.
            let valueOffset = valueBits.alignToByte()
            let (mode, valueBase, valueWidth) = encodeValues(v, into: &valueBits)

            c.descriptors.appendLE(model.base)
            c.descriptors.appendLE(model.slope)
            guard keyOffset <= Int(UInt32.max), valueOffset <= Int(UInt32.max) else {
                throw CallerIDError(.limitExceeded, "key or value data would exceed 4 GiB; v1 sections are limited to 4 GiB")
            }
            c.descriptors.appendLE(UInt32(keyOffset))
            c.descriptors.appendLE(UInt32(valueOffset))
            c.descriptors.appendLE(valueBase)
            c.descriptors.append(UInt8(model.width))
            c.descriptors.append(UInt8(model.frac))
            c.descriptors.append(mode.rawValue)
            c.descriptors.append(UInt8(valueWidth))
            start += n
        }
        keyBits.alignToByte()
        valueBits.alignToByte()
        c.keyData = keyBits.bytes + [UInt8](repeating: 0, count: Format.packPadding)
        c.valueData = valueBits.bytes + [UInt8](repeating: 0, count: Format.packPadding)
        return c
    }

    private func encodeValues(_ v: ArraySlice<UInt32>, into bits: inout BitWriter) -> (Format.ValueMode, UInt32, Int) {
        let lo = v.min()!, hi = v.max()!
        if lo == hi { return (.constant, lo, 0) }
        let forWidth = Format.bitWidth(UInt64(hi - lo))
        let forBits = v.count * forWidth
        var palette = v.sorted()
        var distinct = 0
        for x in palette where distinct == 0 || palette[distinct - 1] != x {
            palette[distinct] = x
            distinct += 1
        }
        palette.removeSubrange(distinct...)
        let indexWidth = Format.bitWidth(UInt64(palette.count - 1))
        let paletteBits = 16 + palette.count * forWidth + 7 + v.count * indexWidth
        if paletteBits < forBits {
            bits.write(UInt64(palette.count), width: 16)
            for p in palette { bits.write(UInt64(p - lo), width: forWidth) }
            bits.alignToByte()
            for x in v {
                // Binary search: the palette is sorted and holds x.
                var a = 0, b = palette.count
                while a < b {
                    let m = (a + b) / 2
                    if palette[m] < x { a = m + 1 } else { b = m }
                }
                bits.write(UInt64(a), width: indexWidth)
            }
            return (.palette, lo, forWidth)
        }
        for x in v { bits.write(UInt64(x - lo), width: forWidth) }
        return (.frameOfReference, lo, forWidth)
    }

    // MARK: Labels

    /// Label chunks: `2^shift` labels each, most frequent first. The leading chunks, up to
    /// 64 KiB, are stored raw and form the LZ4 dictionary of all the others, so small chunks
    /// (fast to decode on a cache miss) still compress well.
    private func encodeLabels(order: [Int]) throws(CallerIDError) -> (table: [UInt8], data: [UInt8], shift: Int, dictionaryChunks: Int) {
        let shift: Int
        if let l = options.labelsPerChunk {
            shift = l.trailingZeroBitCount
        } else {
            var total = 0
            for id in order { total += interner.length(id) + 4 }
            let avg = max(1, order.isEmpty ? 1 : total / order.count)
            let target = max(1, 1024 / avg)
            shift = min(Format.maxLabelsPerChunkShift, Format.bitWidth(UInt64(target)) - 1)
        }
        let perChunk = 1 << shift
        var chunks: [[UInt8]] = []
        var first = 0
        while first < order.count {
            let ids = order[first..<min(order.count, first + perChunk)]
            var raw: [UInt8] = []
            var end: UInt32 = 0
            for id in ids {
                end += UInt32(interner.length(id))
                raw.appendLE(end)
            }
            for id in ids { raw.append(contentsOf: interner.bytes(id)) }
            guard raw.count <= options.maxRawChunkBytes else {
                throw CallerIDError(.limitExceeded, "a label chunk would hold \(raw.count) bytes; the limit is \(options.maxRawChunkBytes) (use fewer labelsPerChunk)")
            }
            chunks.append(raw)
            first += perChunk
        }
        var dictionaryChunks = 0
        var dictionary: [UInt8] = []
        if options.compressLabels {
            while dictionaryChunks < chunks.count,
                  dictionary.count + chunks[dictionaryChunks].count <= options.labelDictionaryBytes {
                dictionary.append(contentsOf: chunks[dictionaryChunks])
                dictionaryChunks += 1
            }
        }
        let compressor = options.compressLabels
            ? DictionaryCompressor(dictionary: dictionary, level: Int32(options.compressionLevel)) : nil
        var table: [UInt8] = []
        var data: [UInt8] = []
        for (c, raw) in chunks.enumerated() {
            let offset = data.count
            var flags: UInt32 = 0
            if c >= dictionaryChunks, let compressor,
               let packed = compressor.compress(raw, limit: raw.count - raw.count / 8 - 1) {
                data.append(contentsOf: packed)
                flags = Format.compressedFlag
            } else {
                data.append(contentsOf: raw)
            }
            guard data.count <= Int(UInt32.max) else {
                throw CallerIDError(.limitExceeded, "label data would exceed 4 GiB; v1 sections are limited to 4 GiB")
            }
            table.appendLE(UInt32(offset))
            table.appendLE(UInt32(data.count - offset))
            table.appendLE(UInt32(raw.count))
            table.appendLE(flags)
        }
        return (table, data, shift, dictionaryChunks)
    }
}

/// The linear key model of one block.
struct KeyModel {
    var base: UInt64 = 0
    var slope: UInt64 = 0
    var frac = 0
    var width = 0

    @inline(__always)
    func predict(_ i: Int) -> UInt64 { base &+ ((UInt64(i) &* slope) >> UInt64(frac)) }

    func residual(_ key: UInt64, index: Int) -> UInt64 { key &- predict(index) }

    static func best(_ keys: ArraySlice<UInt64>) -> KeyModel {
        let first = keys.first!, last = keys.last!
        let span = last - first
        var flat = KeyModel(base: first, slope: 0, frac: 0, width: Format.bitWidth(span))
        guard keys.count > 2 else { return flat }
        let n = UInt64(keys.count - 1)
        let frac = min(16, 63 - Format.bitWidth(span))
        let slope = (span << UInt64(frac)) / n
        var minRes: Int64 = 0, maxRes: Int64 = 0
        for (i, key) in keys.enumerated() {
            let pred = first &+ ((UInt64(i) &* slope) >> UInt64(frac))
            let r = Int64(bitPattern: key &- pred)
            minRes = min(minRes, r)
            maxRes = max(maxRes, r)
        }
        let width = Format.bitWidth(UInt64(maxRes - minRes))
        if width < flat.width {
            flat = KeyModel(base: first &+ UInt64(bitPattern: minRes), slope: slope, frac: frac, width: width)
        }
        return flat
    }
}

/// Interns (category, label bytes) pairs into dense ids with an open-addressing table.
struct LabelInterner {
    private var arena: [UInt8] = []
    private var starts: [UInt32] = []
    private(set) var categories: [UInt8] = []
    private var table = [UInt32](repeating: 0, count: 1024)   // id + 1; 0 = empty
    private var hashes: [UInt64] = []

    var count: Int { starts.count - (starts.isEmpty ? 0 : 1) }

    init() { starts = [0] }

    func length(_ id: Int) -> Int { Int(starts[id + 1] - starts[id]) }
    func bytes(_ id: Int) -> ArraySlice<UInt8> { arena[Int(starts[id])..<Int(starts[id + 1])] }

    mutating func intern(category: UInt8, bytes: UnsafeRawBufferPointer) throws(CallerIDError) -> UInt32 {
        let h = Codec.xxh3(bytes) &+ UInt64(category) &* 0x9E37_79B9_7F4A_7C15
        let mask = table.count - 1
        var slot = Int(truncatingIfNeeded: h) & mask
        while true {
            let e = table[slot]
            if e == 0 { break }
            let id = Int(e - 1)
            if hashes[id] == h && categories[id] == category && length(id) == bytes.count
                && arena.withUnsafeBytes({ a in memEqual(a, Int(starts[id]), bytes) }) {
                return UInt32(id)
            }
            slot = (slot + 1) & mask
        }
        guard validUTF8(bytes) else {
            throw CallerIDError(.invalidInput, "label is not valid UTF-8")
        }
        let id = count
        guard arena.count + bytes.count <= Int(UInt32.max) else {
            throw CallerIDError(.limitExceeded, "distinct labels exceed 4 GiB")
        }
        arena.append(contentsOf: bytes)
        starts.append(UInt32(arena.count))
        categories.append(category)
        hashes.append(h)
        table[slot] = UInt32(id + 1)
        if count * 2 > table.count { grow() }
        return UInt32(id)
    }

    private mutating func grow() {
        var newTable = [UInt32](repeating: 0, count: table.count * 2)
        let mask = newTable.count - 1
        for id in 0..<count {
            var slot = Int(truncatingIfNeeded: hashes[id]) & mask
            while newTable[slot] != 0 { slot = (slot + 1) & mask }
            newTable[slot] = UInt32(id + 1)
        }
        table = newTable
    }
}

@inline(__always)
private func memEqual(_ a: UnsafeRawBufferPointer, _ offset: Int, _ b: UnsafeRawBufferPointer) -> Bool {
    for i in 0..<b.count where a[offset + i] != b[i] { return false }
    return true
}

/// Strict UTF-8 validation (no overlongs, surrogates or values above U+10FFFF), the rule
/// labels are held to; public so ingestion code applies the same one.
public func isValidUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool { validUTF8(bytes) }

/// Strict UTF-8 validation (no overlongs, surrogates or values above U+10FFFF).
func validUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
    var i = 0
    let n = bytes.count
    while i < n {
        let b0 = bytes[i]
        if b0 < 0x80 { i += 1; continue }
        let len: Int
        var lo: UInt8 = 0x80, hi: UInt8 = 0xBF
        switch b0 {
        case 0xC2...0xDF: len = 2
        case 0xE0: len = 3; lo = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: len = 3
        case 0xED: len = 3; hi = 0x9F
        case 0xF0: len = 4; lo = 0x90
        case 0xF1...0xF3: len = 4
        case 0xF4: len = 4; hi = 0x8F
        default: return false
        }
        guard i + len <= n else { return false }
        let b1 = bytes[i + 1]
        guard b1 >= lo && b1 <= hi else { return false }
        for j in 2..<max(2, len) where bytes[i + j] & 0xC0 != 0x80 { return false }
        i += len
    }
    return true
}
