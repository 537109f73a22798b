// Formats 2.0 and 3.0, section kind 4: one block record (docs/FORMAT.md §5.4). Its writer and
// its reader, beside the drawing of its bytes (little-endian; n = entryCount, m = n − 1 keys
// after the first, S = m >> syncShift sync entries, M = ceil(m / 64) bitmap words for key
// codec 2 and none for the others, r = the elements of the Elias–Fano part: m for codec 0,
// the bitmap's zero bits for codec 2):
//
//   offset          size             field        value
//   --------------  ---------------  -----------  ------------------------------------------------
//   0               2                entryCount   n, entries of the block, 1 … blockSize
//   2               1                lowerWidth   l, Elias–Fano lower-bit width, 0 … 56 (0 for a run)
//   3               1                keyCodec     0 = Elias–Fano, 1 = run of consecutive numbers,
//                                                 2 = gap-1 bitmap + Elias–Fano (major 3 only)
//   4               2                upperWords   u64 words of upper bits (0 for a run)
//   6               2                lowerBytes   bytes of lower bits (0 for a run)
//   8               2·S              sync table   entry s − 1: the value-stream bit offset of the
//                                                 code of entry s·2^syncShift (s = 1 … S)
//   B = 8 + 2·S     8·M              gap-1 bitmap bit j set when key j + 1 = key j + 1 (codec 2)
//   U = B + 8·M     8·upperWords     upper bits   bit (high_i + i) set for element i (LSB-first words)
//   L = U + 8·upperWords  lowerBytes lower bits   field i of width l: low_i (LSB-first)
//   V = L + lowerBytes    to the end value stream the n value codes, MSB-first, zero-padded
//
// with x_j = key_{j+1} − key_0; the Elias–Fano elements e_i = high_i << l | low_i are every x_j
// (codec 0) or the x_j whose bitmap bit is 0 (codec 2), in order. The first key is the block
// index's. The records are followed by 8 zero bytes (the blocks section's end), so every 8-byte
// load below stays inside [record start, record end + 8), and no record reaches into them.
//
// One codec a file: the record (its header, the value stream, the key codec rule and the
// writer) here; the Elias–Fano keys in EliasFano.swift; the gap-1 bitmap in GapBitmap.swift;
// the value codes' canonical code in ValueCode.swift.

/// A checked view of one block record (the reader), and the writer of one (``append(keys:values:ids:syncInterval:to:parts:)``).
struct BlockRecord {
    /// Where each field of the fixed header starts, and where the sync table starts (the drawing above).
    enum Offset {
        static let entryCount = 0
        static let lowerWidth = 2
        static let keyCodec = 3
        static let upperWords = 4
        static let lowerBytes = 6
        static let syncTable = 8
    }
    let view: ByteView   // [start, end + 8): the 8 bytes after the record are readable
    /// n: the block's entries.
    let entryCount: Int
    /// l: the Elias–Fano lower-bit width.
    let lowerWidth: Int
    let keyCodec: UInt8
    /// Where the gap-1 bitmap starts (codec 2; for the others it is empty and the upper bits start here).
    let bitmapStart: Int
    let upperStart: Int
    let upperWords: Int
    /// r: the Elias–Fano elements (m for codec 0, the bitmap's zero bits among its m for codec 2).
    let elementCount: Int
    let lowerStart: Int
    let valueStart: Int
    let valueBits: Int
    let syncShift: Int

