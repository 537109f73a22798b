// Format 2.0: a static symbol table for cold labels (FSST-style).
//
// A cold label is stored as a string of code bytes that decodes on its own, without the other
// labels of a chunk. The idea follows Boncz, Neumann and Leis, "FSST: Fast Random Access String
// Compression" (VLDB 2020): a table of up to 255 symbols of 1…8 bytes, one code byte per symbol.
//
// Codes (one byte each):
//   0 ..< n     emit symbol `code` (1…8 bytes)
//   255         escape: the next code byte is emitted literally
//   n ... 254   invalid (the decoder returns nil)
// An escape as the last byte of a coded label is invalid.
//
// Serialized table, byte-exact (all single bytes, so no byte order question):
//   offset 0          u8  n                   number of symbols, 0…255
//   offset 1          n × u8                  symbol lengths, in code order, each 1…8
//   offset 1 + n      Σ lengths bytes         the symbols' bytes, concatenated in code order
// Total size = 1 + n + Σ lengths, exactly: the decoder refuses any other size, a length of 0 or
// more than 8, and a missing or trailing byte. A table with n = 0 is valid (every byte escaped).
//
// The writer trains the table on a sample of the distinct cold labels (`LabelSymbolTable.train`),
// serializes it once into the file and encodes every cold label with greedy longest match. The
// reader builds a `LabelSymbolDecoder` from the stored bytes once and decodes labels on demand.

// MARK: - Writer side

/// A symbol table for encoding labels (writer side). Immutable; copies share the index.
struct LabelSymbolTable {
    private let index: LabelSymbolIndex

    /// The largest number of symbols (code 255 is the escape).
    static let maxSymbols = 255
    /// The longest symbol, in bytes.
    static let maxSymbolLength = 8
    /// At most this many label bytes are sampled for training.
    static let sampleBudget = 1 << 20
    /// Training rounds (each encodes the sample with the current table and rebuilds it).
    static let rounds = 5
    /// Weight of a single-byte candidate's gain: above 1 keeps escapes (slow to decode) rare.
    static let singleByteWeight = 4

    /// A table of the given symbols (code i = symbols[i]); each 1…8 bytes, at most 255 of them.
    /// Duplicates are allowed (the first one wins when encoding).
    init(symbols: [[UInt8]]) {
        precondition(symbols.count <= Self.maxSymbols, "too many symbols")
        var packed: [PackedSymbol] = []
        packed.reserveCapacity(symbols.count)
        for s in symbols {
            precondition((1...Self.maxSymbolLength).contains(s.count), "symbol length must be 1…8")
            var word: UInt64 = 0
            for (k, b) in s.enumerated() { word |= UInt64(b) << (8 * UInt64(k)) }
            packed.append(PackedSymbol(word: word, length: s.count))
        }
        index = LabelSymbolIndex(packed)
    }

    private init(packed: [PackedSymbol]) {
        index = LabelSymbolIndex(packed)
    }

    var symbolCount: Int { index.count }

    /// The symbols in code order (for tests and diagnostics).
    var symbols: [[UInt8]] {
        (0..<index.count).map { c in
            let w = index.words[c]
            return (0..<Int(index.lengths[c])).map { UInt8(truncatingIfNeeded: w >> (8 * UInt64($0))) }
        }
    }

    /// The table's bytes as stored in the file (format at the top of this file).
    var serialized: [UInt8] {
        let n = index.count
        var out: [UInt8] = [UInt8(n)]
        out.reserveCapacity(1 + n + 8 * n)
        for c in 0..<n { out.append(index.lengths[c]) }
        for c in 0..<n {
            let w = index.words[c]
            for k in 0..<Int(index.lengths[c]) { out.append(UInt8(truncatingIfNeeded: w >> (8 * UInt64(k)))) }
        }
        return out
    }

    /// Appends the code bytes of `label` to `out`: at each position the longest symbol that
    /// matches, else an escape and the byte.
    func encode(_ label: [UInt8], into out: inout [UInt8]) {
        label.withUnsafeBytes { encode($0, into: &out) }
    }

