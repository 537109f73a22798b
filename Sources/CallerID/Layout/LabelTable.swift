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
    /// The LZ4 cold labels of a version 3.1 file (sections 13 and 14), in place of the
    /// symbol-coded ones (then empty); nil otherwise.
    let lz4: LZ4ColdLabels?
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
        try LabelTable.checkSize("hot label offsets", hotOffsets, 4 * (hotCount + 1), part: part, bad: bad)
        let coldGroups = (valueCount - hotCount + (1 << Format.coldGroupShift) - 1) >> Format.coldGroupShift
        try LabelTable.checkSize("cold label index", coldIndex, 4 * (coldGroups + 1), part: part, bad: bad)
        try LabelTable.checkHotSpan(hotCount: hotCount, hotOffsets: hotOffsets, hotLabels: hotLabels, bad: bad)
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
        self.lz4 = nil
        self.path = path
        self.what = what
    }

    /// The label table of a version 3.1 file: hot labels as above, cold labels in LZ4 groups
    /// (``LZ4ColdLabels``, checked in O(1) here and each group again when it is read).
    init(valueCount: Int, hotCount: Int, hotOffsets: ByteView, hotLabels: ByteView, lz4Index: ByteView, lz4Labels: ByteView,
         path: String, bad: (String) -> CallerIDError) throws(CallerIDError) {
        try LabelTable.checkSize("hot label offsets", hotOffsets, 4 * (hotCount + 1), part: { "section '\($0)'" }, bad: bad)
        try LabelTable.checkHotSpan(hotCount: hotCount, hotOffsets: hotOffsets, hotLabels: hotLabels, bad: bad)
        self.lz4 = try LZ4ColdLabels(index: lz4Index, groups: lz4Labels, hotLabels: hotLabels, coldCount: valueCount - hotCount, path: path)
        self.valueCount = valueCount
        self.hotCount = hotCount
        self.hotOffsets = hotOffsets
        self.hotLabels = hotLabels
        self.coldIndex = ByteView(UnsafeRawBufferPointer(start: nil, count: 0))
        self.coldLabels = self.coldIndex
        self.symbols = LabelSymbolDecoder.empty
        self.path = path
        self.what = "value"
    }

    /// *corrupt* (`bad`) unless part `name` (named in messages by `part`) is `expected` bytes.
    private static func checkSize(_ name: String, _ view: ByteView, _ expected: Int, part: (String) -> String,
                                  bad: (String) -> CallerIDError) throws(CallerIDError) {
        guard view.count == expected else { throw bad("\(part(name)) is \(view.count) bytes; it must be \(expected)") }
    }

    /// *corrupt* (`bad`) unless the hot offsets (of checked size) start at 0 and end at the hot
    /// labels' length.
    private static func checkHotSpan(hotCount: Int, hotOffsets: ByteView, hotLabels: ByteView, bad: (String) -> CallerIDError) throws(CallerIDError) {
        guard hotOffsets.u32(0) == 0, Int(hotOffsets.u32(4 * hotCount)) == hotLabels.count else {
            throw bad("hot label offsets do not span the hot labels (first \(hotOffsets.u32(0)), last \(hotOffsets.u32(4 * hotCount)), \(hotLabels.count) bytes)")
        }
    }

    /// Bytes of the coded cold labels (section 11, or 14 with LZ4).
    var coldByteCount: Int { lz4?.groups.count ?? coldLabels.count }

    @inline(__always)
    func hotLabel(_ id: Int) throws(CallerIDError) -> UnsafeRawBufferPointer {
        let a = Int(hotOffsets.u32(4 &* id)), e = Int(hotOffsets.u32(4 &* id &+ 4))
        guard a <= e, e <= hotLabels.count, e &- a <= Format.maxLabelBytes else {
            throw CallerIDError.corrupt(path, "hot label offsets of \(what) \(id)")
        }
        return hotLabels.bytes(a, e &- a)
    }

    /// The coded bytes of cold value `id` (hotCount ≤ id < valueCount): its symbol codes, or
    /// with LZ4 its whole group.
    @inline(__always)
    func coldCodes(_ id: Int) throws(CallerIDError) -> UnsafeRawBufferPointer {
        if let lz4 { return try lz4.groupBytes(lz4.place(id &- hotCount).group, id) }
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
        if let lz4 {
            // The whole group, then its label moved to the front.
            let n = try lz4.decode(codes, id, into: out)
            let place = lz4.place(id &- hotCount)
            let range = try lz4.label(place.position, of: place.labels, in: out.bytes(upTo: n), id)
            out.moveToStart(range)
            return range.count
        }
        guard let n = symbols.decode(codes, into: out), n <= Format.maxLabelBytes else {
            throw CallerIDError.corrupt(path, "cold label of \(what) \(id) does not decode to at most \(Format.maxLabelBytes) bytes")
        }
        return n
    }

    /// Bytes of decode buffer for a cold label of `codes`: min(8 × codes, 65,535) + 8 (the
    /// slack lets the symbol decoder store whole 8-byte symbols); with LZ4 the group's
    /// declared length.
    @usableFromInline @inline(__always)
    func coldBufferBytes(_ codes: UnsafeRawBufferPointer) -> Int {
        if lz4 != nil { return LZ4ColdLabels.decodedBytes(codes) }
        return LabelTable.symbolBufferBytes(codes)
    }

    /// Bytes of decode buffer for symbol codes `codes`.
    @inline(__always)
    static func symbolBufferBytes(_ codes: UnsafeRawBufferPointer) -> Int { min(codes.count &* 8, 65_535) &+ 8 }

    /// Calls `body` with value `id`'s label bytes (mapped when hot, decoded on the stack or a
    /// temporary allocation when cold) and whether they are mapped.
    func withLabel<R>(_ id: Int, _ body: (UnsafeRawBufferPointer, Bool) throws(CallerIDError) -> R) throws(CallerIDError) -> R {
        if id < hotCount { return try body(try hotLabel(id), true) }
        let codes = try coldCodes(id)
        return try withScratchBytes(coldBufferBytes(codes)) { (out) throws(CallerIDError) -> R in
            let n = try decodeCold(codes, id, into: out)
            return try body(out.bytes(upTo: n), false)
        }
    }

    /// The bytes a label needs to be copied or decoded into (its length when hot).
    @inline(__always)
    func bufferBytes(_ id: Int, _ bytes: UnsafeRawBufferPointer) -> Int {
        id < hotCount ? bytes.count : coldBufferBytes(bytes)
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
        if let lz4 {
            // Each group decoded once, each of its labels held to the rule (a byte automaton
            // first; the label rule's own check when it cannot tell).
            let rule = LabelSymbolAutomaton(symbols)
            var v = hotCount
            for g in 0..<lz4.groupCount {
                let group = try lz4.groupBytes(g, v)
                guard LZ4ColdLabels.decodedBytes(group) <= scratch.count else { throw bad("LZ4 cold label group of value \(v) declares a bad length") }
                let n = try lz4.decode(group, v, into: scratch.writableBytes(0, scratch.count))
                let labels = lz4.place(v &- hotCount).labels
                let decoded = scratch.bytes(0, n)
                for k in 0..<labels {
                    let range = try lz4.label(k, of: labels, in: decoded, v &+ k)
                    let label = scratch.bytes(range.lowerBound, range.count)
                    if !rule.passes(bytes: label) { try checkText(label, v &+ k) }
                }
                v &+= labels
            }
            return
        }
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
                let n = try decodeCold(codes, v, into: scratch.writableBytes(0, LabelTable.symbolBufferBytes(codes)))
                try checkText(scratch.bytes(0, n), v)
                v &+= 1
            }
            guard at == group.end else { throw bad("cold label group of \(what) \(v &- 1) has unused bytes") }
        }
    }
}

