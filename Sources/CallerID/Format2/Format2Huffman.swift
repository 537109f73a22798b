// Format 2.0 prototype: the canonical, length-limited Huffman code of value ids.
//
// Value ids are numbered so that code lengths never decrease with the id. The code is then
// fully described by the number of codes of each length (`counts[1…maxCodeLength]`), and
// decoding maps a code to its id by arithmetic: no symbol table is stored or read.
// Bits are written MSB-first (stream bit k is bit 7 − k mod 8 of byte k / 8).

/// Format 2.0 constants of the prototype (see docs/FORMAT-2.0-DESIGN.md).
enum Format2 {
    static let magic: [UInt8] = Array("CIDB2PRO".utf8)
    static let major: UInt16 = 2
    static let minor: UInt16 = 0
    static let headerSize = 128
    /// The longest value code; the writer limits code lengths to it.
    static let maxCodeLength = 26
    /// Bits resolved by the decoder's first-level table (built at open, 2^bits × 4 bytes).
    static let fastBits = 10
    /// Largest number of entries in one block record.
    static let maxBlockEntries = 4096
    /// Block-index summary: one key every `summaryStride` blocks.
    static let summaryStride = 64
    /// Decoded bytes one cold label chunk may hold beyond its target (writer target + one label).
    static let maxChunkRaw = 4096 + 65_535 + 3
    static let maxLabelBytes = 65_535
}

/// Code lengths for symbols given in descending frequency order (ids 0…n−1), limited to
/// `Format2.maxCodeLength`: returns `counts[len]` (number of codes of each length). Lengths
/// are assigned in id order, shortest first, so they never decrease with the id.
func format2CodeLengthCounts(frequencies: [Int]) -> [Int] {
    let limit = Format2.maxCodeLength
    var counts = [Int](repeating: 0, count: limit + 1)
    let n = frequencies.count
    if n == 0 { return counts }
    if n == 1 {  // one symbol: a zero-bit code
        return counts
    }
    precondition(n <= 1 << limit, "too many values for the code length limit")
    // Huffman lengths by the two-queue method over ascending frequencies.
    let ascending = frequencies.reversed().map { max($0, 1) }  // leaves, ascending weight
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
    // Repay the Kraft debt of the clamped lengths: move the deepest non-limit code one level down.
    var kraft = 0  // in units of 2^-limit
    for len in 1...limit { kraft += counts[len] << (limit - len) }
    while kraft > 1 << limit {
        var len = limit - 1
        while counts[len] == 0 { len -= 1 }
        counts[len] -= 1
        counts[len + 1] += 1
        kraft -= 1 << (limit - len - 1)
    }
    return counts
}

/// The decoder of a canonical code given by its length counts.
struct Format2Code: Sendable {
    let maxLength: Int
    let symbolCount: Int
    /// Left-justified (to `maxLength` bits) limit of each length: a window `w` decodes to
    /// length L when L is the smallest length with `w < limit[L]`.
    let limit: [UInt32]
    /// First canonical code of each length, and the id of that code.
    let firstCode: [UInt32]
    let firstSymbol: [UInt32]
    /// `fastBits`-bit prefix → (length << 24 | id), or 0 when the code is longer.
    let fast: [UInt32]