    /// ``encode(_:into:)-([UInt8],_)`` of label bytes lent by the caller.
    func encode(_ buffer: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        let bytes = ByteView(buffer)
        let n = bytes.count
        var pos = 0
        while pos < n {
            let m = index.longestMatch(bytes, pos, n)
            if m.code >= 0 {
                out.append(UInt8(truncatingIfNeeded: m.code))
                pos &+= m.length
            } else {
                out.append(255)
                out.append(bytes.u8(pos))
                pos &+= 1
            }
        }
    }

    /// The number of code bytes `encode` would append for `label`.
    func encodedLength(_ label: [UInt8]) -> Int {
        label.withUnsafeBytes { buffer in
            let bytes = ByteView(buffer)
            let n = bytes.count
            var pos = 0, size = 0
            while pos < n {
                let m = index.longestMatch(bytes, pos, n)
                size &+= m.code >= 0 ? 1 : 2
                pos &+= m.code >= 0 ? m.length : 1
            }
            return size
        }
    }

    /// Trains a table on `labels` (the distinct cold labels). At most ~1 MiB is sampled: every
    /// k-th label, k chosen from the total size. Deterministic; no labels (or only empty ones)
    /// give a table of 0 symbols.
    ///
    /// Rounds as in FSST: encode the sample with the current table (greedy longest match),
    /// count how often each symbol or escaped byte is used and how often each pair of adjacent
    /// ones is (and each unit followed by the first byte of a multi-byte symbol); candidates are
    /// the used symbols and escaped bytes and the concatenation of each adjacent pair (cut at 8
    /// bytes), worth count × length (single bytes count `singleByteWeight`×); the best 255 form
    /// the next table. The last round adds no new concatenations, so the final table is chosen
    /// on measured uses, and the table that coded the sample smallest is returned.
    /// Measured on the study profile (distinct labels, 1 M entries, seed 1): counting every first
    /// byte of a match as a single-byte candidate made the code 10 % larger; more than 5 rounds
    /// did not help; single-byte weight 1 / 2 / 3 / 4 / 8 gave 7.2 / 3.3 / 1.5 / 0.5 / 0.1 %
    /// escapes, coded size 0.573 / 0.565 / 0.565 / 0.570 / 0.575 of the raw size, and decode
    /// 1.19 / 1.46 / 1.56 / 1.69 / 1.70 GB/s (an escape is a mispredicted branch).
    static func train<C: Collection>(_ labels: C) -> LabelSymbolTable where C.Element == [UInt8] {
        var total = 0
        for label in labels { total &+= label.count }
        var sample = LabelSample(totalBytes: total)
        for label in labels { label.withUnsafeBytes { sample.add($0) } }
        return train(sample)
    }

    /// Trains a table on `sample` (``train(_:)-(C)`` after sampling): a writer that streams its
    /// labels samples them as they pass.
    static func train(_ labelSample: LabelSample) -> LabelSymbolTable {
        let sample = labelSample.bytes
        let ends = labelSample.ends
        if sample.isEmpty { return LabelSymbolTable(packed: []) }

        let counter = LabelSymbolCounter()
        var table: [PackedSymbol] = []
        var best: [PackedSymbol] = []
        var bestSize = Int.max
        for round in 0..<rounds {
            let pairs = round < rounds - 1
            let index = LabelSymbolIndex(table)
            let size = counter.count(sample, ends, index, pairs: pairs)
            if size < bestSize { bestSize = size; best = table }
            table = counter.candidates(index, pairs: pairs, sampleBytes: sample.count)
        }
        let size = counter.count(sample, ends, LabelSymbolIndex(table), pairs: false)
        if size < bestSize { best = table }
        return LabelSymbolTable(packed: best)
    }
}

/// The labels a symbol table is trained on: every k-th label of those offered, k chosen from
/// their total size so that at most about ``LabelSymbolTable/sampleBudget`` bytes are kept
/// (empty labels are counted but not kept). Its memory is that budget whatever the labels.
struct LabelSample {
    /// Every `stride`-th label offered is kept.
    let stride: Int
    /// The kept labels back to back, and where each ends.
    private(set) var bytes: [UInt8] = []
    private(set) var ends: [Int] = []
    private var offered = 0

    /// A sample of labels whose sizes add up to `totalBytes`.
    init(totalBytes total: Int) {
        let budget = LabelSymbolTable.sampleBudget
        stride = total <= budget ? 1 : (total + budget - 1) / budget
        bytes.reserveCapacity(min(total, budget + 65_536))
    }

