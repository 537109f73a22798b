// Format 2.0: one block record (docs/FORMAT.md §4), read through a view whose header was
// checked against the record's bounds. Every load below stays inside [record start, record
// end + 8): the blocks section ends with 8 zero bytes and no record reaches into them.

/// A checked view of one block record.
struct BlockRecord {
    let view: ByteView   // [start, end + 8): the 8 bytes after the record are readable
    let n: Int
    let l: Int
    let codec: UInt8
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
        n = Int(view.u16(0))
        l = Int(view.u8(2))
        codec = view.u8(3)
        upperWords = Int(view.u16(4))
        let lowerBytes = Int(view.u16(6))
        self.syncShift = syncShift
        let m = n &- 1
        guard n >= 1, n <= maxEntries else { return nil }
        if codec == Format.keyCodecRun {
            guard l == 0, upperWords == 0, lowerBytes == 0 else { return nil }
        } else {
            guard codec == Format.keyCodecEliasFano, l <= 56, lowerBytes &* 8 >= m &* l, upperWords &* 64 >= m else { return nil }
        }
        upperStart = Format.recordHeaderSize &+ 2 &* (m &>> syncShift)
        lowerStart = upperStart &+ 8 &* upperWords
        valueStart = lowerStart &+ lowerBytes
        guard valueStart <= recordLength else { return nil }
        valueBits = (recordLength &- valueStart) &* 8
    }

    @inline(__always) func lower(_ j: Int) -> UInt64 {
        view.bits(at: lowerStart &* 8 &+ j &* l, width: l)
    }

    /// Index of the entry `x` above the block's first key, or nil.
    @inline(__always)
    func find(_ x: UInt64) -> Int? {
        if x == 0 { return 0 }
        let m = n &- 1
        if codec == Format.keyCodecRun { return x <= UInt64(m) ? Int(x) : nil }
        guard m > 0 else { return nil }
        let h = x &>> UInt64(l)
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
        let target = x & ((1 &<< UInt64(l)) &- 1)
        let totalBits = upperWords &* 64
        while p < totalBits, j < m, j >= 0 {
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
        var bit = k == 0 ? 0 : Int(view.u16(Format.recordHeaderSize &+ 2 &* (k &- 1)))
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
    /// (room for `n` each: at least `maxEntries` of the record's init). Throws-free: returns false when the record is damaged (keys not
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
        let m = n &- 1
        if codec == Format.keyCodecRun {
            guard firstKey &+ UInt64(m) <= Format.maxNumber else { return nil }
            var key = firstKey
            for j in 1..<(m &+ 1) {
                key &+= 1
                out[j] = key
            }
        } else if m > 0 {
            let width = UInt64(l)
            let mask: UInt64 = l == 0 ? 0 : (~0 as UInt64) &>> (64 &- width)
            var j = 0
            var previous = firstKey
            var lowBit = lowerStart &* 8
            var w = 0
            while j < m {
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
                    guard j < m else { break }
                    word &= word &- 1
                    lowBit &+= l
                }
                w &+= 1
            }
            guard previous <= Format.maxNumber else { return nil }
        }
        let idsOut = ids.writer()
        if code.symbolCount <= 1 {
            for i in 0..<n { idsOut[i] = 0 }
            return 0
        }
        let decoder = code.decoder
        let table = decoder.table
        let syncEvery = 1 &<< syncShift
        let limit = valueBits
        var bit = 0
        var i = 0
        while i < n {
            // Sync entries: the bit offset of entry i for every i = k·2^syncShift, k ≥ 1.
            if i > 0 {
                guard Int(view.u16(Format.recordHeaderSize &+ 2 &* ((i &>> syncShift) &- 1))) == bit else { return nil }
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
        let m = n &- 1
        let u = lastKey &- firstKey
        if m > 0 && u == UInt64(m) {
            guard codec == Format.keyCodecRun else { return false }
        } else {
            guard codec == Format.keyCodecEliasFano else { return false }
            var expectedL = 0
            if m > 0, u / UInt64(m) >= 1 { expectedL = min(56, 63 &- (u / UInt64(m)).leadingZeroBitCount) }
            guard l == expectedL, upperWords == (m > 0 ? (Int(u &>> UInt64(l)) &+ m &+ 63) / 64 : 0) else { return false }
            var ones = 0
            for w in 0..<upperWords { ones &+= view.u64(upperStart &+ 8 &* w).nonzeroBitCount }
            guard ones == m else { return false }
            guard (valueStart &- lowerStart) == (m &* l &+ 7) / 8 else { return false }
            if m &* l % 8 != 0 {
                let last = view.u8(valueStart &- 1)
                guard last &>> UInt8(m &* l % 8) == 0 else { return false }
            }
        }
        guard (bit &+ 7) / 8 == valueBits / 8 else { return false }
        if bit % 8 != 0 {
            let last = view.u8(valueStart &+ bit / 8)
            guard last & (0xFF &>> UInt8(bit % 8)) == 0 else { return false }
        }
        return true
    }
}
