// Format 2.0: the canonical, length-limited Huffman code of value ids, and section kind 5, the
// value code lengths that describe it (docs/FORMAT.md §5.5). Its writer and its reader, beside
// the drawing of section 5's bytes (little-endian):
//
//   offset  size  field       value
//   ------  ----  ----------  --------------------------------------------------------------------
//      4·L     4  counts[L]   the number of value codes of L bits, L = 0 … 26 (counts[0] = 0)
//
// 108 bytes. Value ids are numbered so that code lengths never decrease with the id. The code is
// then fully described by the counts, and decoding maps a code to its id by arithmetic: no
// symbol table is stored or read. Checked at open: counts[0] = 0, each ≤ 2^26, their sum the
// value count (0 when it is ≤ 1: a zero-bit code), and the Kraft sum ≤ 1.
// Bits are written MSB-first (stream bit k is bit 7 − k mod 8 of byte k / 8).

/// Code lengths for symbols given in descending frequency order (ids 0…n−1), limited to
/// `Format.maxCodeLength`: returns `counts[len]` (number of codes of each length). Lengths
/// are assigned in id order, shortest first, so they never decrease with the id.
func valueCodeLengthCounts(frequencies: [Int]) -> [Int] {
    let limit = Format.maxCodeLength
    var counts = [Int](repeating: 0, count: limit + 1)
    let n = frequencies.count
    if n <= 1 { return counts }  // zero or one symbol: a zero-bit code
    precondition(n <= 1 << limit, "too many values for the code length limit")
    // Huffman lengths by the two-queue method over ascending frequencies.
    let ascending = frequencies.reversed().map { max($0, 1) }
    var weight = [Int](ascending)
    var parent = [Int](repeating: -1, count: 2 * n - 1)
    weight.reserveCapacity(2 * n - 1)
    var leaf = 0, node = n
    func pick() -> Int {
        if leaf < n && (node >= weight.count || weight[leaf] <= weight[node]) {
            leaf += 1
            return leaf - 1
        }
        node += 1
        return node - 1
    }
    for _ in 0..<(n - 1) {
        let a = pick(), b = pick()
        let id = weight.count
        weight.append(weight[a] + weight[b])
        parent[a] = id
        parent[b] = id
    }
    var depth = [Int](repeating: 0, count: 2 * n - 1)
    for i in stride(from: 2 * n - 3, through: 0, by: -1) { depth[i] = depth[parent[i]] + 1 }
    for i in 0..<n { counts[min(depth[i], limit)] += 1 }
    repayKraftDebt(&counts, limit: limit)
    return counts
}

/// Repays the Kraft debt of code lengths clamped at `limit` (`counts[len]`: codes of length
/// `len`): moves the deepest code above the limit one level down until the lengths form a
/// prefix code again.
func repayKraftDebt(_ counts: inout [Int], limit: Int) {
    var kraft = 0  // in units of 2^-limit
    for len in 1...limit { kraft += counts[len] << (limit - len) }
    while kraft > 1 << limit {
        var len = limit - 1
        while counts[len] == 0 { len -= 1 }
        counts[len] -= 1
        counts[len + 1] += 1
        kraft -= 1 << (limit - len - 1)
    }
}

/// Section 5's bytes: `counts[L]` for L = 0 … maxCodeLength.
func encodeValueCodeLengths(_ counts: [Int]) -> [UInt8] {
    var out: [UInt8] = []
    for c in counts { out.appendLE(UInt32(c)) }
    assert(out.count == ValueCode.lengthsSize)
    return out
}

/// Canonical code of each id (writer side): ids in order, lengths from `counts`.
func valueCodes(counts: [Int]) -> [(code: UInt32, length: Int)] {
    var out: [(code: UInt32, length: Int)] = []
    var code: UInt32 = 0
    for len in 1..<counts.count {
        code <<= 1
        for _ in 0..<counts[len] {
            out.append((code, len))
            code += 1
        }
    }
    return out
}

/// The decoder of a canonical code given by its length counts (read from a file, validated).
/// Its tables live in one buffer made at open; decoding reads them through ``decoder``.
final class ValueCode: Sendable {
    let maxLength: Int
    let symbolCount: Int
    /// fast[prefix] for the next `fastBits` bits: (length << 24 | id), or, when the code is
    /// longer, (shortest length << 24 | longest length, 0 when the prefix holds a window that is no code).
    /// Then per length L (1…maxCodeLength): limit[L] (left-justified to maxLength bits),
    /// firstCode[L], firstSymbol[L].
    private let table: FixedBuffer<UInt32>
    fileprivate static let limitBase = 1 << Format.fastBits
    fileprivate static let firstCodeBase = limitBase + Format.maxCodeLength + 2
    fileprivate static let firstSymbolBase = firstCodeBase + Format.maxCodeLength + 2
    private static let tableWords = firstSymbolBase + Format.maxCodeLength + 2
    /// Bytes of section 5: a u32 count per length 0 … maxCodeLength.
    static let lengthsSize = 4 * (Format.maxCodeLength + 1)

