import CallerID

/// The fast route of the row loop (``Pipeline/add(file:)``) for plain TSV: no header, no field
/// chosen, `NUMBER<TAB>LABEL[<TAB>CATEGORY]`, numbers as E.164 digits (`+` optional), no country
/// and no per-field option. It takes a row only when the general reading would take it as it
/// stands: a number of `+` and up to 15 ASCII digits not starting with 0 that
/// ``NumberNormalizer/normalize(e164:)`` accepts, a label ``LabelCleaner/isClean(utf8:)`` keeps
/// as it is (or ``LabelCleaner/clean(_:)`` changes without a warning), a category the category
/// map gives. Every other row (anything to refuse, cut or warn about) goes to the general
/// reading, so what a row may hold is decided in one place, and a plain file builds the bytes
/// it builds with a header or with its fields chosen. A row with a clean label taken here costs
/// no `String` and no allocation.
struct PlainRowRoute {
    let normalizer: NumberNormalizer
    let labels: LabelCleaner
    let categories: CategoryMap
    let fixedCategory: Category?
    let maxFieldBytes: Int
    /// The memo of the calling codes' patterns: a route is used on one thread at a time
    /// (``forSecondThread()`` gives another thread its own).
    private(set) var memo = PatternMemo()
    /// The categories rows were given, in the order first seen (``Fields/category`` indexes it).
    private(set) var categoriesSeen: [Category] = []
    /// Category fields seen: the first few compared in place, the rest in a dictionary; each
    /// with its index in ``categoriesSeen``.
    private var names: [[UInt8]] = []
    private var named: [UInt32] = []
    private var others: [[UInt8]: UInt32] = [:]
    private var noCategory: UInt32? = nil
    private static let scanned = 8

    /// A row the route takes; `label` lives as long as the line it was read from.
    struct Row {
        var number: UInt64
        var label: UnsafeRawBufferPointer
        /// The label to store instead of ``label`` when the cleaner changed it.
        var cleaned: String?
        var category: Category
        /// The digits (without `+`) also read as a national number of another country.
        var reading: NationalReading?
    }

    /// What ``parse(_:readings:)`` reads in a line: a ``Row`` of plain values, to be kept
    /// beyond the line's loan and handed to another thread (24 bytes, nothing to retain).
    struct Fields {
        var number: UInt64
        /// The label: `line[labelStart..<labelEnd]`.
        var labelStart: Int32
        var labelEnd: Int32
        /// The category's index in ``categoriesSeen``.
        var category: UInt32
        /// The index of the row's national reading in the `readings` it was parsed with; -1: none.
        var reading: Int32
    }

    /// The route for a file read with `options` whose fields are `slots`; nil when its rows need
    /// the general reading (a header, chosen fields, a country, a split or a top-N set).
    init?(options: PipelineOptions, format: InputFormat, slots: FieldSlots, normalizer: NumberNormalizer) {
        guard format == .tsv, slots.maxColumns == 3, options.country == nil, options.padNumber == nil,
              options.split == .none, options.top == nil else { return nil }
        self.normalizer = normalizer
        labels = options.labels
        categories = options.categories
        fixedCategory = options.fixedCategory
        if let fixedCategory { categoriesSeen = [fixedCategory] }
        maxFieldBytes = options.maxFieldBytes
    }

    /// True when a label stored before needs no check again: the cleaner keeps what it
    /// returns as it is (no replacements, no length limit), so a label that some row stored
    /// (cleaned, or clean as it stood) is one this route would store unchanged.
    var storedLabelsAreSettled: Bool { labels.replacements.isEmpty && labels.maxBytes == nil }

    /// A copy of this route for another thread (its own memo; the category names seen so far).
    func forSecondThread() -> PlainRowRoute {
        var copy = self
        copy.memo = PatternMemo()
        return copy
    }

    /// The row of `line` with its number and category read and its label not yet checked
    /// (``settleLabel(_:labels:)``), or nil when the general reading must decide it.
    mutating func fields(_ line: UnsafeRawBufferPointer) -> Row? {
        var readings: [NationalReading] = []
        return parse(line, readings: &readings).map { Self.row($0, in: line, categories: categoriesSeen, readings: readings) }
    }

    /// The row of fields that ``parse(_:readings:)`` read in `line`, with the route's
    /// ``categoriesSeen`` and the readings it was given then.
    @inline(__always)
    static func row(_ fields: Fields, in line: UnsafeRawBufferPointer, categories: [Category], readings: [NationalReading]) -> Row {
        Row(number: fields.number, label: UnsafeRawBufferPointer(rebasing: line[Int(fields.labelStart)..<Int(fields.labelEnd)]),
            cleaned: nil, category: categories[Int(fields.category)], reading: fields.reading < 0 ? nil : readings[Int(fields.reading)])
    }

