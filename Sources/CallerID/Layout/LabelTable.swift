// Format 2.0: the label table, sections 7, 8, 10 and 11 (docs/FORMAT.md §5.7–5.11, with the
// symbol table of §5.9 in LabelSymbolTable.swift), and the same parts P3, P4, P6 and P7 of the
// ranges section (§5.12) for its label parts. Its writer and its one reader, beside the drawing
// of its bytes (little-endian; values 0 ..< hotCount are hot, the others cold, coldGroups =
// ceil((valueCount − hotCount) / 8)):
//
//   section                 offset         size         field
//   ----------------------  -------------  -----------  -----------------------------------------
//   7  hot label offsets    4·v            4            hotOffsets[v], v = 0 … hotCount: hot value
//                                                       v's label is hotLabels[off[v], off[v + 1])
//   8  hot labels           hotOffsets[v]  …            the raw UTF-8 bytes, back to back, in id order
//   10 cold label index     4·g            4            coldIndex[g], g = 0 … coldGroups: where
//                                                       group g (cold numbers 8g … 8g + 7) starts
//                                                       in section 11; the last entry its length
//   11 cold labels          coldIndex[g]   …            per cold value of the group, in order:
//                                                       length  unsigned LEB128 varint, ≤ 3 bytes
//                                                       codes   `length` symbol-table code bytes
//
// Checked at open: hotOffsets[0] = 0, hotOffsets[hotCount] = length of section 8, coldIndex[0] = 0,
// coldIndex[coldGroups] = length of section 11, both offset tables of exact length. At use: each
// label's offsets ordered and inside its section, varints inside the group, ≤ 65,535 decoded bytes.

/// A table of hot (raw) and cold (symbol-coded) labels: sections 7–11 of a database (the
/// entries' labels, read by lookups, cursors and verify) and the table inside the ranges
/// section, whose labels are the parts range labels are made of. Every offset read from it is
/// checked before use. A class: lookups borrow it without retaining its parts.
@usableFromInline
final class LabelTable: Sendable {
    let valueCount: Int
    let hotCount: Int
    let hotOffsets: ByteView
    let hotLabels: ByteView
    let coldIndex: ByteView
    let coldLabels: ByteView
    let symbols: LabelSymbolDecoder
    let path: String
    /// "value" or "range label part" in messages.
    let what: String

    /// Checks the parts against each other in O(1) (the hot offsets' and the cold index's sizes
    /// and spans, the symbol table) and holds them; each label is checked again when it is read.
    ///
    /// - Parameters:
    ///   - what: the name of one label in messages ("value", "range label part").
    ///   - part: how a message names a part ("hot label offsets" → "section 'hot label offsets'").
    ///   - bad: the error for a damaged part, from a description.
    init(valueCount: Int, hotCount: Int, hotOffsets: ByteView, hotLabels: ByteView, coldIndex: ByteView, coldLabels: ByteView,
         symbolTable: ByteView, path: String, what: String,
         part: (String) -> String, bad: (String) -> CallerIDError) throws(CallerIDError) {
        func size(_ name: String, _ view: ByteView, _ expected: Int) throws(CallerIDError) {
            guard view.count == expected else { throw bad("\(part(name)) is \(view.count) bytes; it must be \(expected)") }
        }
        try size("hot label offsets", hotOffsets, 4 * (hotCount + 1))
        let coldGroups = (valueCount - hotCount + (1 << Format.coldGroupShift) - 1) >> Format.coldGroupShift
        try size("cold label index", coldIndex, 4 * (coldGroups + 1))
        guard hotOffsets.u32(0) == 0, Int(hotOffsets.u32(4 * hotCount)) == hotLabels.count else {
            throw bad("hot label offsets do not span the hot labels (first \(hotOffsets.u32(0)), last \(hotOffsets.u32(4 * hotCount)), \(hotLabels.count) bytes)")
        }
        guard coldIndex.u32(0) == 0, Int(coldIndex.u32(4 * coldGroups)) == coldLabels.count else {
            throw bad("cold label index does not span the cold labels")
        }
        guard let symbols = LabelSymbolDecoder(symbolTable.buffer) else { throw bad("label symbol table is malformed") }
        self.valueCount = valueCount
        self.hotCount = hotCount
        self.hotOffsets = hotOffsets
        self.hotLabels = hotLabels
        self.coldIndex = coldIndex
        self.coldLabels = coldLabels
        self.symbols = symbols
        self.path = path
        self.what = what
    }

    @inline(__always)
    func hotLabel(_ id: Int) throws(CallerIDError) -> UnsafeRawBufferPointer {
        let a = Int(hotOffsets.u32(4 &* id)), e = Int(hotOffsets.u32(4 &* id &+ 4))
        guard a <= e, e <= hotLabels.count, e &- a <= Format.maxLabelBytes else {
            throw CallerIDError.corrupt(path, "hot label offsets of \(what) \(id)")
        }
        return hotLabels.bytes(a, e &- a)
    }