    /// Nil when the header does not fit the record: entries 1…`maxEntries`, a key codec up to
    /// `maxKeyCodec` (the file's major version allows codec 2 or not), and sync table, bitmap,
    /// upper words, lower bits and value stream inside the record.
    @inline(__always)
    init?(_ blocks: ByteView, start: Int, end: Int, syncShift: Int, maxEntries: Int, maxKeyCodec: UInt8) {
        guard start < end, end &- start >= Format.recordHeaderSize, end <= blocks.count &- Format.recordPadding else { return nil }
        view = blocks.view(start, end &- start &+ Format.recordPadding)
        let recordLength = end &- start
        entryCount = Int(view.u16(Offset.entryCount))
        lowerWidth = Int(view.u8(Offset.lowerWidth))
        keyCodec = view.u8(Offset.keyCodec)
        upperWords = Int(view.u16(Offset.upperWords))
        let lowerBytes = Int(view.u16(Offset.lowerBytes))
        self.syncShift = syncShift
        let deltas = entryCount &- 1
        guard entryCount >= 1, entryCount <= maxEntries, keyCodec <= maxKeyCodec else { return nil }
        bitmapStart = Offset.syncTable &+ 2 &* (deltas &>> syncShift)
        var elements = deltas
        var bitmapWords = 0
        if keyCodec == Format.keyCodecRun {
            guard lowerWidth == 0, upperWords == 0, lowerBytes == 0 else { return nil }
            elements = 0
        } else if keyCodec == Format.keyCodecRunBitmap {
            bitmapWords = (deltas &+ 63) &>> 6
            guard deltas > 0, bitmapStart &+ 8 &* bitmapWords <= recordLength else { return nil }
            elements = deltas &- GapBitmap.ones(view, at: bitmapStart, bits: deltas)
        } else {
            guard keyCodec == Format.keyCodecEliasFano else { return nil }
        }
        guard lowerWidth <= EliasFano.maxLowerWidth, lowerBytes &* 8 >= elements &* lowerWidth, upperWords &* 64 >= elements else { return nil }
        elementCount = elements
        upperStart = bitmapStart &+ 8 &* bitmapWords
        lowerStart = upperStart &+ 8 &* upperWords
        valueStart = lowerStart &+ lowerBytes
        guard valueStart <= recordLength else { return nil }
        valueBits = (recordLength &- valueStart) &* 8
    }

    /// The sync table's entry `s − 1`: the bit offset of entry `s·2^syncShift`'s code (s ≥ 1).
    @inline(__always) func syncBit(_ s: Int) -> Int {
        Int(view.u16(Offset.syncTable &+ 2 &* (s &- 1)))
    }

    /// Index of the entry `x` above the block's first key, or nil.
    @inline(__always)
    func find(_ x: UInt64) -> Int? {
        if x == 0 { return 0 }
        switch keyCodec {
        case Format.keyCodecRun: return x <= UInt64(entryCount &- 1) ? Int(x) : nil
        case Format.keyCodecRunBitmap: return findKey(x, GapBitmap(self))
        default: return findKey(x, NoGapOnes())
        }
    }

    /// MSB-first window of the value stream at bit `bit` (< valueBits).
    @inline(__always) func window(_ bit: Int) -> UInt64 {
        view.u64BigEndian(valueStart &+ (bit &>> 3)) &<< UInt64(bit & 7)
    }

    /// The value id of entry `i` (< n), decoding from the sync point before it; nil when the
    /// value stream is damaged.
    ///
    /// The codes before entry `i`'s are only measured (``ValueDecoder/length(_:)``: no id, and
    /// no call for a long code whose prefix gives its length); entry `i`'s is decoded. The
    /// stream's end is checked before each load and for entry `i`'s code: the bit position only
    /// grows, so a code before it that ran past the end fails that last check.
    @inline(__always)
    func value(at i: Int, code: ValueCode) -> Int? {
        if code.symbolCount <= 1 { return 0 }
        let code = code.decoder
        let k = i &>> syncShift
        var bit = k == 0 ? 0 : syncBit(k)
        var skip = i & ((1 &<< syncShift) &- 1)
        // `w` holds the stream from `bit` on, MSB-aligned, with at least 57 − used valid bits:
        // reloaded only when fewer than maxCodeLength remain.
        guard bit < valueBits else { return nil }
        var w = window(bit)
        var used = 0
        while skip > 0 {
            guard let len = code.length(w) else { return nil }
            bit &+= len
            skip &-= 1
            used &+= len
            if used > 57 &- Format.maxCodeLength {
                guard bit < valueBits else { return nil }
                w = window(bit)
                used = 0
            } else {
                w &<<= UInt64(len)
            }
        }
        guard bit < valueBits, let (s, len) = code.decode(w), len <= valueBits &- bit else { return nil }
        return s
    }