    /// Offers the next label (in the order the table's labels are coded).
    mutating func add(_ label: UnsafeRawBufferPointer) {
        if offered % stride == 0 && !label.isEmpty {
            bytes.append(contentsOf: label)
            ends.append(bytes.count)
        }
        offered &+= 1
    }
}

/// A symbol as a little-endian word (byte k in bits 8k…8k+7, zero above the length) and a length.
struct PackedSymbol: Hashable {
    var word: UInt64
    var length: Int
}

@inline(__always)
private func lowBytesMask(_ length: Int) -> UInt64 {
    length >= 8 ? ~0 : (1 &<< (8 &* UInt64(length))) &- 1
}

/// The bytes `pos..<n` of `bytes` (n ≤ its count), at most 8, as a little-endian word (zero
/// past the end).
@inline(__always)
private func loadWord(_ bytes: ByteView, _ pos: Int, _ n: Int) -> UInt64 {
    if n &- pos >= 8 { return bytes.u64(pos) }
    var w: UInt64 = 0
    var k = 0
    while pos &+ k < n {
        w |= UInt64(bytes.u8(pos &+ k)) &<< (8 &* UInt64(k))
        k &+= 1
    }
    return w
}

/// Greedy longest-match index over a symbol set: the 1-byte symbols by byte, the longer ones
/// grouped by their first two bytes, longest first. Immutable after init.
final class LabelSymbolIndex: Sendable {
    let count: Int
    let words: FixedBuffer<UInt64>     // 256, little-endian packed
    let lengths: FixedBuffer<UInt8>    // 256
    private let single: FixedBuffer<Int16>        // 256: code of the 1-byte symbol, or -1
    private let bucketStart: FixedBuffer<UInt16>  // 65,537: start of each 2-byte prefix's run in `multi`
    private let multi: FixedBuffer<UInt8>         // 256: codes of symbols of 2+ bytes

    init(_ symbols: [PackedSymbol]) {
        precondition(symbols.count <= LabelSymbolTable.maxSymbols)
        count = symbols.count
        var words = FixedBuffer<UInt64>(repeating: 0, count: 256)
        var lengths = FixedBuffer<UInt8>(repeating: 0, count: 256)
        var single = FixedBuffer<Int16>(repeating: -1, count: 256)
        var bucketStart = FixedBuffer<UInt16>(repeating: 0, count: 65_537)
        var multi = FixedBuffer<UInt8>(repeating: 0, count: 256)

        var multiCodes: [(prefix: Int, length: Int, code: Int)] = []
        for (c, s) in symbols.enumerated() {
            let word = s.word & lowBytesMask(s.length)
            words[c] = word
            lengths[c] = UInt8(s.length)
            if s.length == 1 {
                let b = Int(word & 0xFF)
                if single[b] < 0 { single[b] = Int16(c) }
            } else {
                multiCodes.append((Int(word & 0xFFFF), s.length, c))
            }
        }
        // Group by 2-byte prefix; within a group longest first, then by code (first one wins).
        multiCodes.sort { a, b in
            if a.prefix != b.prefix { return a.prefix < b.prefix }
            if a.length != b.length { return a.length > b.length }
            return a.code < b.code
        }
        // bucketStart[x] is the number of symbols whose prefix is below x: constant between
        // two prefixes, so it is filled in at most 256 runs (every training round and every
        // writer builds this index; a sum over all 65,537 entries was most of its cost).
        var filled = 0
        for (j, m) in multiCodes.enumerated() {
            bucketStart.fill(filled..<(m.prefix + 1), with: UInt16(j))
            filled = m.prefix + 1
            multi[j] = UInt8(m.code)
        }
        bucketStart.fill(filled..<65_537, with: UInt16(multiCodes.count))
        self.words = words
        self.lengths = lengths
        self.single = single
        self.bucketStart = bucketStart
        self.multi = multi
    }

    /// The longest symbol matching at byte `pos` of `bytes` (pos < n ≤ its count): its code and
    /// length, or code -1 (length 1) when no symbol matches.
    @inline(__always)
    func longestMatch(_ bytes: ByteView, _ pos: Int, _ n: Int) -> (code: Int, length: Int) {
        let word = loadWord(bytes, pos, n)
        let remaining = n &- pos
        if remaining >= 2 {
            let key = Int(truncatingIfNeeded: word & 0xFFFF)
            var j = Int(bucketStart[key])
            let end = Int(bucketStart[key &+ 1])
            while j < end {
                let c = Int(multi[j])
                let l = Int(lengths[c])
                if l <= remaining && (word ^ words[c]) & lowBytesMask(l) == 0 { return (c, l) }
                j &+= 1
            }
        }
        return (Int(single[Int(truncatingIfNeeded: word & 0xFF)]), 1)
    }
}

