// Format 2.0 prototype: the reader. Every offset and length read from the file is checked
// against the bytes it points into before use; a check that fails throws `corrupt`.
// Open is O(1) in the number of blocks: the header, the section directory, the code table,
// the categories and the first/last entries of the small tables; each block record is
// checked when it is used.

/// The prototype reader (internal API for tests and the benchmark; not the product).
@_spi(Format2Prototype) public final class Format2Reader: @unchecked Sendable {
    // @unchecked: immutable after init; `owner` keeps the bytes alive.
    private let owner: AnyObject
    let bytes: ByteView
    let path: String
    public let count: Int
    public let categories: [Category]
    let blockCount: Int
    let valueCount: Int
    let hotCount: Int
    let syncShift: Int
    let code: Format2Code
    let summary: ByteView
    let blockKeys: ByteView
    let blockOffsets: ByteView
    let blocks: ByteView
    let valueCategories: ByteView
    let hotOffsets: ByteView
    let hotBytes: ByteView
    let chunkTable: ByteView
    let coldData: ByteView
    let dictionary: ByteView
    let chunkCount: Int

    /// Maps the file at `path`.
    public convenience init(path: String) throws(CallerIDError) {
        let file = try MappedFile(path: path)
        try self.init(owner: file, bytes: file.bytes, path: path)
    }

    /// Reads a file image held in memory (copied).
    public convenience init(bytes image: [UInt8]) throws(CallerIDError) {
        let storage = OwnedBytes(image)
        try self.init(owner: storage, bytes: storage.view, path: "<memory>")
    }

    private init(owner: AnyObject, bytes: ByteView, path: String) throws(CallerIDError) {
        self.owner = owner
        self.bytes = bytes
        self.path = path
        func bad(_ what: String) -> CallerIDError { CallerIDError.corrupt(path, what) }
        guard bytes.count >= 64, Array(bytes.bytes(0, 8)) == Format2.magic else { throw bad("not a format 2.0 prototype file (magic)") }
        guard bytes.u16(8) == Format2.major else {
            throw CallerIDError(.unsupportedVersion, "\(path): unsupported version \(bytes.u16(8)).\(bytes.u16(10))")
        }
        let sectionCount = Int(bytes.u8(45))
        let headSize = Int(bytes.u32(12))
        guard sectionCount == Format2Section.allCases.count, headSize == 64 + 16 * sectionCount, headSize <= bytes.count else {
            throw bad("header size or section count")
        }
        guard bytes.u64(16) == UInt64(bytes.count) else { throw bad("file size \(bytes.u64(16)) but the file has \(bytes.count) bytes") }
        let entries = bytes.u64(24)
        blockCount = Int(bytes.u32(32))
        valueCount = Int(bytes.u32(36))
        hotCount = Int(bytes.u32(40))
        syncShift = Int(bytes.u8(44))
        guard syncShift <= 12 else { throw bad("sync interval") }
        // Every block holds 1…4096 entries and costs ≥ 20 bytes of index and record.
        guard entries <= UInt64(blockCount) * UInt64(Format2.maxBlockEntries), UInt64(blockCount) <= entries,
              blockCount <= bytes.count / 20 else { throw bad("entry or block count") }
        count = Int(entries)
        guard hotCount <= valueCount, valueCount <= bytes.count, (count == 0) == (valueCount == 0) else { throw bad("value counts") }
        var sections: [ByteView] = []
        for k in 0..<sectionCount {
            guard let s = bytes.slice(bytes.u64(64 + 16 * k), bytes.u64(72 + 16 * k)), s.base >= bytes.base + headSize || s.count == 0 else {
                throw bad("section \(k) outside the file")
            }
            sections.append(s)
        }
        func section(_ s: Format2Section) -> ByteView { sections[s.rawValue] }
        summary = section(.summary)
        blockKeys = section(.blockKeys)
        blockOffsets = section(.blockOffsets)
        blocks = section(.blocks)
        valueCategories = section(.valueCategories)
        hotOffsets = section(.hotOffsets)
        hotBytes = section(.hotBytes)
        chunkTable = section(.chunkTable)
        coldData = section(.coldData)
        let summaryCount = (blockCount + Format2.summaryStride - 1) / Format2.summaryStride
        guard summary.count == 8 * summaryCount, blockKeys.count == 8 * blockCount,
              blockOffsets.count == 4 * (blockCount + 1), valueCategories.count == valueCount,
              hotOffsets.count == 4 * (hotCount + 1), chunkTable.count % 12 == 0, chunkTable.count >= 12
        else { throw bad("section sizes") }
        chunkCount = chunkTable.count / 12 - 1
        guard blocks.count >= 8, Int(blockOffsets.u32(4 * blockCount)) <= blocks.count - 8 else { throw bad("block section end") }
        guard hotOffsets.u32(0) == 0, Int(hotOffsets.u32(4 * hotCount)) == hotBytes.count else { throw bad("hot label offsets") }
        guard chunkTable.u32(0) == UInt32(chunkCount == 0 ? valueCount : hotCount),
              chunkTable.u32(12 * chunkCount) == UInt32(valueCount), Int(chunkTable.u32(12 * chunkCount + 4)) == coldData.count,
              chunkCount <= valueCount - hotCount
        else { throw bad("cold chunk table") }
        dictionary = hotBytes.slice(max(0, hotBytes.count - 65_536), min(hotBytes.count, 65_536))!
        let countsView = section(.codeCounts)
        guard countsView.count == 4 * (Format2.maxCodeLength + 1) else { throw bad("code table size") }
        let counts = (0...Format2.maxCodeLength).map { Int(countsView.u32(4 * $0)) }
        guard let code = Format2Code(counts: counts, symbols: valueCount) else { throw bad("code table is not a prefix code") }
        self.code = code
        // Categories.
        let names = section(.categories)
        guard let n = names.readU16(0), (1...256).contains(n) else { throw bad("category count") }
        var at = 2
        var cats: [Category] = []
        for _ in 0..<n {
            guard let action = names.readU8(at), let len = names.readU8(at + 1), let nameBytes = names.slice(at + 2, Int(len)),
                  let a = CategoryAction(rawValue: action),
                  let c = try? Category(String(decoding: nameBytes.buffer, as: UTF8.self), action: a)
            else { throw bad("category record") }
            cats.append(c)
            at += 2 + Int(len)
        }
        guard at == names.count else { throw bad("category section length") }
        categories = cats
    }