    /// Decodes every key (from `firstKey`) and value id of the block into `keys`/`ids`
    /// (room for `entryCount` each: at least `maxEntries` of the record's init). Throws-free: returns false when the record is damaged (keys not
    /// strictly ascending, above the maximum number, upper bits that do not hold n − 1
    /// elements, a bad code or a sync point that disagrees with the stream).
    func decodeAll(firstKey: UInt64, code: ValueCode, keys: inout FixedBuffer<UInt64>, ids: inout FixedBuffer<UInt32>) -> Bool {
        decodeAllBits(firstKey: firstKey, code: code, keys: &keys, ids: &ids) != nil
    }

    /// ``decodeAll(firstKey:code:keys:ids:)`` returning the bits of value codes read (nil when damaged).
    ///
    /// The scan's and verify's inner loop. Keys: one set upper bit and one lower field per key,
    /// each key checked against the one before (so only the last needs the maximum-number
    /// check: the keys ascend). Value ids: the window is reloaded from the code's bit position
    /// for every code (one unaligned load, always ≥ 57 valid bits), so the loop carries no
    /// refill state; the bit position is checked against the stream's end before each load.
    /// Every id is below the code's symbol count (``ValueCode``: a length from the fast table —
    /// a short code's, or a long prefix's whose codes all have it — read by the canonical
    /// rule, and the search for the other long prefixes, yield only ids of the code), which
    /// the open check holds equal to the values.
    func decodeAllBits(firstKey: UInt64, code: ValueCode, keys: inout FixedBuffer<UInt64>, ids: inout FixedBuffer<UInt32>) -> Int? {
        guard decodeKeys(firstKey: firstKey, keys.writer()) else { return nil }
        return walkValueCodes(code, StoredIds(out: ids.writer()))
    }

    /// Verify's pass over a block: ``decodeAllBits(firstKey:code:keys:ids:)`` with every check,
    /// but the value codes only measured (the fast table's length, or the search of a long
    /// prefix whose codes differ in length), their ids never read: each is an id of the code
    /// by construction (the table built from validated lengths).
    func checkAllBits(firstKey: UInt64, code: ValueCode, keys: inout FixedBuffer<UInt64>) -> Int? {
        guard decodeKeys(firstKey: firstKey, keys.writer()) else { return nil }
        return walkValueCodes(code, MeasuredOnly())
    }

    /// The keys of ``decodeAllBits(firstKey:code:keys:ids:)`` into `out`; false when damaged.
    @inline(__always)
    private func decodeKeys(firstKey: UInt64, _ out: FixedBufferWriter<UInt64>) -> Bool {
        guard firstKey <= Format.maxNumber else { return false }  // a block of one entry has no other key to check
        out[0] = firstKey
        let deltas = entryCount &- 1
        switch keyCodec {
        case Format.keyCodecRun:
            guard firstKey &+ UInt64(deltas) <= Format.maxNumber else { return false }
            var key = firstKey
            for j in 1..<(deltas &+ 1) {
                key &+= 1
                out[j] = key
            }
            return true
        case Format.keyCodecRunBitmap:
            return decodeElements(firstKey: firstKey, out, GapBitmap(self))
        default:
            return decodeElements(firstKey: firstKey, out, NoGapOnes())
        }
    }