/// Training counters: uses of each unit (a symbol code 0…254, or 256 + b for the escaped byte b)
/// and of each adjacent pair of units, over one encoding of the sample.
private final class LabelSymbolCounter {
    static let units = 512
    // Used by one training at a time: no dynamic exclusivity checks.
    @exclusivity(unchecked) var single = FixedBuffer<UInt32>(repeating: 0, count: LabelSymbolCounter.units)
    @exclusivity(unchecked) var pair = FixedBuffer<UInt32>(repeating: 0, count: LabelSymbolCounter.units * LabelSymbolCounter.units)

    /// True while `pair` holds the counts of the last `count` (all zero before the first).
    private var pairsCounted = false

    /// Encodes the sample (labels ending at `ends`) and counts; returns the coded size.
    func count(_ sample: [UInt8], _ ends: [Int], _ index: LabelSymbolIndex, pairs: Bool) -> Int {
        if pairsCounted {
            // Every pair counted last time lies in the row of a unit counted last time: only
            // those rows are cleared (a small sample uses few units, and clearing the whole
            // 1 MiB table every round cost more than a small build's encoding).
            for u in 0..<Self.units where single[u] > 0 {
                pair.fill((u &* Self.units)..<((u &+ 1) &* Self.units), with: 0)
            }
            pairsCounted = false
        }
        single.fill(with: 0)
        pairsCounted = pairs
        var size = 0
        sample.withUnsafeBytes { buffer in
            let bytes = ByteView(buffer)
            var start = 0
            for end in ends {
                var pos = start
                var previous = -1
                while pos < end {
                    let m = index.longestMatch(bytes, pos, end)
                    let unit: Int
                    if m.code >= 0 {
                        unit = m.code
                        size &+= 1
                        if pairs && m.length > 1 && previous >= 0 {
                            // The previous unit extended by this symbol's first byte alone is a
                            // candidate too (symbols then grow a byte at a time, not only by
                            // whole symbols).
                            pair[previous &* Self.units &+ 256 &+ Int(bytes.u8(pos))] &+= 1
                        }
                    } else {
                        unit = 256 &+ Int(bytes.u8(pos))
                        size &+= 2
                    }
                    single[unit] &+= 1
                    if pairs && previous >= 0 { pair[previous &* Self.units &+ unit] &+= 1 }
                    previous = unit
                    pos &+= m.length
                }
                start = end
            }
        }
        return size
    }

    /// The next table from the counts of the last `count` with `index`.
    func candidates(_ index: LabelSymbolIndex, pairs: Bool, sampleBytes: Int) -> [PackedSymbol] {
        func symbol(_ unit: Int) -> PackedSymbol {
            unit >= 256
                ? PackedSymbol(word: UInt64(unit - 256), length: 1)
                : PackedSymbol(word: index.words[unit], length: Int(index.lengths[unit]))
        }
        var gains: [PackedSymbol: Int] = [:]
        var used: [Int] = []
        for u in 0..<Self.units where single[u] > 0 {
            used.append(u)
            let s = symbol(u)
            gains[s, default: 0] += Int(single[u]) * s.length * (s.length == 1 ? LabelSymbolTable.singleByteWeight : 1)
        }
        if pairs {
            // Pairs seen fewer times than this cannot reach the best 255 of a large sample.
            let minimum = UInt32(max(1, sampleBytes >> 16))
            for a in used {
                let sa = symbol(a)
                if sa.length == LabelSymbolTable.maxSymbolLength { continue }
                let row = a * Self.units
                for b in used where pair[row + b] >= minimum {
                    let sb = symbol(b)
                    let length = min(LabelSymbolTable.maxSymbolLength, sa.length + sb.length)
                    let word = (sa.word | (sb.word << (8 * UInt64(sa.length)))) & lowBytesMask(length)
                    gains[PackedSymbol(word: word, length: length), default: 0] += Int(pair[row + b]) * length
                }
            }
        }
        // Best gain first; ties by length (longer first), then bytes: a total order, so the
        // result does not depend on the dictionary's order.
        var ranked = gains.map { (symbol: $0.key, gain: $0.value) }
        ranked.sort { x, y in
            if x.gain != y.gain { return x.gain > y.gain }
            if x.symbol.length != y.symbol.length { return x.symbol.length > y.symbol.length }
            return x.symbol.word < y.symbol.word
        }
        return ranked.prefix(LabelSymbolTable.maxSymbols).map(\.symbol)
    }
}