// MARK: Writer

/// The label parts of a value table (sections 7–11 of the file, or the same parts inside the
/// ranges section): hot labels raw, cold labels coded with a trained symbol table in groups —
/// or, in a file, in LZ4 groups (sections 13 and 14).
struct EncodedLabels {
    var hotCount = 0
    var hotOffsets: [UInt8] = []
    var hotLabels: [UInt8] = []
    var symbols: [UInt8] = []
    var coldIndex: [UInt8] = []
    var coldLabels: [UInt8] = []
    /// Sections 13 and 14 when the cold labels are LZ4 groups (then the three above are empty).
    var lz4: (index: [UInt8], labels: [UInt8])? = nil

    /// The file's sections of cold labels, by kind: 9, 10 and 11, or 13 and 14.
    var coldSections: [(UInt32, [UInt8])] {
        if let lz4 { return [(Format.Section.lz4ColdIndex.rawValue, lz4.index), (Format.Section.lz4ColdLabels.rawValue, lz4.labels)] }
        return [(Format.Section.symbolTable.rawValue, symbols), (Format.Section.coldIndex.rawValue, coldIndex),
                (Format.Section.coldLabels.rawValue, coldLabels)]
    }
}

extension FileWriter {
    /// Labels of values `0 ..< count` in id order: values are hot, in id order, while the running
    /// total of their bytes stays ≤ `hotLabelBytes`; the rest are cold, coded as `coding` says
    /// (``LabelCoding/auto``: both, the smaller kept; the ranges section's table always uses the
    /// symbol table). An LZ4 coding keeps the first `lz4Singles` cold values alone and the others
    /// in groups of 2^`lz4GroupShift` (the writer's choice: none alone, groups of 8).
    static func encodeLabels(count valueCount: Int, label: (Int) -> ArraySlice<UInt8>, hotLabelBytes: Int, coding: LabelCoding = .symbols,
                             lz4Singles: Int = 0, lz4GroupShift: Int = Format.lz4GroupShift) throws(CallerIDError) -> EncodedLabels {
        var out = EncodedLabels()
        out.hotOffsets.appendLE(UInt32(0))
        while out.hotCount < valueCount, out.hotLabels.count + label(out.hotCount).count <= hotLabelBytes {
            out.hotLabels.append(contentsOf: label(out.hotCount))
            out.hotOffsets.appendLE(UInt32(out.hotLabels.count))
            out.hotCount += 1
        }
        let coldValues = out.hotCount..<valueCount
        var lz4: (index: [UInt8], labels: [UInt8])? = nil
        if coding != .symbols {
            do {
                lz4 = try encodeLZ4(coldValues, label: label, hotLabels: out.hotLabels, singles: min(lz4Singles, coldValues.count),
                                    groupShift: lz4GroupShift)
            } catch where coding == .auto && error.code == .limitExceeded {
                lz4 = nil  // a group too long for LZ4: the symbol table holds any label
            }
            if lz4 == nil && coding == .lz4 {
                throw CallerIDError(.invalidInput, "this build cannot write LZ4 cold labels (built without liblz4); use --labels symbols")
            }
        }
        if coding != .lz4 {
            try encodeSymbols(coldValues, label: label, into: &out)
        }
        if let lz4, coding == .lz4 || lz4.index.count + lz4.labels.count < out.symbols.count + out.coldIndex.count + out.coldLabels.count {
            out.lz4 = lz4
            out.symbols = []
            out.coldIndex = []
            out.coldLabels = []
        }
        return out
    }

    /// The cold labels coded with a symbol table trained on them (sections 9, 10 and 11).
    private static func encodeSymbols(_ coldValues: Range<Int>, label: (Int) -> ArraySlice<UInt8>, into out: inout EncodedLabels) throws(CallerIDError) {
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
    }

    /// The cold labels in LZ4 groups (sections 13 and 14); nil when this build cannot compress LZ4.
    private static func encodeLZ4(_ coldValues: Range<Int>, label: (Int) -> ArraySlice<UInt8>, hotLabels: [UInt8],
                                  singles: Int, groupShift: Int) throws(CallerIDError) -> (index: [UInt8], labels: [UInt8])? {
        guard var writer = LZ4ColdLabelWriter(hotLabels: hotLabels, singles: singles, groupShift: groupShift) else { return nil }
        var index = writer.indexHeader, labels: [UInt8] = []
        func emit(_ offset: UInt32, _ group: [UInt8]) {
            index.appendLE(offset)
            labels.append(contentsOf: group)
        }
        for v in coldValues {
            try writer.add(label(v), emit: emit)
        }
        try writer.finish(emit: emit)
        index.appendLE(UInt32(labels.count))
        return (index, labels)
    }
}