    /// The code of `valueCount` values described by section 5 (`lengths`): *corrupt* unless it
    /// is 108 bytes long and its counts form a prefix code for exactly those values.
    static func read(_ lengths: ByteView, valueCount: Int, path: String) throws(CallerIDError) -> ValueCode {
        try SectionTable.checkLength(.codeLengths, lengths, lengthsSize, path: path)
        guard let code = ValueCode(counts: (0...Format.maxCodeLength).map { Int(lengths.u32(4 * $0)) }, symbols: valueCount) else {
            throw CallerIDError.corrupt(path, "value code lengths are not a prefix code for \(valueCount) values")
        }
        return code
    }

    /// Validates the counts: lengths 1…maxCodeLength, total = `symbols` (none when
    /// `symbols` ≤ 1: a zero-bit code), Kraft sum ≤ 1. Nil when they are not a prefix code.
    init?(counts: [Int], symbols: Int) {
        let maxL = Format.maxCodeLength
        guard counts.count == maxL + 1, counts[0] == 0, symbols >= 0 else { return nil }
        var total = 0
        var used = 0  // Kraft sum in units of 2^-maxL
        for len in 1...maxL {
            guard counts[len] >= 0, counts[len] <= 1 << maxL else { return nil }
            total += counts[len]
            used += counts[len] << (maxL - len)
        }
        guard used <= 1 << maxL, total == (symbols <= 1 ? 0 : symbols) else { return nil }
        symbolCount = symbols
        var top = 1
        for len in 1...maxL where counts[len] > 0 { top = len }
        maxLength = top
        var table = FixedBuffer<UInt32>(repeating: 0, count: ValueCode.tableWords)
        var code = 0, symbol = 0
        for len in 1...maxL {
            code <<= 1
            table[ValueCode.firstCodeBase + len] = UInt32(code)
            table[ValueCode.firstSymbolBase + len] = UInt32(symbol)
            code += counts[len]
            symbol += counts[len]
            table[ValueCode.limitBase + len] = len <= maxLength ? UInt32(code << (maxLength - len)) : UInt32(code >> (len - maxLength))
        }
        if symbols > 1 {
            // Fill the first-level table: every code of length ≤ fastBits covers a run of
            // prefixes. Every other prefix starts a longer code (or none): its entry holds, in
            // the length field, the shortest length a code with that prefix can have, where
            // the slow path starts its search, and in the low byte the longest (0 when some
            // window with the prefix is no code). Lengths grow with the window, so where the
            // two agree every code with the prefix has that length: no search. In a deep
            // code most long prefixes are such (study profile: 19% of the codes read are
            // longer than the fast table, most of them 22 bits).
            var c = 0
            for len in 1...min(Format.fastBits, maxL) {
                c <<= 1
                for k in 0..<counts[len] {
                    let id = Int(table[ValueCode.firstSymbolBase + len]) + k
                    let span = 1 << (Format.fastBits - len)
                    let from = (c + k) << (Format.fastBits - len)
                    for p in from..<(from + span) { table[p] = UInt32(len) << 24 | UInt32(id) }
                }
                c += counts[len]
            }
            for p in 0..<(1 << Format.fastBits) where table[p] == 0 {
                var start = Format.fastBits + 1
                var last = 0
                if maxLength > Format.fastBits {
                    let rest = UInt32(maxLength - Format.fastBits)
                    let w = UInt32(p) << rest  // the smallest window with this prefix
                    while start < maxLength && w >= table[ValueCode.limitBase + start] { start += 1 }
                    let top = w | ((1 << rest) - 1)  // the largest
                    var len = start
                    while len <= maxLength && top >= table[ValueCode.limitBase + len] { len += 1 }
                    if len <= maxLength { last = len }
                }
                table[p] = UInt32(start) << 24 | UInt32(last)
            }
        }
        self.table = table
    }

    /// A copy of the decoding state for a hot loop (the table lent read-only and two integers,
    /// which stay in registers; the table stays owned by this object, which must outlive the copy).
    @inline(__always)
    var decoder: ValueDecoder { ValueDecoder(table: table.elements, maxLength: maxLength, symbolCount: symbolCount) }

    /// See ``ValueDecoder/decode(_:)``.
    @inline(__always)
    func decode(_ window: UInt64) -> (symbol: Int, length: Int)? { decoder.decode(window) }
}

/// The decoding state of a ``ValueCode`` as a value.
struct ValueDecoder {
    /// The code's table, lent by the ``ValueCode`` (indices below its size by construction:
    /// a prefix of `fastBits` bits, or a length ≤ maxCodeLength past a base).
    let table: UnsafeBufferPointer<UInt32>
    let maxLength: Int
    let symbolCount: Int

