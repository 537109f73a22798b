// Formats 2.0 and 3.0, section kind 4: the Elias–Fano part of a block record's keys (docs/
// FORMAT.md §5.4), for key codecs 0 (every key after the first) and 2 (the keys the gap-1
// bitmap leaves, GapBitmap.swift). r strictly ascending elements e_i = k − k_0, each split into
// high_i = e_i >> l and low_i = e_i & (2^l − 1):
//
//   upper bits (upperWords u64 words, LSB first): bit high_i + i set for each i, all others 0;
//              the i-th set bit at p_i gives high_i = p_i − i
//   lower bits (lowerBytes bytes): field i of width l at bit i·l, LSB first
//
// The reader here walks them for one key (``BlockRecord/findKey(_:_:)``) and for all
// (``BlockRecord/decodeElements(firstKey:_:_:)``), both generic over which keys are elements
// (``GapOnes``); the writer's rule and encoder are ``EliasFano``'s.

extension BlockRecord {
    /// Lower field j (low_j).
    @inline(__always) func lower(_ j: Int) -> UInt64 {
        view.bits(at: lowerStart &* 8 &+ j &* lowerWidth, width: lowerWidth)
    }

    /// The entry index of key `x` (> 0) above the block's first key, or nil: the last element
    /// ≤ x, then, with gap-1 keys (codec 2), the run of them after it must reach x.
    @inline(__always)
    func findKey<Gaps: GapOnes>(_ x: UInt64, _ gaps: Gaps) -> Int? {
        guard let (i, value) = elementAtOrBelow(x, exactly: !Gaps.hasOnes) else { return nil }
        var q = -1  // the position of element i (entry q + 1); −1: the first key
        if i >= 0 {
            guard let p = gaps.position(ofElement: i) else { return nil }
            q = p
        }
        let t = x &- value
        if t == 0 { return q &+ 1 }
        guard Gaps.hasOnes, t < UInt64(entryCount &- 1 &- q) else { return nil }
        let end = q &+ Int(t)  // x's position: positions q + 1 … end must all be gap 1
        return gaps.nextElement(after: q) > end ? end &+ 1 : nil
    }

    /// The last Elias–Fano element ≤ `y` — its index (−1 when every element is above `y`) and
    /// value; nil when the upper bits disagree with the element count, or, `exactly`, when no
    /// element is `y` (what a search without gap-1 keys needs: it stops at the first element
    /// of y's bucket above y).
    @inline(__always)
    func elementAtOrBelow(_ y: UInt64, exactly: Bool) -> (index: Int, value: UInt64)? {
        let r = elementCount
        guard r > 0 else { return exactly ? nil : (-1, 0) }
        let l = UInt64(lowerWidth)
        let h = y &>> l
        let totalBits = upperWords &* 64
        // bucketStart = the position just after the h-th zero of the upper bits (the end of
        // the upper bits when they hold fewer zeros); before = the set bits before it.
        var bucketStart = 0
        var before = 0
        if h > 0 {
            let (zero, zeros) = selectZero(view, at: upperStart, words: upperWords, Int(h) &- 1)
            if let zero {
                bucketStart = zero &+ 1
                before = bucketStart &- Int(h)
            } else {
                if exactly { return nil }
                bucketStart = totalBits
                before = totalBits &- zeros
            }
        }
        guard before <= r else { return nil }
        // The elements of bucket h (high part h) that are ≤ y.
        let target = y & ((1 &<< l) &- 1)
        var p = bucketStart
        var i = before
        var found = -1
        var value: UInt64 = 0
        while p < totalBits, i < r {
            guard (view.u64(upperStart &+ 8 &* (p &>> 6)) &>> UInt64(p & 63)) & 1 == 1 else { break }
            let low = lower(i)
            if low > target { break }
            found = i
            value = h &<< l | low
            if low == target { return (i, value) }  // the elements ascend: none after is ≤ y
            p &+= 1
            i &+= 1
        }
        if exactly { return nil }
        if found >= 0 { return (found, value) }
        // Else the last element before the bucket: the last set bit before bucketStart.
        guard before > 0 else { return (-1, 0) }
        var w = (bucketStart &- 1) &>> 6
        var word = view.u64(upperStart &+ 8 &* w)
        let top = (bucketStart &- 1) & 63
        if top < 63 { word &= (1 &<< UInt64(top &+ 1)) &- 1 }
        while word == 0 {
            guard w > 0 else { return nil }
            w &-= 1
            word = view.u64(upperStart &+ 8 &* w)
        }
        let position = 64 &* w &+ 63 &- word.leadingZeroBitCount
        let high = UInt64(position &- (before &- 1))
        return (before &- 1, high &<< l | lower(before &- 1))
    }