    // MARK: Lookup

    /// The value id of `number`, or nil when it is absent.
    public func valueID(_ number: UInt64) throws(CallerIDError) -> Int? {
        guard count > 0, number >= 1, number <= PhoneNumber.maximum else { return nil }
        // Summary (stays in L1), then one run of ≤ 64 block keys; both branchless.
        let s = summary.count / 8
        var base = 0, n = s
        while n > 1 {
            let half = n &>> 1
            base = summary.u64(8 &* (base &+ half)) <= number ? base &+ half : base
            n &-= half
        }
        guard summary.u64(8 &* base) <= number else { return nil }
        let lo = base &* Format2.summaryStride
        var b = lo
        n = min(Format2.summaryStride, blockCount &- lo)
        while n > 1 {
            let half = n &>> 1
            b = blockKeys.u64(8 &* (b &+ half)) <= number ? b &+ half : b
            n &-= half
        }
        let firstKey = blockKeys.u64(8 &* b)
        guard firstKey <= number else { return nil }
        let block = try record(b)
        guard let i = try block.find(number &- firstKey, path: path) else { return nil }
        return try block.value(at: i, code: code, path: path)
    }

    /// Calls `body` with the label bytes and category code of `number`.
    public func withEntry<R>(_ number: UInt64, cache: inout Format2LabelCache,
                             _ body: (UnsafeRawBufferPointer, Int) -> R) throws(CallerIDError) -> R? {
        guard let id = try valueID(number) else { return nil }
        return body(try label(id, cache: &cache), Int(valueCategories.u8(id)))
    }

    /// The label of value `id` (< valueCount): raw for hot values, from `cache` for cold ones.
    @inline(__always)
    func label(_ id: Int, cache: inout Format2LabelCache) throws(CallerIDError) -> UnsafeRawBufferPointer {
        if id < hotCount {
            let a = Int(hotOffsets.u32(4 &* id)), e = Int(hotOffsets.u32(4 &* id &+ 4))
            guard a <= e, e <= hotBytes.count else { throw CallerIDError.corrupt(path, "hot label offsets of value \(id)") }
            return hotBytes.bytes(a, e &- a)
        }
        return try cache.label(id, reader: self)
    }

