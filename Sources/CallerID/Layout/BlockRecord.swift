// Format 2.0, section kind 4: one block record (docs/FORMAT.md §5.4). Its writer and its reader,
// beside the drawing of its bytes (little-endian; n = entryCount, m = n − 1 keys after the first,
// S = m >> syncShift sync entries):
//
//   offset          size             field        value
//   --------------  ---------------  -----------  ------------------------------------------------
//   0               2                entryCount   n, entries of the block, 1 … blockSize
//   2               1                lowerWidth   l, Elias–Fano lower-bit width, 0 … 56 (0 for a run)
//   3               1                keyCodec     0 = Elias–Fano, 1 = run of consecutive numbers
//   4               2                upperWords   u64 words of upper bits (0 for a run)
//   6               2                lowerBytes   bytes of lower bits (0 for a run)
//   8               2·S              sync table   entry s − 1: the value-stream bit offset of the
//                                                 code of entry s·2^syncShift (s = 1 … S)
//   U = 8 + 2·S     8·upperWords     upper bits   bit (high_j + j) set for key j + 1 (LSB-first words)
//   L = U + 8·upperWords  lowerBytes lower bits   field j of width l: low_j (LSB-first)
//   V = L + lowerBytes    to the end value stream the n value codes, MSB-first, zero-padded
//
// with x_j = key_{j+1} − key_0 = high_j << l | low_j. The first key is the block index's. The
// records are followed by 8 zero bytes (the blocks section's end), so every 8-byte load below
// stays inside [record start, record end + 8), and no record reaches into them.

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
    /// The widest lower-bit field: a field and its shift fit one unaligned u64 load.
    static let maxLowerWidth = 56

    let view: ByteView   // [start, end + 8): the 8 bytes after the record are readable
    /// n: the block's entries.
    let entryCount: Int
    /// l: the Elias–Fano lower-bit width.
    let lowerWidth: Int
    let keyCodec: UInt8
    let upperStart: Int
    let upperWords: Int
    let lowerStart: Int
    let valueStart: Int
    let valueBits: Int
    let syncShift: Int

    /// Nil when the header does not fit the record: entries 1…`maxEntries`, a known key
    /// codec, and sync table, upper words, lower bits and value stream inside the record.
    @inline(__always)
    init?(_ blocks: ByteView, start: Int, end: Int, syncShift: Int, maxEntries: Int) {
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
        guard entryCount >= 1, entryCount <= maxEntries else { return nil }
        if keyCodec == Format.keyCodecRun {
            guard lowerWidth == 0, upperWords == 0, lowerBytes == 0 else { return nil }
        } else {
            guard keyCodec == Format.keyCodecEliasFano, lowerWidth <= BlockRecord.maxLowerWidth, lowerBytes &* 8 >= deltas &* lowerWidth,
                  upperWords &* 64 >= deltas else { return nil }
        }
        upperStart = Offset.syncTable &+ 2 &* (deltas &>> syncShift)
        lowerStart = upperStart &+ 8 &* upperWords
        valueStart = lowerStart &+ lowerBytes
        guard valueStart <= recordLength else { return nil }
        valueBits = (recordLength &- valueStart) &* 8
    }

    /// Lower field j (low_j).
    @inline(__always) func lower(_ j: Int) -> UInt64 {
        view.bits(at: lowerStart &* 8 &+ j &* lowerWidth, width: lowerWidth)
    }

    /// The sync table's entry `s − 1`: the bit offset of entry `s·2^syncShift`'s code (s ≥ 1).
    @inline(__always) func syncBit(_ s: Int) -> Int {
        Int(view.u16(Offset.syncTable &+ 2 &* (s &- 1)))
    }

    /// Index of the entry `x` above the block's first key, or nil.
    @inline(__always)
    func find(_ x: UInt64) -> Int? {
        if x == 0 { return 0 }
        let deltas = entryCount &- 1
        if keyCodec == Format.keyCodecRun { return x <= UInt64(deltas) ? Int(x) : nil }
        guard deltas > 0 else { return nil }
        let h = x &>> UInt64(lowerWidth)
        guard h < UInt64(upperWords &* 64) else { return nil }
        // p = position just after the h-th zero of the upper bits (the start of bucket h).
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
                    while remaining > 0 {
                        v &= v &- 1
                        remaining &-= 1
                    }
                    p &+= v.trailingZeroBitCount &+ 1 &+ 64 &* w
                    break
                }
                remaining &-= zeros
                w &+= 1
            }
        }
        var j = p &- Int(h)
        let target = x & ((1 &<< UInt64(lowerWidth)) &- 1)
        let totalBits = upperWords &* 64
        while p < totalBits, j < deltas, j >= 0 {
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
        view.u64BigEndian(valueStart &+ (bit &>> 3)) &<< UInt64(bit & 7)
    }

    /// The value id of entry `i` (< n), decoding from the sync point before it; nil when the
    /// value stream is damaged.
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
        while true {
            guard let (s, len) = code.decode(w), len <= valueBits &- bit else { return nil }
            if skip == 0 { return s }
            bit &+= len
            guard bit < valueBits else { return nil }
            skip &-= 1
            used &+= len
            if used > 57 &- Format.maxCodeLength {
                w = window(bit)
                used = 0
            } else {
                w &<<= UInt64(len)
            }
        }
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
    /// Every id is below the code's symbol count (``ValueCode``: the fast table and the slow
    /// path both yield only ids of the code), which the open check holds equal to the values.
    func decodeAllBits(firstKey: UInt64, code: ValueCode, keys: inout FixedBuffer<UInt64>, ids: inout FixedBuffer<UInt32>) -> Int? {
        guard firstKey <= Format.maxNumber else { return nil }  // a block of one entry has no other key to check
        let out = keys.writer()
        out[0] = firstKey
        let deltas = entryCount &- 1
        if keyCodec == Format.keyCodecRun {
            guard firstKey &+ UInt64(deltas) <= Format.maxNumber else { return nil }
            var key = firstKey
            for j in 1..<(deltas &+ 1) {
                key &+= 1
                out[j] = key
            }
        } else if deltas > 0 {
            let width = UInt64(lowerWidth)
            let mask: UInt64 = lowerWidth == 0 ? 0 : (~0 as UInt64) &>> (64 &- width)
            var j = 0
            var previous = firstKey
            var lowBit = lowerStart &* 8
            var w = 0
            while j < deltas {
                guard w < upperWords else { return nil }
                var word = view.u64(upperStart &+ 8 &* w)
                let wordStart = 64 &* w
                while word != 0 {
                    // The j-th set bit at position p = 64w + tz: the key's high part is p − j.
                    let high = UInt64(wordStart &+ word.trailingZeroBitCount &- j)
                    let low = (view.u64(lowBit &>> 3) &>> UInt64(lowBit & 7)) & mask
                    let key = firstKey &+ (high &<< width | low)
                    guard key > previous else { return nil }
                    j &+= 1
                    out[j] = key
                    previous = key
                    guard j < deltas else { break }
                    word &= word &- 1
                    lowBit &+= lowerWidth
                }
                w &+= 1
            }
            guard previous <= Format.maxNumber else { return nil }
        }
        let idsOut = ids.writer()
        if code.symbolCount <= 1 {
            for i in 0..<entryCount { idsOut[i] = 0 }
            return 0
        }
        let decoder = code.decoder
        let table = decoder.table
        let syncEvery = 1 &<< syncShift
        let limit = valueBits
        let n = entryCount
        var bit = 0
        var i = 0
        while i < n {
            // Sync entries: the bit offset of entry i for every i = k·2^syncShift, k ≥ 1.
            if i > 0 {
                guard syncBit(i &>> syncShift) == bit else { return nil }
            }
            let end = min(n, i &+ syncEvery)
            while i < end {
                guard bit < limit else { return nil }
                let window = view.u64BigEndian(valueStart &+ (bit &>> 3)) &<< UInt64(bit & 7)
                let f = table[Int(truncatingIfNeeded: window &>> UInt64(64 &- Format.fastBits))]
                var length = Int(f &>> 24)
                var symbol = UInt32(f & 0xFF_FFFF)
                if length > Format.fastBits {
                    guard let (s, len) = decoder.decodeSlow(window, from: length) else { return nil }
                    symbol = UInt32(truncatingIfNeeded: s)
                    length = len
                }
                guard length <= limit &- bit else { return nil }
                idsOut[i] = symbol
                bit &+= length
                i &+= 1
            }
        }
        return bit
    }

    /// For verify, after ``decodeAllBits(firstKey:code:keys:ids:)`` gave `codeBits` and the
    /// block's last key `lastKey`: every structural rule a reader does not need for one entry
    /// but the writer always keeps — the key codec and Elias–Fano width the writer's rule picks
    /// (so that no record makes a lookup walk more upper words than a valid file would),
    /// exactly n − 1 set upper bits in the minimal number of words, zero padding bits, and no
    /// value-stream byte beyond the last code.
    func isCanonical(firstKey: UInt64, lastKey: UInt64, codeBits bit: Int) -> Bool {
        let deltas = entryCount &- 1
        let u = lastKey &- firstKey
        if BlockRecord.isRun(deltas: deltas, span: u) {
            guard keyCodec == Format.keyCodecRun else { return false }
        } else {
            guard keyCodec == Format.keyCodecEliasFano else { return false }
            let l = BlockRecord.lowerWidth(deltas: deltas, span: u)
            guard lowerWidth == l, upperWords == BlockRecord.upperWords(deltas: deltas, span: u, lowerWidth: l) else { return false }
            var ones = 0
            for w in 0..<upperWords { ones &+= view.u64(upperStart &+ 8 &* w).nonzeroBitCount }
            guard ones == deltas else { return false }
            guard (valueStart &- lowerStart) == (deltas &* l &+ 7) / 8 else { return false }
            if deltas &* l % 8 != 0 {
                let last = view.u8(valueStart &- 1)
                guard last &>> UInt8(deltas &* l % 8) == 0 else { return false }
            }
        }
        guard (bit &+ 7) / 8 == valueBits / 8 else { return false }
        if bit % 8 != 0 {
            let last = view.u8(valueStart &+ bit / 8)
            guard last & (0xFF &>> UInt8(bit % 8)) == 0 else { return false }
        }
        return true
    }

    // MARK: Writer

    /// The writer's key codec rule: a run when the m > 0 keys after the first are consecutive
    /// (`span` = last key − first key = m).
    static func isRun(deltas m: Int, span u: UInt64) -> Bool { m > 0 && u == UInt64(m) }

    /// The writer's Elias–Fano width: floor(log2(u div m)), at most 56; 0 when u div m = 0.
    static func lowerWidth(deltas m: Int, span u: UInt64) -> Int {
        guard m > 0, u / UInt64(m) >= 1 else { return 0 }
        return min(maxLowerWidth, 63 - (u / UInt64(m)).leadingZeroBitCount)
    }

    /// The writer's number of upper words: ceil(((u >> l) + m) / 64), none for m = 0.
    static func upperWords(deltas m: Int, span u: UInt64, lowerWidth l: Int) -> Int {
        m > 0 ? (Int(u >> UInt64(l)) + m + 63) / 64 : 0
    }

    /// Appends one block's record (the drawing above) to `blocks`: the header, the sync points,
    /// the keys as Elias–Fano (or nothing for a run of consecutive numbers), then the value codes.
    /// `keys` ascend strictly; `values` index `ids`. Counts key and value bytes in `parts`.
    static func append(keys: ArraySlice<UInt64>, values: ArraySlice<UInt32>, ids: FileWriter.ValueIds, syncInterval: Int,
                       to blocks: inout [UInt8], parts: inout LayoutParts) throws(CallerIDError) {
        let count = keys.count
        let firstKey = keys.first!
        let deltas = count - 1
        let u = keys.last! - firstKey
        var codec = Format.keyCodecEliasFano
        var width = 0
        var upper: [UInt64] = []
        var lower = BitWriter()
        if isRun(deltas: deltas, span: u) {
            codec = Format.keyCodecRun  // consecutive numbers: nothing to store
        } else if deltas > 0 {
            width = lowerWidth(deltas: deltas, span: u)
            upper = [UInt64](repeating: 0, count: upperWords(deltas: deltas, span: u, lowerWidth: width))
            for j in 0..<deltas {
                let x = keys[keys.startIndex + 1 + j] - firstKey
                let p = Int(x >> UInt64(width)) + j
                upper[p >> 6] |= 1 << UInt64(p & 63)
                lower.write(x, width: width)
            }
            lower.alignToByte()
        }
        var stream = MSBBitWriter()
        var sync: [UInt16] = []
        for i in 0..<count {
            if i > 0 && i % syncInterval == 0 {
                guard stream.bitCount <= Int(UInt16.max) else {
                    throw CallerIDError(.limitExceeded, "a block's value codes exceed 65,535 bits: use a smaller block size")
                }
                sync.append(UInt16(stream.bitCount))
            }
            if ids.valueCount > 1 {
                let c = ids.codes[Int(ids.idOf[Int(values[values.startIndex + i])])]
                stream.write(c.code, c.length)
            }
        }
        guard upper.count <= Int(UInt16.max), lower.bytes.count <= Int(UInt16.max) else {
            throw CallerIDError(.limitExceeded, "block keys too sparse for one record")
        }
        let start = blocks.count
        blocks.appendLE(UInt16(count))
        blocks.append(UInt8(width))
        blocks.append(codec)
        blocks.appendLE(UInt16(upper.count))
        blocks.appendLE(UInt16(lower.bytes.count))
        assert(blocks.count - start == Offset.syncTable)
        for s in sync { blocks.appendLE(s) }
        for w in upper { blocks.appendLE(w) }
        blocks.append(contentsOf: lower.bytes)
        let valueBytes = stream.finished
        blocks.append(contentsOf: valueBytes)
        parts.keys += Format.recordHeaderSize + 8 * upper.count + lower.bytes.count
        parts.values += 2 * sync.count + valueBytes.count
    }
}