    /// Decodes one code from `window` (the next stream bits, MSB-aligned; bits past the
    /// stream's end are whatever follows it): (id, length). Length 0 only for a zero-bit code.
    /// Nil for a window that starts with no valid code. The caller checks the length against
    /// the bits left.
    @inline(__always)
    func decode(_ window: UInt64) -> (symbol: Int, length: Int)? {
        if symbolCount <= 1 { return (0, 0) }
        let f = fastEntry(window)
        let len = Int(f &>> 24)
        if len <= Format.fastBits { return (Int(f & 0xFF_FFFF), len) }
        return decodeSlow(window, entry: f)
    }

    /// The length of the code at the head of `window`, its id left unread (a lookup's walk
    /// from a sync point to its entry); nil where ``decode(_:)`` is nil. The fast entry gives
    /// the length of every short code and of a long one whose prefix's codes all have one
    /// length; only the other long prefixes are searched, out of line.
    @inline(__always)
    func length(_ window: UInt64) -> Int? {
        if symbolCount <= 1 { return 0 }
        let f = fastEntry(window)
        if !ValueDecoder.mustSearch(f) { return Int(f &>> 24) }
        return decodeSlow(window, entry: f)?.length
    }

    /// The fast table's entry for the first `fastBits` bits of `window`.
    @inline(__always)
    func fastEntry(_ window: UInt64) -> UInt32 {
        table[Int(truncatingIfNeeded: window &>> UInt64(64 &- Format.fastBits))]
    }

    /// True when fast entry `f`'s length field is not the code's length: a long prefix whose
    /// codes differ in length, searched from there (``decodeLong(_:entry:)``). Every short
    /// code's entry and a long prefix's whose shortest and longest agree give the length.
    /// Tested without a branch on the length: a fifth of a deep code's codes are long, in no
    /// order a predictor learns.
    @inline(__always)
    static func mustSearch(_ f: UInt32) -> Bool {
        let length = Int(f &>> 24)
        let long = (Format.fastBits &- length) &>> 63  // −1 for a long prefix's entry, else 0
        return long & (length ^ Int(f & 0xFF)) != 0
    }

    /// A code longer than fastBits, from the window and its prefix's `entry` in the fast
    /// table: the code's length read there when every code with the prefix has the same,
    /// else searched from the shortest such a code can have.
    @inline(never)
    func decodeSlow(_ window: UInt64, entry: UInt32) -> (symbol: Int, length: Int)? {
        decodeLong(window, entry: entry)
    }

    /// The id of the code of `length` bits at the head of `window`, a length its fast-table
    /// entry gave (or ``decodeLong(_:entry:)`` found): the first id of that length plus the
    /// code's place among the codes of that length (the canonical code's rule, for short and
    /// long codes alike).
    @inline(__always)
    func canonicalSymbol(_ window: UInt64, length: Int) -> Int {
        let c = UInt32(truncatingIfNeeded: window &>> UInt64(64 &- length))
        return Int(table[ValueCode.firstSymbolBase &+ length]) &+ Int(c &- table[ValueCode.firstCodeBase &+ length])
    }

    /// ``decodeSlow(_:entry:)`` inlined: for loops over a whole block (the scan, verify),
    /// where a long code is common enough for the call to cost more than the decode.
    @inline(__always)
    func decodeLong(_ window: UInt64, entry: UInt32) -> (symbol: Int, length: Int)? {
        let w = UInt32(truncatingIfNeeded: window &>> UInt64(64 &- maxLength))
        var len = Int(entry &>> 24)
        if len != Int(entry & 0xFF) {
            while true {
                guard len <= maxLength else { return nil }
                if w < table[ValueCode.limitBase &+ len] { break }
                len &+= 1
            }
        }
        let s = canonicalSymbol(window, length: len)
        return s < symbolCount ? (s, len) : nil
    }
}

/// MSB-first bit writer (value streams).
struct MSBBitWriter {
    private(set) var bytes: [UInt8] = []
    private var acc: UInt64 = 0
    private var nbits = 0
    private(set) var bitCount = 0

    /// Appends the low `length` bits of `code` (length ≤ 32), most significant first.
    mutating func write(_ code: UInt32, _ length: Int) {
        guard length > 0 else { return }
        acc = acc << UInt64(length) | UInt64(code & UInt32(truncatingIfNeeded: (1 << UInt64(length)) - 1))
        nbits += length
        bitCount += length
        while nbits >= 8 {
            nbits -= 8
            bytes.append(UInt8(truncatingIfNeeded: acc >> UInt64(nbits)))
        }
        acc &= (1 << UInt64(nbits)) - 1
    }

    /// The bytes with the last partial byte zero-padded.
    var finished: [UInt8] {
        nbits == 0 ? bytes : bytes + [UInt8(truncatingIfNeeded: acc << UInt64(8 - nbits))]
    }
}