    /// Block `b`'s record, with its header checked against the section.
    @inline(__always)
    func record(_ b: Int) throws(CallerIDError) -> Format2Block {
        let start = Int(blockOffsets.u32(4 &* b)), end = Int(blockOffsets.u32(4 &* b &+ 4))
        // end ≤ blocks.count − 8 was checked for the last offset only: check this one.
        guard start < end, end <= blocks.count &- 8 else { throw CallerIDError.corrupt(path, "block \(b) offsets") }
        guard let block = Format2Block(blocks, start: start, end: end, syncShift: syncShift, expectedLast: b == blockCount &- 1,
                                       blockCount: blockCount, entries: count)
        else { throw CallerIDError.corrupt(path, "block \(b) header") }
        return block
    }

    /// Cold chunk `c`: (first id, end id, stored bytes, raw size, compressed).
    func chunk(containing id: Int) throws(CallerIDError) -> (first: Int, end: Int, stored: ByteView, raw: Int, compressed: Bool) {
        var lo = 0, n = chunkCount
        while n > 1 {
            let half = n &>> 1
            lo = Int(chunkTable.u32(12 &* (lo &+ half))) <= id ? lo &+ half : lo
            n &-= half
        }
        let first = Int(chunkTable.u32(12 &* lo)), end = Int(chunkTable.u32(12 &* lo &+ 12))
        let from = Int(chunkTable.u32(12 &* lo &+ 4)), to = Int(chunkTable.u32(12 &* lo &+ 16))
        let rawField = chunkTable.u32(12 &* lo &+ 8)
        let raw = Int(rawField & 0x7FFF_FFFF)
        guard chunkCount > 0, first <= id, id < end, end <= valueCount, from <= to, to <= coldData.count, raw <= Format2.maxChunkRaw,
              let stored = coldData.slice(from, to &- from)
        else { throw CallerIDError.corrupt(path, "cold chunk table entry \(lo)") }
        return (first, end, stored, raw, rawField & 1 << 31 != 0)
    }

    /// An ascending cursor from the first number ≥ `from`.
    public func cursor(from: UInt64 = 0) -> Format2Cursor { Format2Cursor(self, from: from) }
}

/// A checked view of one block record.
struct Format2Block {
    let view: ByteView   // [start, end + 8): the 8 bytes after the record are readable
    let n: Int
    let l: Int
    let syncStart: Int
    let upperStart: Int
    let upperWords: Int
    let lowerStart: Int
    let valueStart: Int
    let valueBits: Int
    let syncShift: Int

    @inline(__always)
    init?(_ blocks: ByteView, start: Int, end: Int, syncShift: Int, expectedLast: Bool, blockCount: Int, entries: Int) {
        guard end &- start >= 8 else { return nil }
        view = ByteView(base: blocks.base + start, count: end &- start &+ 8)
        let recordLength = end &- start
        n = Int(view.u16(0))
        l = Int(view.u8(2))
        upperWords = Int(view.u16(4))
        let lowerBytes = Int(view.u16(6))
        self.syncShift = syncShift
        let m = n &- 1
        guard n >= 1, n <= Format2.maxBlockEntries, l <= 56, lowerBytes &* 8 >= m &* l else { return nil }
        syncStart = 8
        upperStart = 8 &+ 2 &* (m &>> syncShift)
        lowerStart = upperStart &+ 8 &* upperWords
        valueStart = lowerStart &+ lowerBytes
        guard valueStart <= recordLength, upperWords &* 64 >= m else { return nil }
        valueBits = (recordLength &- valueStart) &* 8
    }

    @inline(__always) func lower(_ j: Int) -> UInt64 {
        view.bits(at: lowerStart &* 8 &+ j &* l, width: l)
    }