    /// Validates the counts (read from a file): lengths 1…maxCodeLength, total = `symbols`,
    /// Kraft sum ≤ 1. Nil when they are not a valid prefix code.
    init?(counts: [Int], symbols: Int) {
        let maxL = Format2.maxCodeLength
        guard counts.count == maxL + 1, counts[0] == 0, symbols >= 0 else { return nil }
        symbolCount = symbols
        var total = 0
        var used = 0  // Kraft sum in units of 2^-maxL
        for len in 1...maxL {
            guard counts[len] >= 0, counts[len] <= 1 << 26 else { return nil }
            total += counts[len]
            used += counts[len] << (maxL - len)
        }
        guard used <= 1 << maxL else { return nil }
        if symbols <= 1 {
            guard total == 0 else { return nil }
        } else {
            guard total == symbols else { return nil }
        }
        var top = 0
        for len in 1...maxL where counts[len] > 0 { top = len }
        maxLength = max(top, 1)
        var limit = [UInt32](repeating: 0, count: maxL + 2)
        var firstCode = [UInt32](repeating: 0, count: maxL + 2)
        var firstSymbol = [UInt32](repeating: 0, count: maxL + 2)
        var code = 0, symbol = 0
        for len in 1...maxL {
            code <<= 1
            firstCode[len] = UInt32(code)
            firstSymbol[len] = UInt32(symbol)
            code += counts[len]
            symbol += counts[len]
            limit[len] = len <= maxLength ? UInt32(code << (maxLength - len)) : UInt32(code >> (len - maxLength))
        }
        self.limit = limit
        self.firstCode = firstCode
        self.firstSymbol = firstSymbol
        var fast = [UInt32](repeating: 0, count: 1 << Format2.fastBits)
        if symbols > 1 {
            for prefix in 0..<(1 << Format2.fastBits) {
                for len in 1...min(Format2.fastBits, maxLength) {
                    let c = UInt32(prefix >> (Format2.fastBits - len))
                    if c < firstCode[len] + UInt32(counts[len]) && c >= firstCode[len] {
                        fast[prefix] = UInt32(len) << 24 | (firstSymbol[len] + c - firstCode[len])
                        break
                    }
                }
            }
        }
        self.fast = fast
    }

    /// Decodes one code from `window` (the next stream bits, MSB-aligned, ≥ maxLength valid):
    /// (id, length). Length 0 only for a one-symbol (zero-bit) code. Nil for an unused code.
    @inline(__always)
    func decode(_ window: UInt64) -> (symbol: Int, length: Int)? {
        if symbolCount <= 1 { return (0, 0) }
        let f = fast.withUnsafeBufferPointer { $0[Int(truncatingIfNeeded: window &>> UInt64(64 - Format2.fastBits))] }
        if f != 0 { return (Int(f & 0xFF_FFFF), Int(f &>> 24)) }
        let w = UInt32(truncatingIfNeeded: window &>> UInt64(64 - maxLength))
        var len = Format2.fastBits + 1
        while len <= maxLength {
            if w < limit[len] {
                let c = w &>> UInt32(maxLength - len)
                let s = Int(firstSymbol[len]) + Int(c &- firstCode[len])
                return s < symbolCount ? (s, len) : nil
            }
            len += 1
        }
        return nil
    }

    /// Canonical code of each symbol (writer side).
    static func codes(counts: [Int]) -> [(code: UInt32, length: Int)] {
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
}

/// MSB-first bit writer for the value streams.
struct Format2MSBWriter {
    var bytes: [UInt8] = []
    var bitCount = 0
    mutating func write(_ code: UInt32, _ length: Int) {
        var i = length - 1
        while i >= 0 {
            if bitCount & 7 == 0 { bytes.append(0) }
            if (code >> UInt32(i)) & 1 == 1 { bytes[bytes.count - 1] |= UInt8(0x80 >> (bitCount & 7)) }
            bitCount += 1
            i -= 1
        }
    }
}

/// LSB-first bit writer (Elias–Fano lower bits and upper bit arrays).
struct Format2LSBWriter {
    var bytes: [UInt8] = []
    var bitCount = 0
    mutating func write(_ value: UInt64, _ width: Int) {
        for i in 0..<width {
            if bitCount & 7 == 0 { bytes.append(0) }
            if (value >> UInt64(i)) & 1 == 1 { bytes[bytes.count - 1] |= UInt8(1 << (bitCount & 7)) }
            bitCount += 1
        }
    }
    mutating func setBit(_ position: Int) {
        while bytes.count <= position >> 3 { bytes.append(0) }
        bytes[position >> 3] |= UInt8(1 << (position & 7))
        bitCount = max(bitCount, position + 1)
    }
}