    /// The value codes of the block in order, entry i's id handed to `sink` when it wants ids
    /// (else each code is only measured); the bits they take, or nil when the stream is damaged.
    @inline(__always)
    private func walkValueCodes<Sink: ValueIdSink>(_ code: ValueCode, _ sink: Sink) -> Int? {
        let ids = Sink.wantsIds
        if code.symbolCount <= 1 {
            if ids { for i in 0..<entryCount { sink.emit(i, 0) } }
            return 0
        }
        // The sync table says where every 2^syncShift-th code starts, so four segments are
        // decoded in step: four independent chains of load → table → length, which the
        // processor overlaps (one chain waits on the code before it). Each segment must end
        // exactly where the next one starts: the same checks as decoding the stream in order.
        let decoder = code.decoder
        let syncEvery = 1 &<< syncShift
        let n = entryCount
        var bit = 0  // where the codes decoded so far end
        var segment = 0
        while (segment &+ 4) &<< syncShift <= n {
            let i = segment &<< syncShift
            let start1 = syncBit(segment &+ 1), start2 = syncBit(segment &+ 2), start3 = syncBit(segment &+ 3)
            guard segment == 0 || syncBit(segment) == bit else { return nil }
            var b0 = bit, b1 = start1, b2 = start2, b3 = start3
            for k in i..<(i &+ syncEvery) {
                guard let s0 = nextCode(&b0, decoder, id: ids), let s1 = nextCode(&b1, decoder, id: ids),
                      let s2 = nextCode(&b2, decoder, id: ids), let s3 = nextCode(&b3, decoder, id: ids) else { return nil }
                if ids {
                    sink.emit(k, s0)
                    sink.emit(k &+ syncEvery, s1)
                    sink.emit(k &+ 2 &* syncEvery, s2)
                    sink.emit(k &+ 3 &* syncEvery, s3)
                }
            }
            guard b0 == start1, b1 == start2, b2 == start3 else { return nil }
            bit = b3
            segment &+= 4
        }
        var i = segment &<< syncShift
        while i < n {
            // Sync entries: the bit offset of entry i for every i = k·2^syncShift, k ≥ 1.
            if i > 0 {
                guard syncBit(i &>> syncShift) == bit else { return nil }
            }
            let end = min(n, i &+ syncEvery)
            while i < end {
                guard let symbol = nextCode(&bit, decoder, id: ids) else { return nil }
                if ids { sink.emit(i, symbol) }
                i &+= 1
            }
        }
        return bit
    }

    /// The id of the code at `bit` of the value stream (0 unless `id`: the code only
    /// measured), and `bit` moved past it; nil when `bit` is at the stream's end or no code of
    /// the stream's fits there.
    @inline(__always)
    private func nextCode(_ bit: inout Int, _ decoder: ValueDecoder, id: Bool) -> UInt32? {
        guard bit < valueBits else { return nil }
        let window = view.u64BigEndian(valueStart &+ (bit &>> 3)) &<< UInt64(bit & 7)
        let f = decoder.fastEntry(window)
        var length = Int(f &>> 24)
        let symbol: UInt32
        if ValueDecoder.mustSearch(f) {
            guard let (s, len) = decoder.decodeLong(window, entry: f) else { return nil }
            symbol = UInt32(truncatingIfNeeded: s)
            length = len
        } else {
            symbol = id ? UInt32(truncatingIfNeeded: decoder.canonicalSymbol(window, length: length)) : 0
        }
        guard length <= valueBits &- bit else { return nil }
        bit &+= length
        return symbol
    }

    /// For verify, after ``decodeAllBits(firstKey:code:keys:ids:)`` gave `codeBits` and the
    /// block's keys `keys[0 ..< n]`: every structural rule a reader does not need for one entry
    /// but the writer always keeps — the key codec and Elias–Fano width the writer's rule picks
    /// (so that no record makes a lookup walk more upper words than a valid file would, and a
    /// block is never in the larger of two codecs), exactly r set upper bits in the minimal
    /// number of words, the bitmap of exactly the gap-1 keys, zero padding bits, and no
    /// value-stream byte beyond the last code.
    /// `runBitmap`: the file is of major version 3 (the writer's rule there weighs codec 2 too).
    func isCanonical(keys: borrowing FixedBuffer<UInt64>, codeBits bit: Int, runBitmap: Bool) -> Bool {
        let deltas = entryCount &- 1
        // Without codec 2 (a major-2 file) the rule needs only the span: no pass over the gaps.
        let shape = runBitmap ? BlockRecord.KeyShape(count: entryCount) { keys[$0] }
            : BlockRecord.KeyShape(deltas: deltas, span: keys[deltas] &- keys[0])
        guard keyCodec == BlockRecord.keyCodec(shape, runBitmap: runBitmap) else { return false }
        if keyCodec == Format.keyCodecEliasFano {
            guard isCanonicalEliasFano(elements: deltas, span: shape.span) else { return false }
        } else if keyCodec == Format.keyCodecRunBitmap {
            guard GapBitmap(self).isCanonical(keys: keys) else { return false }
            guard isCanonicalEliasFano(elements: deltas &- shape.gapOnes, span: shape.lastOther) else { return false }
        }
        guard (bit &+ 7) / 8 == valueBits / 8 else { return false }
        if bit % 8 != 0 {
            let last = view.u8(valueStart &+ bit / 8)
            guard last & (0xFF &>> UInt8(bit % 8)) == 0 else { return false }
        }
        return true
    }