    /// The keys after the first into `out[1 ... m]`: one above the key before where `gaps`
    /// says so, else the next element (the upper words in order) above the first key. False
    /// when the upper bits run out, an element is not above the key before it, or the last
    /// key is beyond the largest number (the keys ascend, so only the last needs that check).
    @inline(__always)
    func decodeElements<Gaps: GapOnes>(firstKey: UInt64, _ out: FixedBufferWriter<UInt64>, _ gaps: Gaps) -> Bool {
        var gaps = gaps
        let deltas = entryCount &- 1
        let width = UInt64(lowerWidth)
        let mask: UInt64 = lowerWidth == 0 ? 0 : (~0 as UInt64) &>> (64 &- width)
        var previous = firstKey
        var lowBit = lowerStart &* 8
        var upperWord: UInt64 = 0
        var w = -1
        var i = 0
        for j in 0..<deltas {
            if gaps.nextIsOne(j) {
                previous &+= 1
            } else {
                while upperWord == 0 {
                    w &+= 1
                    guard w < upperWords else { return false }
                    upperWord = view.u64(upperStart &+ 8 &* w)
                }
                // Element i is the i-th set bit, at p = 64w + tz: its high part is p − i.
                let high = UInt64(64 &* w &+ upperWord.trailingZeroBitCount &- i)
                let low = (view.u64(lowBit &>> 3) &>> UInt64(lowBit & 7)) & mask
                let key = firstKey &+ (high &<< width | low)
                guard key > previous else { return false }
                previous = key
                upperWord &= upperWord &- 1
                lowBit &+= lowerWidth
                i &+= 1
            }
            out[j &+ 1] = previous
        }
        return previous <= Format.maxNumber
    }

    /// For verify: the Elias–Fano part of `elements` (≥ 1) below `span` as the writer writes
    /// it — its width and words, exactly `elements` set upper bits, and zero unused lower bits.
    func isCanonicalEliasFano(elements r: Int, span u: UInt64) -> Bool {
        let l = EliasFano.lowerWidth(elements: r, span: u)
        guard lowerWidth == l, upperWords == EliasFano.upperWords(elements: r, span: u, lowerWidth: l) else { return false }
        var ones = 0
        for w in 0..<upperWords { ones &+= view.u64(upperStart &+ 8 &* w).nonzeroBitCount }
        guard ones == r else { return false }
        guard (valueStart &- lowerStart) == (r &* l &+ 7) / 8 else { return false }
        if r &* l % 8 != 0 {
            let last = view.u8(valueStart &- 1)
            guard last &>> UInt8(r &* l % 8) == 0 else { return false }
        }
        return true
    }
}

/// Position of the `k`-th set bit (0-based, k < popcount) of `word`.
@inline(__always)
func selectSetBit(_ word: UInt64, _ k: Int) -> Int {
    var v = word
    var remaining = k
    var p = 0
    while true {
        let byteOnes = (v & 0xFF).nonzeroBitCount
        if remaining < byteOnes { break }
        remaining &-= byteOnes
        v &>>= 8
        p &+= 8
    }
    while remaining > 0 {
        v &= v &- 1
        remaining &-= 1
    }
    return p &+ v.trailingZeroBitCount
}

/// The position of the `k`-th zero bit (0-based) of the `words` u64 words at `at` of `view`,
/// or nil and the zeros they hold when they hold no more than k.
@inline(__always)
func selectZero(_ view: ByteView, at: Int, words: Int, _ k: Int) -> (position: Int?, zeros: Int) {
    var remaining = k
    var w = 0
    while w < words {
        let word = ~view.u64(at &+ 8 &* w)
        let zeros = word.nonzeroBitCount
        if remaining < zeros { return (64 &* w &+ selectSetBit(word, remaining), 0) }
        remaining &-= zeros
        w &+= 1
    }
    return (nil, k &- remaining)
}

/// The writer's Elias–Fano: its choice of width and words (docs/FORMAT.md §5.4, "Writer
/// choice") and the encoding of the elements.
enum EliasFano {
    /// The widest lower-bit field: a field and its shift fit one unaligned u64 load.
    static let maxLowerWidth = 56

    /// Bytes of the writer's Elias–Fano part for `elements` values, the largest `span`.
    static func bytes(elements r: Int, span u: UInt64) -> Int {
        let l = lowerWidth(elements: r, span: u)
        return 8 * upperWords(elements: r, span: u, lowerWidth: l) + (r * l + 7) / 8
    }

    /// The writer's width: floor(log2(u div r)), at most 56; 0 when u div r = 0.
    static func lowerWidth(elements r: Int, span u: UInt64) -> Int {
        guard r > 0, u / UInt64(r) >= 1 else { return 0 }
        return min(maxLowerWidth, 63 - (u / UInt64(r)).leadingZeroBitCount)
    }

    /// The writer's number of upper words: ceil(((u >> l) + r) / 64), none for r = 0.
    static func upperWords(elements r: Int, span u: UInt64, lowerWidth l: Int) -> Int {
        r > 0 ? (Int(u >> UInt64(l)) + r + 63) / 64 : 0
    }

    /// The width, upper words and lower bytes of ascending `elements` (none: all empty).
    static func encode(_ elements: [UInt64]) -> (width: Int, upper: [UInt64], lower: [UInt8]) {
        guard let span = elements.last else { return (0, [], []) }
        let width = lowerWidth(elements: elements.count, span: span)
        var upper = [UInt64](repeating: 0, count: upperWords(elements: elements.count, span: span, lowerWidth: width))
        var lower = BitWriter()
        for (i, x) in elements.enumerated() {
            let p = Int(x >> UInt64(width)) + i
            upper[p >> 6] |= 1 << UInt64(p & 63)
            lower.write(x, width: width)
        }
        lower.alignToByte()
        return (width, upper, lower.bytes)
    }
}
