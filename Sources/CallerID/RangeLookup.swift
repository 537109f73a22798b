/// How a lookup answered a number.
public enum MatchKind: Hashable, Sendable {
    /// The database holds the number itself.
    case entry
    /// The database holds no entry for the number; the range `first...last` holding it answered.
    case range(first: UInt64, last: UInt64)
}

/// A range of a database: every number in `first...last` without an entry of its own answers
/// `label` and `category`.
public struct LabeledRange: Hashable, Sendable, CustomStringConvertible {
    public var first: UInt64
    public var last: UInt64
    public var label: String
    public var category: Category

    public init(first: UInt64, last: UInt64, label: String, category: Category = .identify) {
        self.first = first
        self.last = last
        self.label = label
        self.category = category
    }

    public var description: String { "\(first)-\(last)\t\(label)\t\(category.name)" }
}

extension Database {
    /// Number of ranges (0 when the file has no ranges section).
    public var rangeCount: Int { ranges?.rangeCount ?? 0 }

    /// Like ``withEntry(_:_:)``, but a number without an entry falls back to the range holding
    /// it: the view's ``EntryView/match`` says which answered. An exact entry always wins; a
    /// number in no range is not found (nil). The label of a range answer is borrowed the same
    /// way (mapped, or decoded for this call).
    @inlinable
    public func withAnswer<R>(_ number: UInt64, _ body: (EntryView) -> R) throws(CallerIDError) -> R? {
        // A file of more ranges than entries (a numbering plan) is asked for its range first:
        // when no entry lies inside that range's block, the range answers without the entry
        // lookup (an entry wins over a range, so it must be looked for otherwise).
        if rangeCount > count, let found = try locateRange(number), !found.entriesInside {
            return try answer(from: found, number, body)
        }
        if let r = try withEntry(number, body) { return r }
        return try withRange(number, body)
    }

    /// The range holding `number` (entries are not consulted): calls `body` with a view whose
    /// ``EntryView/match`` is ``MatchKind/range(first:last:)``, or returns nil. For precedence
    /// across several databases: exact entries of every database first, then their ranges.
    @inlinable
    public func withRange<R>(_ number: UInt64, _ body: (EntryView) -> R) throws(CallerIDError) -> R? {
        guard let found = try locateRange(number) else { return nil }
        return try answer(from: found, number, body)
    }

    /// The view of a located range's answer for `number`.
    @inlinable
    func answer<R>(from found: RangeLocated, _ number: UInt64, _ body: (EntryView) -> R) throws(CallerIDError) -> R {
        let match = MatchKind.range(first: found.first, last: found.last)
        return try withScratchBytes(max(found.bufferBytes, 8)) { (out) throws(CallerIDError) -> R in
            let n = try rangeLabel(found, into: out)
            return body(EntryView(number: number, categoryCode: found.category, labelBytes: out.bytes(upTo: n),
                                  database: self, labelIsMapped: false, match: match))
        }
    }

    /// A range found by ``locateRange(_:)``: its bounds, its value and category, and its label's
    /// two parts (raw when hot, coded when cold) with the bytes the label needs.
    @usableFromInline
    struct RangeLocated {
        @usableFromInline var value: Int
        @usableFromInline var category: Int
        @usableFromInline var first: UInt64
        @usableFromInline var last: UInt64
        @usableFromInline var prefix: Int
        @usableFromInline var prefixBytes: UnsafeRawBufferPointer
        @usableFromInline var suffix: Int
        @usableFromInline var suffixBytes: UnsafeRawBufferPointer
        @usableFromInline var bufferBytes: Int
        /// An entry of the file lies inside a range of this range's block (so maybe inside this one).
        @usableFromInline var entriesInside: Bool

        @usableFromInline init(value: Int, category: Int, first: UInt64, last: UInt64, prefix: Int, prefixBytes: UnsafeRawBufferPointer,
                               suffix: Int, suffixBytes: UnsafeRawBufferPointer, bufferBytes: Int, entriesInside: Bool) {
            self.entriesInside = entriesInside
            self.value = value
            self.category = category
            self.first = first
            self.last = last
            self.prefix = prefix
            self.prefixBytes = prefixBytes
            self.suffix = suffix
            self.suffixBytes = suffixBytes
            self.bufferBytes = bufferBytes
        }
    }

    /// The non-generic part of ``withRange(_:_:)`` (so that it specializes in the caller's
    /// module without runtime generic metadata): the range holding `number`, or nil.
    @usableFromInline
    func locateRange(_ number: UInt64) throws(CallerIDError) -> RangeLocated? {
        // Called on the stored property (not a local copy): no retain of the table per lookup.
        try ranges?.locate(number, categoryCount: categories.count)
    }

    /// Writes a located range's label to `out` (room for its `bufferBytes`); its length.
    @usableFromInline
    func rangeLabel(_ found: RangeLocated, into out: MutableByteView) throws(CallerIDError) -> Int {
        try ranges!.label(of: found, into: out)
    }

    /// The entry for `number`, or else the answer of the range holding it (``Entry/match`` says
    /// which), or nil.
    public func answer(_ number: UInt64) throws(CallerIDError) -> Entry? {
        try withAnswer(number) { $0.entry }
    }

    /// A cursor over the ranges in ascending order, starting with the range holding `from` or
    /// the first one after it. Entry cursors never yield ranges; this one yields ranges only.
    public func rangeCursor(from: UInt64 = 0) -> RangeCursor {
        RangeCursor(database: self, from: from)
    }
}

/// Reads a database's ranges in ascending order (see ``Database/rangeCursor(from:)``). Each
/// block of ranges is checked as it is entered; heap use is fixed.
public struct RangeCursor {
    private let database: Database
    private let from: UInt64
    private var block: Int
    private var decoder: RangeTable.BlockDecoder?
    private var previousLast: UInt64?
    private var done = false

    init(database: Database, from: UInt64) {
        self.database = database
        self.from = from
        if let table = database.ranges, case let g = table.groupFor(from), g >= 0 {
            block = table.blockFor(from, inGroup: g).block
        } else {
            block = 0
        }
    }

    /// The next range, or nil at the end. Throws ``CallerIDError`` (`corrupt`) for a damaged block.
    public mutating func next() throws(CallerIDError) -> LabeledRange? {
        guard !done, let table = database.ranges else { return nil }
        while true {
            if decoder == nil || decoder!.remaining == 0 {
                guard block < table.blockCount else { done = true; return nil }
                if let p = previousLast, let first = table.firstKey(block), first <= p {
                    done = true
                    throw CallerIDError.corrupt(database.path, "ranges: block \(block) starts at or before the previous block's last number")
                }
                do { decoder = try table.decoder(block, start: table.blockStart(block)) } catch { done = true; throw error }
                block += 1
            }
            guard let r = decoder!.next() else {
                done = true
                throw CallerIDError.corrupt(database.path, "ranges: block \(block - 1) is damaged")
            }
            previousLast = r.last
            if r.last < from { continue }
            let code = try table.categoryCode(r.value, categoryCount: database.categories.count)
            let label = try table.withLabel(r.value) { (bytes) throws(CallerIDError) in String(decoding: bytes, as: UTF8.self) }
            return LabeledRange(first: r.first, last: r.last, label: label, category: database.categories[code])
        }
    }

    /// Every remaining range.
    public mutating func collect() throws(CallerIDError) -> [LabeledRange] {
        var out: [LabeledRange] = []
        while let r = try next() { out.append(r) }
        return out
    }
}