    // MARK: Writer

    /// What the writer's key codec rule reads from a block's keys k_0 … k_m.
    struct KeyShape {
        /// m: the keys after the first.
        var deltas = 0
        /// u = k_m − k_0.
        var span: UInt64 = 0
        /// Keys one above the key before them.
        var gapOnes = 0
        /// k_j − k_0 of the last key j ≥ 1 that is not one above the key before it (0 if none).
        var lastOther: UInt64 = 0

        /// The shape of m keys after the first spanning `span`, without the gap counts (enough
        /// for the rule of a file without codec 2).
        init(deltas: Int, span: UInt64) {
            self.deltas = deltas
            self.span = span
        }

        init(count: Int, key: (Int) -> UInt64) {
            deltas = count - 1
            let first = key(0)
            var previous = first
            for j in 1..<max(1, count) {
                let k = key(j)
                if k &- previous == 1 { gapOnes += 1 } else { lastOther = k &- first }
                previous = k
            }
            span = previous &- first
        }
    }

    /// The writer's key codec rule: a run when the m > 0 keys after the first are consecutive;
    /// else the fewer key bytes of Elias–Fano (codec 0) and, when the file may use it
    /// (`runBitmap`, major version 3), the gap-1 bitmap with Elias–Fano over the other keys
    /// (codec 2); codec 0 when they tie.
    static func keyCodec(_ shape: KeyShape, runBitmap: Bool) -> UInt8 {
        let m = shape.deltas
        if isRun(deltas: m, span: shape.span) { return Format.keyCodecRun }
        guard runBitmap, m > 0 else { return Format.keyCodecEliasFano }
        return GapBitmap.keyBytes(shape) < EliasFano.bytes(elements: m, span: shape.span) ? Format.keyCodecRunBitmap : Format.keyCodecEliasFano
    }

    /// Key bytes of codec `codec` for a block of `shape` (the header and sync table left out).
    static func keyBytes(_ shape: KeyShape, codec: UInt8) -> Int {
        switch codec {
        case Format.keyCodecRun: 0
        case Format.keyCodecRunBitmap: GapBitmap.keyBytes(shape)
        default: EliasFano.bytes(elements: shape.deltas, span: shape.span)
        }
    }

    /// The writer's file-level rule (docs/FORMAT.md §9): key codec 2 is used in a file — which
    /// makes it major version 3, unreadable by 2.0 readers — only when it saves at least
    /// 1/32 of the key bytes the file would have without it. Fed every key in order, cut into
    /// blocks of the writer's block size.
    struct KeyCodecPlan {
        let blockSize: Int
        private var keys: [UInt64] = []
        /// Key bytes of the blocks so far without codec 2, and how many codec 2 saves on them.
        private(set) var bytesWithout = 0
        private(set) var saved = 0

        init(blockSize: Int) {
            self.blockSize = blockSize
            keys.reserveCapacity(blockSize)
        }

        mutating func add(_ key: UInt64) {
            keys.append(key)
            if keys.count == blockSize { endBlock() }
        }

        /// After the last key: whether the file uses codec 2.
        mutating func usesRunBitmap() -> Bool {
            if !keys.isEmpty { endBlock() }
            return saved > 0 && saved * 32 >= bytesWithout
        }

        private mutating func endBlock() {
            let shape = KeyShape(count: keys.count) { keys[$0] }
            let without = BlockRecord.keyBytes(shape, codec: BlockRecord.keyCodec(shape, runBitmap: false))
            bytesWithout += without
            saved += without - BlockRecord.keyBytes(shape, codec: BlockRecord.keyCodec(shape, runBitmap: true))
            keys.removeAll(keepingCapacity: true)
        }
    }

    /// The writer's key codec rule: a run when the m > 0 keys after the first are consecutive
    /// (`span` = last key − first key = m).
    static func isRun(deltas m: Int, span u: UInt64) -> Bool { m > 0 && u == UInt64(m) }