// MARK: - Reader side

/// Decodes labels coded with a stored symbol table (reader side). Built once from untrusted
/// file bytes; copies share the table.
struct LabelSymbolDecoder {
    private let storage: LabelSymbolDecoderStorage

    /// Nil unless `bytes` is exactly a valid serialized table (format at the top of this file).
    init?(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count >= 1 else { return nil }
        let n = Int(bytes[0])
        guard bytes.count >= 1 + n else { return nil }
        var total = 1 + n
        for c in 0..<n {
            let l = Int(bytes[1 + c])
            guard l >= 1 && l <= LabelSymbolTable.maxSymbolLength else { return nil }
            total += l
        }
        guard total == bytes.count else { return nil }
        storage = LabelSymbolDecoderStorage(bytes, n)
    }

    var symbolCount: Int { storage.count }

    /// The table of no symbols (a file whose cold labels are LZ4 groups has none).
    static let empty: LabelSymbolDecoder = [UInt8(0)].withUnsafeBytes { LabelSymbolDecoder($0)! }

    /// Decodes `codes` into `out`. Returns the decoded length, or nil when the codes are invalid
    /// (a code ≥ symbolCount other than 255, or an escape as the last byte) or the output would
    /// exceed `out.count`. Reads only inside `codes`, writes only inside `out` (bytes there past
    /// the returned length, or on nil, are undefined).
    func decode(_ codes: UnsafeRawBufferPointer, into out: MutableByteView) -> Int? {
        let n = codes.count
        let capacity = out.count
        let symbols = storage.symbols.elements
        let lengths = storage.lengths.elements
        var i = 0
        var o = 0
        // Fast loop: while 8 bytes fit, store the whole symbol word and advance by its length.
        let fastLimit = capacity &- 8
        while i < n {
            let c = Int(codes[i])
            let l = Int(lengths[c])
            if l != 0 && o <= fastLimit {
                out.store(symbols[c], at: o)
                o &+= l
                i &+= 1
                continue
            }
            if l != 0 {
                // Tail (less than 8 bytes of room, so l < 8 once it fits): store exactly l
                // bytes, as 4 + 2 + 1.
                guard l <= capacity &- o else { return nil }
                var word = symbols[c]
                var k = 0
                if l & 4 != 0 {
                    out.store(UInt32(truncatingIfNeeded: word), at: o)
                    word &>>= 32
                    k = 4
                }
                if l & 2 != 0 {
                    out.store(UInt16(truncatingIfNeeded: word), at: o &+ k)
                    word &>>= 16
                    k &+= 2
                }
                if l & 1 != 0 {
                    out.store(UInt8(truncatingIfNeeded: word), at: o &+ k)
                }
                o &+= l
                i &+= 1
                continue
            }
            // Escape, or an invalid code.
            guard c == 255, i &+ 1 < n, o < capacity else { return nil }
            out.store(codes[i &+ 1], at: o)
            o &+= 1
            i &+= 2
        }
        return o
    }

    /// Code `code`'s symbol: its bytes (little-endian) and length, 0 for the escape and for a
    /// code the table does not define.
    func symbol(_ code: Int) -> (word: UInt64, length: Int) {
        (storage.symbols[code], Int(storage.lengths[code]))
    }

    /// The decoded length of `codes` without writing; nil when the codes are invalid.
    func decodedLength(_ codes: UnsafeRawBufferPointer) -> Int? {
        let n = codes.count
        let lengths = storage.lengths.elements
        var i = 0
        var o = 0
        while i < n {
            let c = Int(codes[i])
            let l = Int(lengths[c])
            if l != 0 {
                o &+= l
                i &+= 1
            } else {
                guard c == 255, i &+ 1 < n else { return nil }
                o &+= 1
                i &+= 2
            }
        }
        return o
    }
}