    /// Index of the entry `x` above the block's first key, or nil.
    @inline(__always)
    func find(_ x: UInt64, path: String) throws(CallerIDError) -> Int? {
        if x == 0 { return 0 }
        let m = n &- 1
        guard m > 0 else { return nil }
        let h = x &>> UInt64(l)
        guard h < UInt64(upperWords &* 64) else { return nil }
        // p = position just after the (h−1)-th zero (0-based) of the upper bits.
        var p = 0
        if h > 0 {
            var remaining = Int(h) &- 1
            var w = 0
            while true {
                guard w < upperWords else { return nil }
                let word = ~view.u64(upperStart &+ 8 &* w)
                let zeros = word.nonzeroBitCount
                if remaining < zeros {
                    var v = word
                    while true {
                        let byteZeros = (v & 0xFF).nonzeroBitCount
                        if remaining < byteZeros { break }
                        remaining &-= byteZeros
                        v &>>= 8
                        p &+= 8
                    }
                    for _ in 0..<remaining { v &= v &- 1 }
                    p &+= v.trailingZeroBitCount &+ 1
                    p &+= 64 &* w
                    break
                }
                remaining &-= zeros
                w &+= 1
            }
        }
        var j = p &- Int(h)
        let target = x & ((1 &<< UInt64(l)) &- 1)
        let totalBits = upperWords &* 64
        while p < totalBits, j < m {
            let word = view.u64(upperStart &+ 8 &* (p &>> 6))
            guard (word &>> UInt64(p & 63)) & 1 == 1 else { return nil }
            let low = lower(j)
            if low == target { return j &+ 1 }
            if low > target { return nil }
            p &+= 1
            j &+= 1
        }
        return nil
    }

    /// MSB-first window of the value stream at bit `bit` (< valueBits).
    @inline(__always) func window(_ bit: Int) -> UInt64 {
        let word = UInt64(bigEndian: view.base.loadUnaligned(fromByteOffset: valueStart &+ (bit &>> 3), as: UInt64.self))
        return word &<< UInt64(bit & 7)
    }

    /// The value id of entry `i`: decodes from the sync point before it.
    @inline(__always)
    func value(at i: Int, code: Format2Code, path: String) throws(CallerIDError) -> Int {
        if code.symbolCount <= 1 { return 0 }
        let k = i &>> syncShift
        var bit = k == 0 ? 0 : Int(view.u16(syncStart &+ 2 &* (k &- 1)))
        var skip = i & ((1 &<< syncShift) &- 1)
        while true {
            guard bit < valueBits, let (s, len) = code.decode(window(bit)), bit &+ len <= valueBits else {
                throw CallerIDError.corrupt(path, "value stream")
            }
            if skip == 0 { return s }
            bit &+= len
            skip &-= 1
        }
    }

    /// Decodes the whole block: keys (relative to `firstKey`) and value ids.
    func decodeAll(firstKey: UInt64, code: Format2Code, keys: inout [UInt64], ids: inout [UInt32], path: String) throws(CallerIDError) {
        keys.removeAll(keepingCapacity: true)
        ids.removeAll(keepingCapacity: true)
        keys.append(firstKey)
        let m = n &- 1
        var j = 0
        var w = 0
        var previous = firstKey
        while j < m {
            guard w < upperWords else { throw CallerIDError.corrupt(path, "block upper bits") }
            var word = view.u64(upperStart &+ 8 &* w)
            while word != 0 && j < m {
                let p = 64 &* w &+ word.trailingZeroBitCount
                let key = firstKey &+ (UInt64(p &- j) &<< UInt64(l) | lower(j))
                guard key > previous, key <= PhoneNumber.maximum else { throw CallerIDError.corrupt(path, "block keys not ascending") }
                keys.append(key)
                previous = key
                word &= word &- 1
                j &+= 1
            }
            w &+= 1
        }
        if code.symbolCount <= 1 {
            for _ in 0..<n { ids.append(0) }
            return
        }
        var bit = 0
        for _ in 0..<n {
            guard bit < valueBits, let (s, len) = code.decode(window(bit)), bit &+ len <= valueBits else {
                throw CallerIDError.corrupt(path, "value stream")
            }
            ids.append(UInt32(truncatingIfNeeded: s))
            bit &+= len
        }
    }
}

/// Decoded cold label chunks, at most `budget` decoded bytes in all (LRU).
@_spi(Format2Prototype) public struct Format2LabelCache {
    struct Slot {
        var first: Int
        var end: Int
        var offsets: [Int32]   // label k at offsets[k] ..< offsets[k+1]
        var bytes: UnsafeMutableRawBufferPointer
        var used: UInt64
    }
    final class Storage {
        var slots: [Slot] = []
        deinit { for s in slots { s.bytes.deallocate() } }
    }
    let storage = Storage()
    public let budget: Int
    var held = 0
    var tick: UInt64 = 0
    var last = -1
    public private(set) var decodedChunks = 0