    /// Appends one block's record (the drawing above) to `blocks`: the header, the sync points,
    /// the keys in the codec of ``keyCodec(_:runBitmap:)`` (nothing for a run of consecutive numbers),
    /// then the value codes. `keys` ascend strictly; `values` index `ids`. Counts key and value
    /// bytes in `parts`; returns the key codec.
    @discardableResult
    static func append(keys: ArraySlice<UInt64>, values: ArraySlice<UInt32>, ids: some ValueCoder, syncInterval: Int,
                       runBitmap: Bool, to blocks: inout [UInt8], parts: inout LayoutParts) throws(CallerIDError) -> UInt8 {
        let count = keys.count
        let firstKey = keys.first!
        let shape = KeyShape(count: count) { keys[keys.startIndex + $0] }
        let codec = keyCodec(shape, runBitmap: runBitmap)
        // The Elias–Fano elements: every key above the first (codec 0), or those not one
        // above the key before them (codec 2, whose bitmap marks the others).
        var bitmap: [UInt64] = []
        var elements: [UInt64] = []
        if codec == Format.keyCodecEliasFano {
            elements = (1..<max(1, count)).map { keys[keys.startIndex + $0] - firstKey }
        } else if codec == Format.keyCodecRunBitmap {
            (bitmap, elements) = GapBitmap.encode(keys)
        }
        let (width, upper, lower) = EliasFano.encode(elements)
        var stream = MSBBitWriter()
        var sync: [UInt16] = []
        for i in 0..<count {
            if i > 0 && i % syncInterval == 0 {
                guard stream.bitCount <= Int(UInt16.max) else {
                    throw CallerIDError(.limitExceeded, "a block's value codes exceed 65,535 bits: use a smaller block size")
                }
                sync.append(UInt16(stream.bitCount))
            }
            if ids.coded {
                let c = ids.code(of: values[values.startIndex + i])
                stream.write(c.code, c.length)
            }
        }
        guard upper.count <= Int(UInt16.max), lower.count <= Int(UInt16.max) else {
            throw CallerIDError(.limitExceeded, "block keys too sparse for one record")
        }
        let start = blocks.count
        blocks.appendLE(UInt16(count))
        blocks.append(UInt8(width))
        blocks.append(codec)
        blocks.appendLE(UInt16(upper.count))
        blocks.appendLE(UInt16(lower.count))
        assert(blocks.count - start == Offset.syncTable)
        for s in sync { blocks.appendLE(s) }
        for w in bitmap { blocks.appendLE(w) }
        for w in upper { blocks.appendLE(w) }
        blocks.append(contentsOf: lower)
        let valueBytes = stream.finished
        blocks.append(contentsOf: valueBytes)
        parts.keys += Format.recordHeaderSize + 8 * bitmap.count + 8 * upper.count + lower.count
        parts.values += 2 * sync.count + valueBytes.count
        return codec
    }
}

/// How a block record's writer codes an entry's value: ``FileWriter/ValueIds`` (values are the
/// builder's label indices) or ``CanonicalValueCode`` (values are ids already).
protocol ValueCoder {
    /// False for a file of at most one value (a zero-bit code: no value codes are written).
    var coded: Bool { get }
    /// The code of `value` and its length in bits.
    func code(of value: UInt32) -> (code: UInt32, length: Int)
}

extension FileWriter.ValueIds: ValueCoder {
    var coded: Bool { valueCount > 1 }
    @inline(__always)
    func code(of value: UInt32) -> (code: UInt32, length: Int) { codes[Int(idOf[Int(value)])] }
}

extension CanonicalValueCode: ValueCoder {
    @inline(__always)
    func code(of value: UInt32) -> (code: UInt32, length: Int) { code(Int(value)) }
}

/// Where ``BlockRecord``'s walk over the value codes puts each entry's id: a specialization
/// per kind, so the walk that only measures codes computes no id at all.
protocol ValueIdSink {
    static var wantsIds: Bool { get }
    func emit(_ entry: Int, _ id: UInt32)
}

/// The ids stored in a block's buffer (the scan, a cursor).
struct StoredIds: ValueIdSink {
    let out: FixedBufferWriter<UInt32>
    static var wantsIds: Bool { true }
    @inline(__always) func emit(_ entry: Int, _ id: UInt32) { out[entry] = id }
}

/// No id wanted (verify): each code only measured.
struct MeasuredOnly: ValueIdSink {
    static var wantsIds: Bool { false }
    @inline(__always) func emit(_ entry: Int, _ id: UInt32) {}
}