    /// The coded bytes of cold value `id` (hotCount ≤ id < valueCount).
    @inline(__always)
    func coldCodes(_ id: Int) throws(CallerIDError) -> UnsafeRawBufferPointer {
        let range = try coldCodeRange(id)
        return coldLabels.bytes(range.lowerBound, range.count)
    }

    /// Where the coded bytes of cold value `id` lie in the cold labels (inside its group).
    @inline(__always)
    func coldCodeRange(_ id: Int) throws(CallerIDError) -> Range<Int> {
        let c = id &- hotCount
        let group = try coldGroupBounds(c &>> Format.coldGroupShift, id)
        var at = group.start
        var k = c & ((1 &<< Format.coldGroupShift) &- 1)
        while true {
            let range = try nextColdCode(at: &at, end: group.end, id)
            if k == 0 { return range }
            k &-= 1
        }
    }

    /// Where cold group `g` (of value `id`, for messages) lies in the cold labels, checked.
    @inline(__always)
    private func coldGroupBounds(_ g: Int, _ id: Int) throws(CallerIDError) -> (start: Int, end: Int) {
        let at = Int(coldIndex.u32(4 &* g))
        let end = Int(coldIndex.u32(4 &* g &+ 4))
        guard at <= end, end <= coldLabels.count else { throw CallerIDError.corrupt(path, "cold label index of \(what) \(id)") }
        return (at, end)
    }

    /// The coded bytes of the label at `at` in a group ending at `end` (its varint length, then
    /// that many bytes), `at` moved past them; `id` names the value in messages.
    @inline(__always)
    private func nextColdCode(at: inout Int, end: Int, _ id: Int) throws(CallerIDError) -> Range<Int> {
        var len = 0, shift = 0
        while true {
            guard at < end, shift < 21 else { throw CallerIDError.corrupt(path, "cold label length of \(what) \(id)") }
            let byte = Int(coldLabels.u8(at))
            at &+= 1
            len |= (byte & 0x7F) &<< shift
            shift &+= 7
            if byte < 0x80 { break }
        }
        guard len <= end &- at else { throw CallerIDError.corrupt(path, "cold label of \(what) \(id) runs past its group") }
        defer { at &+= len }
        return at..<(at &+ len)
    }

    /// Decodes cold value `id`'s label from `codes` into `out`, which has room for
    /// ``coldBufferBytes(_:)`` (the slack lets the decoder store whole 8-byte symbols): its
    /// length, at most 65,535.
    @usableFromInline
    func decodeCold(_ codes: UnsafeRawBufferPointer, _ id: Int, into out: MutableByteView) throws(CallerIDError) -> Int {
        guard let n = symbols.decode(codes, into: out), n <= Format.maxLabelBytes else {
            throw CallerIDError.corrupt(path, "cold label of \(what) \(id) does not decode to at most \(Format.maxLabelBytes) bytes")
        }
        return n
    }

    /// Bytes of decode buffer for a cold label of `codes`: min(8 × codes, 65,535) + 8.
    @inlinable @inline(__always)
    static func coldBufferBytes(_ codes: UnsafeRawBufferPointer) -> Int { min(codes.count &* 8, 65_535) &+ 8 }

    /// Calls `body` with value `id`'s label bytes (mapped when hot, decoded on the stack or a
    /// temporary allocation when cold) and whether they are mapped.
    func withLabel<R>(_ id: Int, _ body: (UnsafeRawBufferPointer, Bool) throws(CallerIDError) -> R) throws(CallerIDError) -> R {
        if id < hotCount { return try body(try hotLabel(id), true) }
        let codes = try coldCodes(id)
        return try withScratchBytes(LabelTable.coldBufferBytes(codes)) { (out) throws(CallerIDError) -> R in
            let n = try decodeCold(codes, id, into: out)
            return try body(out.bytes(upTo: n), false)
        }
    }

    /// The bytes a label needs to be copied or decoded into (its length when hot).
    @inline(__always)
    func bufferBytes(_ id: Int, _ bytes: UnsafeRawBufferPointer) -> Int {
        id < hotCount ? bytes.count : LabelTable.coldBufferBytes(bytes)
    }

    /// Label `id`'s bytes as ``locate(_:)`` gave them (raw when hot, coded when cold) copied or
    /// decoded to `out`, which has room for ``bufferBytes(_:_:)``; the length.
    @inline(__always)
    func copy(_ id: Int, _ bytes: UnsafeRawBufferPointer, to out: MutableByteView) throws(CallerIDError) -> Int {
        if id < hotCount {
            out.copy(bytes, at: 0)
            return bytes.count
        }
        return try decodeCold(bytes, id, into: out)
    }

    /// Label `id`'s bytes: raw (mapped) when hot, coded when cold.
    @inline(__always)
    func locate(_ id: Int) throws(CallerIDError) -> UnsafeRawBufferPointer {
        id < hotCount ? try hotLabel(id) : try coldCodes(id)
    }