    public init(budget: Int = 48 * 1024) { self.budget = budget }

    /// Bytes held now (decoded label text plus offsets).
    public var heldBytes: Int { held }

    @inline(__always)
    mutating func label(_ id: Int, reader: Format2Reader) throws(CallerIDError) -> UnsafeRawBufferPointer {
        tick &+= 1
        if last >= 0, last < storage.slots.count {
            let s = storage.slots[last]
            if id >= s.first && id < s.end { return slice(last, id) }
        }
        for k in 0..<storage.slots.count where id >= storage.slots[k].first && id < storage.slots[k].end {
            storage.slots[k].used = tick
            last = k
            return slice(k, id)
        }
        let k = try load(id, reader: reader)
        last = k
        return slice(k, id)
    }

    @inline(__always) func slice(_ k: Int, _ id: Int) -> UnsafeRawBufferPointer {
        let s = storage.slots[k]
        let a = Int(s.offsets[id &- s.first]), e = Int(s.offsets[id &- s.first &+ 1])
        return UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(s.bytes)[a..<e])
    }

    private mutating func load(_ id: Int, reader: Format2Reader) throws(CallerIDError) -> Int {
        let c = try reader.chunk(containing: id)
        let labels = c.end &- c.first
        let cost = c.raw &+ 4 &* (labels &+ 1)
        // Evict least recently used slots until the new chunk fits (a lone chunk may exceed the budget).
        while held &+ cost > budget, !storage.slots.isEmpty {
            var victim = 0
            for k in 1..<storage.slots.count where storage.slots[k].used < storage.slots[victim].used { victim = k }
            let s = storage.slots.remove(at: victim)
            held &-= s.bytes.count &+ 4 &* s.offsets.count
            s.bytes.deallocate()
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(c.raw, 1), alignment: 8)
        var ok: Bool
        if c.compressed {
            ok = Codec.decompress(c.stored.buffer, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<c.raw]),
                                  dictionary: reader.dictionary.buffer)
        } else {
            ok = c.stored.count == c.raw
            if ok && c.raw > 0 { buffer.copyMemory(from: c.stored.buffer) }
        }
        // Parse the varint-prefixed labels (exactly `labels` of them, filling the raw size) and
        // compact them in place without their prefixes: label k is offsets[k] ..< offsets[k+1].
        var offsets: [Int32] = [0]
        offsets.reserveCapacity(labels &+ 1)
        var at = 0, write = 0
        while ok && offsets.count <= labels {
            var len = 0, shift = 0
            while true {
                guard at < c.raw, shift <= 14 else { ok = false; break }
                let byte = Int(buffer[at])
                at &+= 1
                len |= (byte & 0x7F) << shift
                shift &+= 7
                if byte < 0x80 { break }
            }
            guard ok, len <= c.raw &- at else { ok = false; break }
            if len > 0 { (buffer.baseAddress! + write).copyMemory(from: buffer.baseAddress! + at, byteCount: len) }
            at &+= len
            write &+= len
            offsets.append(Int32(write))
        }
        guard ok, at == c.raw, offsets.count == labels &+ 1 else {
            buffer.deallocate()
            throw CallerIDError.corrupt(reader.path, "cold label chunk of value \(id)")
        }
        decodedChunks &+= 1
        let slot = Slot(first: c.first, end: c.end, offsets: offsets, bytes: buffer, used: tick)
        storage.slots.append(slot)
        held &+= buffer.count &+ 4 &* slot.offsets.count
        return storage.slots.count &- 1
    }

}

/// Memory owned by a reader built from an in-memory image.
final class OwnedBytes {
    let pointer: UnsafeMutableRawBufferPointer
    let count: Int
    init(_ bytes: [UInt8]) {
        count = bytes.count
        pointer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 16)
        bytes.withUnsafeBytes { pointer.copyMemory(from: $0) }
    }
    var view: ByteView { ByteView(base: UnsafeRawPointer(pointer.baseAddress!), count: count) }
    deinit { pointer.deallocate() }
}