/// The label rule (``LabelText/ruleStep(_:_:)``) over a symbol table's codes, for verify: one
/// table load per code instead of decoding the label and reading its bytes. A label it passes
/// decodes, is at most 65,535 bytes and is one the rule allows; for any other (a joiner or a
/// variation selector in it, a refused or cut character, a bad code, more than 8,191 codes) it
/// says nothing, and the caller decodes the label and checks it (``LabelText/check(_:)``) for
/// the answer.
final class LabelSymbolAutomaton: Sendable {
    /// Row r of 32 states: the state after code r's symbol (r < 255; every state undecided
    /// for a code the table does not define), after byte r − 256 (an escaped byte).
    fileprivate let next: FixedBuffer<UInt8>
    /// The most codes whose label is surely at most 65,535 bytes (8 per code).
    private static let maxCodes = Format.maxLabelBytes / LabelSymbolTable.maxSymbolLength

    init(_ decoder: LabelSymbolDecoder) {
        let states = LabelText.ruleStates
        precondition(states == 32, "passes(_:) indexes rows by shifting")
        var next = FixedBuffer<UInt8>(repeating: LabelText.ruleUndecided, count: 512 * states)
        // The bytes' rows from the rule, then each symbol's rows through its bytes' rows.
        for byte in 0..<256 {
            for state in 0..<states { next[(256 + byte) * states + state] = LabelText.ruleStep(UInt8(state), UInt8(byte)) }
        }
        for code in 0..<255 {
            let symbol = decoder.symbol(code)
            guard symbol.length > 0 else { continue }  // no such code: undecided from every state
            for state in 0..<states {
                var s = state
                for k in 0..<symbol.length {
                    let byte = Int(truncatingIfNeeded: symbol.word >> (8 * UInt64(k))) & 0xFF
                    s = Int(next[(256 + byte) * states + s])
                }
                next[code * states + state] = UInt8(s)
            }
        }
        self.next = next
    }

    /// True when `codes` decode to a label the rule allows that holds no joiner nor variation
    /// selector; false when the label must be decoded and checked to know.
    func passes(_ codes: UnsafeRawBufferPointer) -> Bool {
        let n = codes.count
        guard n <= Self.maxCodes else { return false }
        let next = next.elements
        var state = Int(LabelText.ruleStart)
        var i = 0
        while i < n {
            var row = Int(codes[i])
            if row == 255 {
                guard i &+ 1 < n else { return false }
                i &+= 1
                row = 256 &+ Int(codes[i])
            }
            state = Int(next[row &<< 5 | state])
            i &+= 1
        }
        return state == Int(LabelText.ruleStart)
    }
}

extension LabelSymbolAutomaton {
    /// True when the raw label `bytes` (at most 65,535) is one the rule allows that holds no
    /// joiner nor variation selector (one table load per byte, the escaped-byte rows); false
    /// when ``LabelText/check(_:)`` must say. For the decoded LZ4 groups of a 3.1 file.
    func passes(bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count <= Format.maxLabelBytes else { return false }
        let next = next.elements
        var state = Int(LabelText.ruleStart)
        for byte in bytes { state = Int(next[(256 &+ Int(byte)) &<< 5 | state]) }
        return state == Int(LabelText.ruleStart)
    }
}

/// The decoder's table: 256 symbol words (little-endian: byte k of the symbol in bits 8k…8k+7,
/// zero above its length) and 256 lengths (0 for the escape and for invalid codes). Immutable
/// after init.
private final class LabelSymbolDecoderStorage: Sendable {
    let count: Int
    let symbols: FixedBuffer<UInt64>
    let lengths: FixedBuffer<UInt8>

    /// From a validated serialized table of `n` symbols.
    init(_ table: UnsafeRawBufferPointer, _ n: Int) {
        count = n
        var symbols = FixedBuffer<UInt64>(repeating: 0, count: 256)
        var lengths = FixedBuffer<UInt8>(repeating: 0, count: 256)
        var offset = 1 + n
        for c in 0..<n {
            let l = Int(table[1 + c])
            lengths[c] = UInt8(l)
            var word: UInt64 = 0
            for k in 0..<l { word |= UInt64(table[offset + k]) << (8 * UInt64(k)) }
            symbols[c] = word
            offset += l
        }
        self.symbols = symbols
        self.lengths = lengths
    }
}