    /// Verify: hot offsets ascend, every label passes ``LabelText/check(_:)`` (strict UTF-8,
    /// no control or hidden character), every cold group is consumed exactly by its labels.
    func verify() throws(CallerIDError) {
        func bad(_ m: String) -> CallerIDError { CallerIDError.corrupt(path, m) }
        var last = 0
        for v in 0..<hotCount {
            let e = Int(hotOffsets.u32(4 * v + 4))
            guard e >= last else { throw bad("hot label offsets of \(what)s descend at \(what) \(v)") }
            last = e
        }
        var scratch = FixedBuffer<UInt8>(repeating: 0, count: Format.maxLabelBytes + 8)
        func checkText(_ label: UnsafeRawBufferPointer, _ v: Int) throws(CallerIDError) {
            // The one label rule (LabelText). A hidden character is not damage but a file
            // built before the rule: say how to mend it.
            if let problem = LabelText.check(label) {
                let mend = problem.kind == .hidden
                    ? " (labels may not hold it: a file built before that rule; 'lookup build' removes them)" : ""
                throw bad(problem.description(of: "label of \(what) \(v)") + mend)
            }
        }
        for v in 0..<hotCount { try checkText(try hotLabel(v), v) }
        // Cold labels group by group, each group read once from its start; a label whose
        // symbols the rule's automaton passes needs no decode. No cold labels (a small file):
        // no automaton to build.
        guard valueCount > hotCount else { return }
        let rule = LabelSymbolAutomaton(symbols)
        var v = hotCount
        while v < valueCount {
            let group = try coldGroupBounds((v &- hotCount) &>> Format.coldGroupShift, v)
            var at = group.start
            let groupEnd = min(valueCount, v &+ (1 &<< Format.coldGroupShift))
            while v < groupEnd {
                let range = try nextColdCode(at: &at, end: group.end, v)
                let codes = coldLabels.bytes(range.lowerBound, range.count)
                if rule.passes(codes) {
                    v &+= 1
                    continue
                }
                let n = try decodeCold(codes, v, into: scratch.writableBytes(0, LabelTable.coldBufferBytes(codes)))
                try checkText(scratch.bytes(0, n), v)
                v &+= 1
            }
            guard at == group.end else { throw bad("cold label group of \(what) \(v &- 1) has unused bytes") }
        }
    }
}

// MARK: Writer

/// The label parts of a value table (sections 7–11 of the file, or the same parts inside the
/// ranges section): hot labels raw, cold labels coded with a trained symbol table in groups.
struct EncodedLabels {
    var hotCount = 0
    var hotOffsets: [UInt8] = []
    var hotLabels: [UInt8] = []
    var symbols: [UInt8] = []
    var coldIndex: [UInt8] = []
    var coldLabels: [UInt8] = []
}

extension FileWriter {
    /// Labels of values `0 ..< count` in id order: values are hot, in id order, while the running
    /// total of their bytes stays ≤ `hotLabelBytes`; the rest are cold.
    static func encodeLabels(count valueCount: Int, label: (Int) -> ArraySlice<UInt8>, hotLabelBytes: Int) throws(CallerIDError) -> EncodedLabels {
        var out = EncodedLabels()
        out.hotOffsets.appendLE(UInt32(0))
        while out.hotCount < valueCount, out.hotLabels.count + label(out.hotCount).count <= hotLabelBytes {
            out.hotLabels.append(contentsOf: label(out.hotCount))
            out.hotOffsets.appendLE(UInt32(out.hotLabels.count))
            out.hotCount += 1
        }
        let coldValues = out.hotCount..<valueCount
        // Sampled one label at a time, not from an array of them all (the sample is at most ~1 MiB).
        var total = 0
        for v in coldValues { total += label(v).count }
        var sample = LabelSample(totalBytes: total)
        for v in coldValues { label(v).withUnsafeBytes { sample.add($0) } }
        let symbols = LabelSymbolTable.train(sample)
        var coded: [UInt8] = []
        for (k, v) in coldValues.enumerated() {
            if k & ((1 << Format.coldGroupShift) - 1) == 0 {
                guard out.coldLabels.count <= Int(UInt32.max) else { throw CallerIDError(.limitExceeded, "cold labels exceed 4 GiB") }
                out.coldIndex.appendLE(UInt32(out.coldLabels.count))
            }
            coded.removeAll(keepingCapacity: true)
            symbols.encode(Array(label(v)), into: &coded)
            out.coldLabels.appendVarint(coded.count)  // LEB128, as every varint of the core
            out.coldLabels.append(contentsOf: coded)
        }
        guard out.coldLabels.count <= Int(UInt32.max) else { throw CallerIDError(.limitExceeded, "cold labels exceed 4 GiB") }
        out.coldIndex.appendLE(UInt32(out.coldLabels.count))
        out.symbols = symbols.serialized
        return out
    }
}
