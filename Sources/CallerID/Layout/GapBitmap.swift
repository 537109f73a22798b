// Format 3.0, section kind 4, key codec 2: the gap-1 bitmap of a block record (docs/FORMAT.md
// §5.4). Bit j (bit j mod 64 of u64 word j div 64, LSB first) is 1 when key k_{j+1} = k_j + 1,
// else 0; the keys with a 0 bit are the Elias–Fano elements (EliasFano.swift), in order.
//
//   bit j of the bitmap:   0        1   1   0        1   0          (m = 6, r = 3)
//   key k_{j+1}:           k_0+e_0, +1, +1, k_0+e_1, +1, k_0+e_2
//
// Key codec 0 is the same walk with no bitmap (every key an element): ``GapOnes`` says which,
// and the one key search and the one key decoder over the elements (EliasFano.swift) are
// generic over it, compiled once per codec.

/// Which keys of a block are one above the key before them: the gap-1 bitmap (key codec 2) or
/// none (key codec 0, ``NoGapOnes``). Positions j = 0 … m − 1 stand for keys k_1 … k_m.
protocol GapOnes {
    /// False when no key is (codec 0): a key search then needs an element equal to the key.
    static var hasOnes: Bool { get }
    /// The position of Elias–Fano element `k` (its key is k_{position + 1}); nil when the
    /// bitmap has fewer than k + 1 zero bits among its m.
    func position(ofElement k: Int) -> Int?
    /// The first position after `q` (≥ −1) whose key is an element, or m when none is.
    func nextElement(after q: Int) -> Int
    /// Whether the key at position `j` is one above the key before, for j = 0, 1, 2… in turn
    /// (a walk over the whole block).
    mutating func nextIsOne(_ j: Int) -> Bool
}

/// Key codec 0: every key after the first is an Elias–Fano element.
struct NoGapOnes: GapOnes {
    static var hasOnes: Bool { false }
    @inline(__always) func position(ofElement k: Int) -> Int? { k }
    @inline(__always) func nextElement(after q: Int) -> Int { q &+ 1 }
    @inline(__always) mutating func nextIsOne(_ j: Int) -> Bool { false }
}

/// Key codec 2's bitmap, read from a checked record.
struct GapBitmap: GapOnes {
    private let view: ByteView
    private let start: Int
    /// m: the bitmap's bits (the keys after the first).
    private let count: Int
    /// The word of the walk (``nextIsOne(_:)``), shifted to its next bit.
    private var bits: UInt64 = 0

    init(_ record: BlockRecord) {
        view = record.view
        start = record.bitmapStart
        count = record.entryCount &- 1
    }

    static var hasOnes: Bool { true }

    @inline(__always)
    func position(ofElement k: Int) -> Int? {
        guard let p = selectZero(view, at: start, words: (count &+ 63) &>> 6, k).position, p < count else { return nil }
        return p
    }

    @inline(__always)
    func nextElement(after q: Int) -> Int {
        let from = q &+ 1
        var w = from &>> 6
        guard from < count else { return count }
        var word = ~view.u64(start &+ 8 &* w) & ((~0 as UInt64) &<< UInt64(from & 63))
        while true {
            if word != 0 { return min(count, 64 &* w &+ word.trailingZeroBitCount) }
            w &+= 1
            guard w &* 64 < count else { return count }
            word = ~view.u64(start &+ 8 &* w)
        }
    }

    @inline(__always)
    mutating func nextIsOne(_ j: Int) -> Bool {
        if j & 63 == 0 { bits = view.u64(start &+ (j &>> 3)) }
        defer { bits &>>= 1 }
        return bits & 1 != 0
    }

    /// Set bits among the first `bits` (≥ 1) of the u64 words at `at` (bits past them ignored):
    /// the keys one above the key before, so m minus them are the elements.
    @inline(__always)
    static func ones(_ view: ByteView, at: Int, bits: Int) -> Int {
        let words = (bits &+ 63) &>> 6
        var count = 0
        for w in 0..<(words &- 1) { count &+= view.u64(at &+ 8 &* w).nonzeroBitCount }
        let tail = bits &- 64 &* (words &- 1)  // 1 … 64
        let mask: UInt64 = tail == 64 ? ~0 : (1 &<< UInt64(tail)) &- 1
        return count &+ (view.u64(at &+ 8 &* (words &- 1)) & mask).nonzeroBitCount
    }

    /// For verify: the bitmap holds exactly the gap-1 keys of `keys[0 ... m]`, and zeros after.
    func isCanonical(keys: borrowing FixedBuffer<UInt64>) -> Bool {
        for w in 0..<((count &+ 63) &>> 6) {
            var expected: UInt64 = 0
            for j in (64 &* w)..<min(count, 64 &* w &+ 64) where keys[j &+ 1] &- keys[j] == 1 {
                expected |= 1 &<< UInt64(j & 63)
            }
            guard view.u64(start &+ 8 &* w) == expected else { return false }
        }
        return true
    }

    // MARK: Writer

    /// The bitmap of keys `k_0 … k_m` and the elements its zero bits leave to Elias–Fano
    /// (`k_{j+1} − k_0` of each key not one above the key before).
    static func encode(_ keys: ArraySlice<UInt64>) -> (words: [UInt64], elements: [UInt64]) {
        let first = keys.startIndex
        let deltas = keys.count - 1
        var words = [UInt64](repeating: 0, count: (deltas + 63) / 64)
        var elements: [UInt64] = []
        for j in 0..<deltas {
            let key = keys[first + 1 + j]
            if key - keys[first + j] == 1 {
                words[j >> 6] |= 1 << UInt64(j & 63)
            } else {
                elements.append(key - keys[first])
            }
        }
        return (words, elements)
    }

    /// Key bytes of codec 2 for a block of `shape`: the bitmap words and Elias–Fano over the
    /// keys not one above the key before.
    static func keyBytes(_ shape: BlockRecord.KeyShape) -> Int {
        8 * ((shape.deltas + 63) / 64) + EliasFano.bytes(elements: shape.deltas - shape.gapOnes, span: shape.lastOther)
    }
}