    /// ``fields(_:)`` in plain values: the fields of `line` (a national reading appended to
    /// `readings`), or nil when the general reading must decide it.
    mutating func parse(_ line: UnsafeRawBufferPointer, readings: inout [NationalReading]) -> Fields? {
        // A line within the field limit cannot hold a field over it.
        guard line.count <= maxFieldBytes, line.count <= Int(Int32.max) else { return nil }
        let n = line.count
        let first = Self.nextTab(line, from: 0)
        guard first < n else { return nil }
        var second = Self.nextTab(line, from: first + 1)
        if second < n {
            guard Self.nextTab(line, from: second + 1) == n else { return nil }   // a fourth field
        } else {
            second = -1
        }
        let field = UnsafeRawBufferPointer(rebasing: line[0..<first])
        guard let (value, plus) = Self.plainE164(field),
              let (number, reading) = try? normalizer.normalize(e164: value, memo: memo, noting: !plus) else { return nil }
        let category: UInt32
        if fixedCategory != nil {
            category = 0
        } else {
            let field = second < 0 ? UnsafeRawBufferPointer(rebasing: line[line.count...]) : UnsafeRawBufferPointer(rebasing: line[(second + 1)...])
            guard let c = self.category(field) else { return nil }
            category = c
        }
        var readingIndex: Int32 = -1
        if let reading {
            readingIndex = Int32(truncatingIfNeeded: readings.count)
            readings.append(reading)
        }
        return Fields(number: number, labelStart: Int32(first + 1), labelEnd: Int32(second < 0 ? n : second),
                      category: category, reading: readingIndex)
    }

    /// Checks the label of a row from ``fields(_:)``: valid UTF-8 and clean as it stands, or
    /// cleaned (``Row/cleaned``) without a warning; false when the general reading must decide.
    static func settleLabel(_ row: inout Row, labels: LabelCleaner) -> Bool {
        let label = row.label
        guard UTF8Check.isValid(label) else { return false }
        if label.count > LabelText.maxBytes || !labels.isClean(utf8: label) {
            // The cleaner's own answer; a label it refuses, cuts or warns about is the general
            // reading's to report.
            guard let c = try? labels.clean(String(decoding: label, as: UTF8.self)), c.hiddenRemoved.isEmpty, !c.truncated,
                  c.label.utf8.count <= LabelText.maxBytes else { return false }
            row.cleaned = c.label
        }
        return true
    }

    /// The offset of the first TAB at or after `start`, or `line.count` when there is none;
    /// eight bytes at a time (the lowest byte that the test marks is a TAB: a false mark can
    /// only sit above a true one).
    @inline(__always)
    static func nextTab(_ line: UnsafeRawBufferPointer, from start: Int) -> Int {
        var i = start
        let n = line.count
        while i &+ 8 <= n {
            let x = line.littleEndianWord(at: i) ^ 0x0909_0909_0909_0909
            let marks = (x &- 0x0101_0101_0101_0101) & ~x & 0x8080_8080_8080_8080
            if marks != 0 { return i &+ marks.trailingZeroBitCount &>> 3 }
            i &+= 8
        }
        while i < n {
            if line[i] == 0x09 { return i }
            i &+= 1
        }
        return n
    }

    /// The digits of a field of `+` and 1 to 15 ASCII digits not starting with 0 (a national
    /// form), and whether it had the `+`; nil for anything else.
    @inline(__always)
    static func plainE164(_ field: UnsafeRawBufferPointer) -> (UInt64, plus: Bool)? {
        guard let first = field.first else { return nil }
        let plus = first == 0x2B
        let digits = plus ? UnsafeRawBufferPointer(rebasing: field[1...]) : field
        guard (1...15).contains(digits.count), digits[0] != 0x30 else { return nil }
        var value: UInt64 = 0
        for b in digits {
            let d = b &- 0x30
            guard d <= 9 else { return nil }
            value = value &* 10 &+ UInt64(d)
        }
        return (value, plus)
    }

    /// The category a field names, as the general reading gives it (``CategoryMap``, the field
    /// trimmed); nil when it is not valid UTF-8 or the map refuses it.
    private mutating func category(_ field: UnsafeRawBufferPointer) -> UInt32? {
        // Most rows have no category field, or an empty one.
        if field.isEmpty, let c = noCategory { return c }
        for (i, name) in names.enumerated() where name.count == field.count && name.elementsEqual(field) { return named[i] }
        let key = Array(field)
        if let c = others[key] { return c }
        guard UTF8Check.isValid(field), categoriesSeen.count < Int(UInt32.max),
              let category = try? categories.category(for: String(decoding: field, as: UTF8.self).trimmedASCII) else { return nil }
        let c = UInt32(categoriesSeen.count)
        categoriesSeen.append(category)
        if field.isEmpty { noCategory = c }
        if names.count < Self.scanned {
            names.append(key)
            named.append(c)
        } else {
            others[key] = c
        }
        return c
    }
}
