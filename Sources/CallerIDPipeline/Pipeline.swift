import CallerID
import Foundation

/// Progress of a running build: after every chunk read, and once at the start of each later
/// phase (sorting the numbers, writing each database).
public struct PipelineProgress: Sendable {
    /// What the build is doing.
    public enum Phase: Sendable, Equatable {
        /// Reading ``file``; ``bytesRead`` of ``totalBytes``.
        case reading
        /// Sorting ``count`` numbers to de-duplicate and group them (no file involved).
        case sorting
        /// Writing the database ``file`` (``count`` entries), number ``fileIndex`` of ``fileCount``.
        case writing
    }
    /// The input being read, or the name of the database being written.
    public var file: String
    public var bytesRead: Int64
    /// Nil for standard input.
    public var totalBytes: Int64?
    /// Data rows read so far, all files.
    public var rowsRead: Int
    public var phase: Phase = .reading
    /// Sorting: numbers sorted. Writing: entries in the database being written.
    public var count: Int = 0
    /// Writing: 1-based position of this database among the ``fileCount`` written.
    public var fileIndex: Int = 0
    public var fileCount: Int = 0
}

/// A change made to an accepted row (an extension cut, a label truncated…).
public struct RowWarning: Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var kind: WarningKind
    public var message: String
    public var description: String { "\(file):\(line): warning: \(message)" }
}

/// Reads directories in any supported format and builds the databases an app ships.
///
/// ```swift
/// var options = PipelineOptions()
/// options.country = "RU"
/// let pipeline = try Pipeline(options: options)
/// try pipeline.add(file: "directory.csv")
/// let summary = try pipeline.write(to: "out")     // one file, or a directory with manifest.json
/// ```
///
/// Rows are held in memory until ``write(to:)`` (12 bytes per number, 14 when split, 20 with a
/// top-N set, plus each distinct label; measured peak: about 21 bytes per number, 23 when split):
/// splitting, de-duplication (the last row for a number wins within each output), shards
/// and the top-N set need all of them. ``PipelineOptions/maxExpandedTotal`` bounds what range
/// rows can add.
public final class Pipeline {
    public let options: PipelineOptions
    let normalizer: NumberNormalizer
    /// What reads the numbers ("libphonenumber", or "built-in table" and why).
    public var numberRules: String { normalizer.rulesDescription }
    /// Why numbers are read with the built-in table although libphonenumber was wanted; nil otherwise.
    public var numberRulesFallback: String? { normalizer.fallbackReason }

    /// Every rejected row, as it is found.
    public var onRejected: (RejectedRow) -> Void = { _ in }
    /// Every change made to an accepted row.
    public var onWarning: (RowWarning) -> Void = { _ in }
    public var onProgress: (PipelineProgress) -> Void = { _ in }
    /// Test seams of ``write(to:)``: called with each step of switching an output directory (`before-switch`,
    /// `between-renames`, `after-switch`), and
    /// whether the atomic swap may be used (false: the two-rename fallback).
    package var switchHook: (_ step: String) -> Void = { _ in }
    package var allowDirectoryExchange = true

    // The row loop's hot state is only touched from the one thread that reads (a pipeline is
    // not Sendable): no run-time exclusivity check per row.
    @exclusivity(unchecked) public private(set) var rowsRead = 0
    public private(set) var rowsRejected = 0
    public private(set) var rejectedByReason: [RejectReason: Int] = [:]
    public private(set) var warningsByKind: [WarningKind: Int] = [:]
    /// National numbers seen in digits read as E.164 (``NationalFormEvidence``).
    public private(set) var nationalForms = NationalFormEvidence()
    private var nationalFormsReported = false
    /// Numbers taken (a range row or a cell with several numbers gives several).
    public var numbersAccepted: Int { direct?.count ?? numbers.count + spilledNumbers }
    /// Range rows expanded, and the numbers they gave.
    public private(set) var rangeRows = 0
    public private(set) var rangeNumbers = 0
    /// Range rows kept as ranges (``PipelineOptions/keepRanges``).
    public var rangesKept: Int { keptFirst.count }

    // Range rows kept as ranges, in input order.
    var keptFirst: [UInt64] = []
    var keptLast: [UInt64] = []
    var keptPayload: [UInt32] = []

    // Accepted entries, in input order.
    var numbers: [UInt64] = []
    var payloadOf: [UInt32] = []
    var regionOf: [UInt16] = []
    var weightOf: [UInt64] = []
    var payloads: [Payload] = []
    private var payloadIndex: [PayloadKey: UInt32] = [:]
    /// Label bytes of ``payloads`` and their overhead (``rowMemory``).
    private(set) var payloadBytes = 0
    /// The runs spilled beyond the memory limit (``prepare(output:)``); nil: all in memory.
    var spilled: PipelineRuns? = nil
    /// The accepted rows of a build of one database file (``prepare(output:)``): handed
    /// straight to the core's builder, which sorts, de-duplicates, spills and writes them;
    /// nil: they are kept in the arrays above, grouped at write time.
    @exclusivity(unchecked) var direct: DatabaseBuilder? = nil
    /// The fast route of the file being read, once its first record has shown it is plain TSV.
    @exclusivity(unchecked) private var route: PlainRowRoute? = nil
    /// What the row loop asks of ``route``, kept apart (reading the route from this class would
    /// copy it for every row): whether there is one, and its ``PlainRowRoute/storedLabelsAreSettled``.
    @exclusivity(unchecked) private var routed = false
    @exclusivity(unchecked) private var repeatsSettled = false
    /// What the fields read ahead by a copy of the route index (``RecordReader/onReadAhead``).
    @exclusivity(unchecked) private var aheadCategories: [Category] = []
    @exclusivity(unchecked) private var aheadReadings: [NationalReading] = []
    /// The builder's codes of ``aheadCategories`` as they are looked up (``aheadCode(_:)``).
    @exclusivity(unchecked) private var aheadCodes: [Int16] = []
    /// False: every row takes the general reading, none the fast route of plain TSV rows
    /// (``PlainRowRoute``); the tests and the parser fuzzer check that both take the same rows.
    var takesPlainRowsFast = true
    /// Numbers handed over to runs.
    var spilledNumbers = 0
    private var regions = RegionNames()
    /// The regions met so far, by id.
    var regionNames: [String] { regions.names }
    private var categoryCache: [String: Category] = [:]

    struct Payload: Hashable {
        var label: String
        var category: Category
    }

    /// Dictionary key for a payload: label bytes hash byte by byte (a `String` key would hash
    /// its Unicode normalization, slow for non-ASCII labels; labels are NFC already).
    struct PayloadKey: Hashable {
        var label: [UInt8]
        var category: Category
    }

    /// A build given up while a run is still being written on the other core (a bad row ended
    /// it) waits for that run: the run holds the build's spill folder, which goes with the
    /// runs once the run is done. Without the wait, a tool that exits on the error leaves it.
    deinit {
        direct?.finishSpilling()
        try? spilled?.runs.background.wait()
    }

    public init(options: PipelineOptions) throws(PipelineError) {
        self.options = options
        self.normalizer = try NumberNormalizer(plan: options.numberingPlan, validity: options.validity, rules: options.numberRules)
        if let c = options.country, options.numberingPlan.callingCode(country: c) == nil {
            throw PipelineError(.invalidConfiguration, "unknown country '\(c)': use an ISO 3166 alpha-2 code such as RU, US, KR")
        }
        guard (1...Int(Int32.max)).contains(options.entriesPerDatabase) else {
            throw PipelineError(.invalidConfiguration, "max entries must be at least 1")
        }
        if options.split == .field && options.regionField == nil {
            throw PipelineError(.invalidConfiguration, "splitting by region field needs a region field")
        }
        if options.split == .prefix && options.regionMap.prefixLengths.isEmpty && options.regionMap.fallback == nil {
            throw PipelineError(.invalidConfiguration, "splitting by prefix needs a region map with number prefixes")
        }
        if let top = options.top {
            guard top >= 1 else { throw PipelineError(.invalidConfiguration, "top must be at least 1") }
            guard top <= options.entriesPerDatabase else {
                throw PipelineError(.invalidConfiguration, "top \(top) is more than the \(options.entriesPerDatabase) entries one database may hold")
            }
            guard options.weightField != nil else { throw PipelineError(.invalidConfiguration, "top N needs a weight field") }
        }
        if options.keepRanges && (options.split != .none || options.top != nil || options.blockList == .separate) {
            throw PipelineError(.invalidConfiguration, "keeping ranges writes one database: it does not combine with splitting by region, top N or separate block lists")
        }
        guard options.maxRangeExpansion >= 1 else { throw PipelineError(.invalidConfiguration, "max range expansion must be at least 1") }
        guard options.maxExpandedTotal >= 1 else { throw PipelineError(.invalidConfiguration, "max expanded total must be at least 1") }
        if let m = options.labels.maxBytes, m < 0 { throw PipelineError(.invalidConfiguration, "max label bytes must be >= 0") }
    }

    // MARK: Reading

    /// Reads one input file (`-` for standard input) and keeps its accepted rows.
    /// - Throws: ``PipelineError`` for an unreadable file, a file-level format problem, or
    ///   (`.tooManyBadRows`) when a ``BadRowLimit/count(_:)`` limit is passed.
    public func add(file path: String) throws(PipelineError) {
        let format = options.format ?? InputFormat.guess(path: path)
        var source = try ByteSource(path: path, encoding: options.encoding)
        defer { source.close() }
        let encodingName = { [source] in source.encoding.rawValue }
        var fields: FieldSlots? = format.isJSON ? FieldSlots(json: options) : nil
        route = nil
        defer { route = nil }
        routed = false
        repeatsSettled = false
        let total = source.totalBytes
        var reader = RecordReader(
            format: format,
            limits: ReadLimits(recordBytes: options.maxRecordBytes, fieldBytes: options.maxFieldBytes),
            onRecord: { (record) throws(PipelineError) in
                if fields == nil {
                    // First TSV/CSV record: a header or data.
                    let (slots, isHeader) = try FieldSlots.delimited(first: record, format: format, options: self.options, file: path)
                    fields = slots
                    if self.takesPlainRowsFast {
                        self.route = PlainRowRoute(options: self.options, format: format, slots: slots, normalizer: self.normalizer)
                        self.routed = self.route != nil
                        self.repeatsSettled = self.route?.storedLabelsAreSettled ?? false
                    }
                    if isHeader { return }
                }
                self.rowsRead += 1
                try self.process(record, fields!, file: path, encodingName: encodingName())
            },
            onSyntaxIssue: { (issue) throws(PipelineError) in
                self.rowsRead += 1
                try self.reject(RejectedRow(file: path, line: issue.line, raw: issue.raw, reason: issue.reason, message: issue.message))
            },
            onProgress: { bytes in
                self.onProgress(PipelineProgress(file: path, bytesRead: bytes, totalBytes: total, rowsRead: self.rowsRead))
            })
        // The second thread reads the fields of plain rows ahead of the loop, with a copy of
        // the route (its own memo) once the first record has shown the route applies.
        reader.routeAhead = { self.route?.forSecondThread() }
        aheadCodes = []
        reader.onReadAhead = { (categories, readings) in
            self.aheadCategories = categories
            self.aheadReadings = readings
            // One route copy reads the whole file: its indexes keep their categories.
            if categories.count > self.aheadCodes.count {
                self.aheadCodes += repeatElement(Self.unknownCode, count: categories.count - self.aheadCodes.count)
            }
        }
        reader.onLine = { (line, number, ahead) throws(PipelineError) -> Bool in
            guard self.routed else { return false }
            // Most rows repeat a label: the builder takes them without the label's checks.
            let found: PlainRowRoute.Row?
            var repeatTried = false
            switch ahead {
            case .unread: found = self.route!.fields(line)
            case .read(let fields):
                guard let fields else { return false }
                if self.repeatsSettled {
                    if try self.storeRepeated(fields, in: line, file: path, line: number) { return true }
                    repeatTried = true
                }
                found = PlainRowRoute.row(fields, in: line, categories: self.aheadCategories, readings: self.aheadReadings)
            }
            guard var row = found else { return false }
            if self.repeatsSettled, !repeatTried, try self.storeRepeated(row, file: path, line: number) { return true }
            guard PlainRowRoute.settleLabel(&row, labels: self.options.labels) else { return false }
            return try self.store(row, file: path, line: number)
        }
        try reader.read(&source)
    }

    /// Reads `inputs` in order and writes `output` (``write(to:)``), the output checked
    /// (``checkOutput(_:)``) and prepared (``prepare(output:)``) before anything is read: the
    /// way to build when the output is known first, and the fastest for one database file.
    @discardableResult
    public func build(_ inputs: [String], to output: String) throws(PipelineError) -> PipelineSummary {
        try checkOutput(output)
        prepare(output: output)
        for input in inputs { try add(file: input) }
        return try write(to: output)
    }

    /// Checks the percentage limit once every input has been read.
    public func checkBadRowLimit() throws(PipelineError) {
        if case .percent(let p) = options.maxBadRows, rowsRead > 0 {
            let share = Double(rowsRejected) * 100 / Double(rowsRead)
            if share > p {
                throw PipelineError(.tooManyBadRows, "\(rowsRejected) of \(rowsRead) rows rejected (\(String(format: "%.2f", share))%), more than the \(p)% allowed; nothing written")
            }
        }
    }

    private func reject(_ row: RejectedRow) throws(PipelineError) {
        rowsRejected += 1
        rejectedByReason[row.reason, default: 0] += 1
        onRejected(row.displaySafe)
        try options.maxBadRows.check(rejected: rowsRejected, what: "row")
    }

    /// Warns of the accepted rows that are also national numbers of a country refused rows point
    /// to (``NationalFormEvidence``), once, when all input is read: the rows kept, then a line
    /// with the count; ``warningsByKind`` counts every such row. ``write(to:)`` calls it; a caller
    /// whose build stopped early calls it before reporting.
    public func reportNationalForms() {
        guard !nationalFormsReported else { return }
        nationalFormsReported = true
        for finding in nationalForms.findings {
            for r in finding.rows {
                guard let place = r.place else { continue }
                warn(place.file, place.line, .ambiguousNationalForm,
                     r.reading.message + ": give --country \(finding.country) if the input holds national numbers")
            }
            warningsByKind[.ambiguousNationalForm, default: 0] += finding.accepted - finding.rows.count
        }
    }

    private func warn(_ file: String, _ line: Int, _ kind: WarningKind, _ message: String) {
        warningsByKind[kind, default: 0] += 1
        onWarning(RowWarning(file: file, line: line, kind: kind, message: message))
    }

    /// A field's text, or a rejection reason.
    private enum FieldText {
        case text(String)
        case missing
        case invalid
        /// A JSON object or array.
        case nested
    }

    private func text(_ record: Record, _ slot: FieldSlots.Slot) -> FieldText {
        guard let i = slot.index(in: record) else { return .missing }
        if record.nested.contains(i) { return .nested }
        let bytes = record.value(i)
        let valid = bytes.withUnsafeBytes { UTF8Check.isValid($0) }
        guard valid else { return .invalid }
        return .text(String(decoding: bytes, as: UTF8.self))
    }

    /// One record being read: its fields, and the rejection of the row (``reject(_:)``).
    private struct Row {
        let pipeline: Pipeline
        let record: Record
        let slots: FieldSlots
        let file: String
        let encodingName: String

        func reject(_ reason: RejectReason, _ message: String, raw: String? = nil) throws(PipelineError) {
            try pipeline.reject(RejectedRow(file: file, line: record.line, raw: raw ?? record.rawText, reason: reason, message: message))
        }

        /// The text of a field: `.some(nil)` when it is absent and optional, nil when the row was
        /// rejected (required and missing, badly encoded, or a nested JSON value).
        func field(_ slot: FieldSlots.Slot?, _ what: String, required: Bool) throws(PipelineError) -> String?? {
            guard let slot else { return .some(nil) }
            switch pipeline.text(record, slot) {
            case .text(let t): return .some(t)
            case .missing:
                if required || slot.explicit {
                    try reject(.missingField, "no \(what) field (\(slot.name)) in this row")
                    return nil
                }
                return .some(nil)
            case .invalid:
                try reject(.invalidEncoding, "the \(what) field is not valid \(encodingName) text")
                return nil
            case .nested:
                // Never a default: a nested category must not turn a blocked number into an identified one.
                try reject(.missingField, "the \(what) field (\(slot.name)) is a nested JSON object or array; expected a string, number, true, false or null")
                return nil
            }
        }
    }

    /// What a row's number field (and range end) gave.
    private struct RowNumbers {
        var normalized: NormalizedNumbers
        /// An expanded range row (its numbers counted once the row is accepted).
        var isRange = false
        /// A range kept as a range (`--keep-ranges`).
        var keptRange: (first: UInt64, last: UInt64)? = nil
    }

    /// Reads one record into the pending entries, or rejects it with its reason. Each part is
    /// read by its own function below; any of them may reject the row (then nil: stop here).
    private func process(_ record: Record, _ f: FieldSlots, file: String, encodingName: String) throws(PipelineError) {
        let row = Row(pipeline: self, record: record, slots: f, file: file, encodingName: encodingName)
        if let maxColumns = f.maxColumns, record.values.count > maxColumns {
            try row.reject(.extraFields, "more than \(maxColumns) columns: expected NUMBER<TAB>LABEL[<TAB>CATEGORY] "
                           + "(choose columns with --number-field, --label-field and --category-field to read a wider file)")
            return
        }
        guard let numbers = try readNumbers(row),
              let label = try readLabel(row),
              let category = try readCategory(row),
              let weight = try readWeight(row),
              let regions = try readRegions(row, numbers.normalized.numbers) else { return }
        try store(row, numbers, label: label, category: category, weight: weight, regions: regions)
    }

    private func readNumbers(_ row: Row) throws(PipelineError) -> RowNumbers? {
        let f = row.slots, record = row.record, file = row.file
        guard let numberText = try row.field(f.number, "number", required: true) else { return nil }
        var raw = numberText ?? ""
        var country = options.country
        if let slot = f.country {
            guard let c = try row.field(slot, "country", required: false) else { return nil }
            if let c, !c.trimmedASCII.isEmpty { country = c.trimmedASCII.uppercased() }
        }
        var prefix = ""
        if let slot = f.numberPrefix {
            guard let p = try row.field(slot, "number prefix", required: true) else { return nil }
            prefix = (p ?? "").trimmedASCII
        }
        func compose(_ s: String) -> String {
            var t = s.trimmedASCII
            if let pad = options.padNumber, !t.isEmpty, t.count < pad, t.allSatisfy({ $0.isASCII && $0.isNumber }) {
                t = String(repeating: "0", count: pad - t.count) + t
            }
            return prefix + t
        }
        raw = compose(raw)

        // Number(s).
        var normalized: NormalizedNumbers
        do throws(NumberProblem) {
            normalized = try normalizer.normalize(raw, country: country)
        } catch {
            nationalForms.noteRefused(error)
            try row.reject(error.reason, error.message, raw: InputQuote.excerpt(raw))
            return nil
        }
        if country == nil, !raw.unicodeScalars.contains(where: { $0 == "+" || $0 == "\u{FF0B}" }) {
            for n in normalized.numbers {
                if let reading = normalizer.otherNationalReading(of: n) { nationalForms.noteAccepted(reading, place: (row.file, row.record.line)) }
            }
        }
        var isRange = false
        var keptRange: (first: UInt64, last: UInt64)? = nil
        if let slot = f.rangeEnd {
            guard let endText = try row.field(slot, "range end", required: true) else { return nil }
            let endRaw = compose(endText ?? "")
            let end: NormalizedNumbers
            do throws(NumberProblem) {
                end = try normalizer.normalize(endRaw, country: country)
            } catch {
                try row.reject(error.reason, "range end: \(error.message)", raw: InputQuote.excerpt(endRaw))
                return nil
            }
            guard normalized.numbers.count == 1, end.numbers.count == 1 else {
                try row.reject(.badRange, "a range needs one number at each end", raw: "\(raw)..\(endRaw)")
                return nil
            }
            let a = normalized.numbers[0], b = end.numbers[0]
            guard a <= b, String(a).count == String(b).count else {
                try row.reject(.badRange, "range \(a)...\(b): the end is before the start or has another length", raw: "\(raw)..\(endRaw)")
                return nil
            }
            let count = b - a + 1
            if options.keepRanges && count > 1 {
                keptRange = (a, b)
            } else {
                guard count <= UInt64(options.maxRangeExpansion) else {
                    try row.reject(.rangeTooLarge, "range \(a)...\(b) has \(count) numbers, more than --max-range-expansion \(options.maxRangeExpansion)",
                                  raw: "\(raw)..\(endRaw)")
                    return nil
                }
                guard UInt64(rangeNumbers) + count <= UInt64(options.maxExpandedTotal) else {
                    // Not a bad row: the input as a whole is bigger than the build may take.
                    throw PipelineError(.limitExceeded, "\(file):\(record.line): range \(a)...\(b) would take the numbers expanded from ranges past \(options.maxExpandedTotal) (--max-expanded-total); nothing written")
                }
                normalized.numbers = Array(a...b)
                isRange = true
            }
        }

        return RowNumbers(normalized: normalized, isRange: isRange, keptRange: keptRange)
    }

    private func readLabel(_ row: Row) throws(PipelineError) -> String? {
        let f = row.slots, record = row.record, file = row.file
        // Label.
        var label = ""
        if let slot = f.label {
            guard var l = try row.field(slot, "label", required: false) else { return nil }
            if !f.extraLabels.isEmpty {
                // Repeated --label-field: the non-empty values joined with ", ".
                var parts: [String] = []
                if let first = l?.trimmedASCII, !first.isEmpty { parts.append(first) }
                for extra in f.extraLabels {
                    guard let t = try row.field(extra, "label", required: false) else { return nil }
                    if let t = t?.trimmedASCII, !t.isEmpty { parts.append(t) }
                }
                l = parts.joined(separator: ", ")
            }
            if let l {
                let cleaned: LabelCleaner.CleanedLabel
                do throws(LabelText.Problem) {
                    cleaned = try options.labels.clean(l)
                } catch {
                    try row.reject(.badLabel, "the label has \(error.what)")
                    return nil
                }
                guard cleaned.label.utf8.count <= LabelText.maxBytes else {
                    try row.reject(.badLabel, "the label is \(cleaned.label.utf8.count) bytes; the limit is \(LabelText.maxBytes) (see --max-label-bytes)")
                    return nil
                }
                if !cleaned.hiddenRemoved.isEmpty { warn(file, record.line, .hiddenCharactersRemoved, cleaned.hiddenRemovedWarning) }
                if cleaned.truncated { warn(file, record.line, .labelTruncated, "label cut to \(cleaned.label.utf8.count) bytes") }
                label = cleaned.label
            }
        }

        return label
    }

    private func readCategory(_ row: Row) throws(PipelineError) -> Category? {
        let f = row.slots
        // Category.
        var category = options.fixedCategory ?? .identify
        if options.fixedCategory == nil, let slot = f.category {
            guard let c = try row.field(slot, "category", required: false) else { return nil }
            let value = (c ?? "").trimmedASCII
            if let cached = categoryCache[value] {
                category = cached
            } else {
                do throws(CallerIDError) {
                    category = try options.categories.category(for: value)
                } catch {
                    try row.reject(.badCategory, error.message, raw: InputQuote.excerpt(value))
                    return nil
                }
                categoryCache[value] = category
            }
        }

        return category
    }

    private func readWeight(_ row: Row) throws(PipelineError) -> UInt64? {
        let f = row.slots
        // Weight.
        var weight: UInt64 = 0
        if let slot = f.weight {
            guard let w = try row.field(slot, "weight", required: false) else { return nil }
            let t = (w ?? "").trimmedASCII
            if !t.isEmpty {
                guard let v = UInt64(t) ?? Double(t).flatMap({ $0 >= 0 && $0 < 1.8e19 && $0 == $0.rounded() ? UInt64($0) : nil }) else {
                    try row.reject(.badWeight, "weight \(InputQuote.quoted(t)) is not a non-negative integer", raw: InputQuote.excerpt(t))
                    return nil
                }
                weight = v
            }
        }

        return weight
    }

    /// The region of a row (`--split-by field`) and of each of its numbers (`--split-by prefix`).
    private func readRegions(_ row: Row, _ numbers: [UInt64]) throws(PipelineError) -> (field: UInt16, prefix: [UInt16])? {
        let f = row.slots
        // Region.
        var fieldRegion: UInt16 = 0
        if options.split == .field, let slot = f.region {
            guard let r = try row.field(slot, "region", required: true) else { return nil }
            var value = (try? LabelCleaner().clean(r ?? ""))?.label ?? ""
            if let sep = options.regionAfter, let range = value.range(of: sep, options: .backwards) {
                value = String(value[range.upperBound...]).trimmedASCII
            }
            guard !value.isEmpty else {
                try row.reject(.noRegion, "the region field is empty")
                return nil
            }
            fieldRegion = try regionID(options.regionMap.region(forValue: value))
        }
        var prefixRegions: [UInt16] = []
        if options.split == .prefix {
            for n in numbers {
                guard let r = options.regionMap.region(forNumber: n) else {
                    try row.reject(.noRegion, "no prefix of the region map matches \(n)")
                    return nil
                }
                prefixRegions.append(try regionID(r))
            }
        }

        return (fieldRegion, prefixRegions)
    }

    /// An accepted row: its payload interned, its numbers (or kept range) appended.
    private func store(_ row: Row, _ read: RowNumbers, label: String, category: Category, weight: UInt64,
                       regions: (field: UInt16, prefix: [UInt16])) throws(PipelineError) {
        let record = row.record, file = row.file
        let normalized = read.normalized, isRange = read.isRange, keptRange = read.keptRange
        let fieldRegion = regions.field, prefixRegions = regions.prefix
        if direct != nil {
            guard try storeDirect(row, normalized.numbers, label: label, category: category) else { return }
            for w in normalized.warnings { warn(file, record.line, w.kind, w.message) }
            if isRange {
                rangeRows += 1
                rangeNumbers += normalized.numbers.count
            }
            return
        }
        for w in normalized.warnings { warn(file, record.line, w.kind, w.message) }
        let id = payloadID(PayloadKey(label: Array(label.utf8), category: category)) { label }
        if let r = keptRange {
            keptFirst.append(r.first)
            keptLast.append(r.last)
            keptPayload.append(id)
            return
        }
        if isRange {
            // Counted once the row is accepted (a bad label or category after the range rejects it).
            rangeRows += 1
            rangeNumbers += normalized.numbers.count
        }
        for (k, n) in normalized.numbers.enumerated() {
            numbers.append(n)
            payloadOf.append(id)
            if options.split == .field { regionOf.append(fieldRegion) }
            if options.split == .prefix { regionOf.append(prefixRegions[k]) }
            if options.top != nil { weightOf.append(weight) }
        }
        if let spilled, rowMemory >= spilled.runs.memoryLimit { try spillRun(spilled) }
    }

    /// The id of a (label, category) pair, a new one when it is first seen.
    private func payloadID(_ key: PayloadKey, label: () -> String) -> UInt32 {
        if let existing = payloadIndex[key] { return existing }
        let id = UInt32(payloads.count)
        payloads.append(Payload(label: label(), category: key.category))
        payloadIndex[key] = id
        payloadBytes += 2 * key.label.count + 96
        return id
    }

    /// An accepted row's numbers handed to the builder of one database file; false when the
    /// builder refuses the row (it is rejected: a 257th category, a label it cannot store).
    private func storeDirect(_ row: Row, _ numbers: [UInt64], label: String, category: Category) throws(PipelineError) -> Bool {
        do throws(CallerIDError) {
            try direct!.admit(category)
        } catch {
            if error.code == .io { throw PipelineError(error) }
            try row.reject(.badCategory, error.message)
            return false
        }
        for n in numbers {
            do throws(CallerIDError) {
                try direct!.add(n, label: label, category: category)
            } catch {
                // A run that could not be spilled is the build's failure, not the row's.
                if error.code == .io { throw PipelineError(error) }
                try row.reject(.badLabel, error.message)
                return false
            }
        }
        return true
    }

    /// A row of the fast route whose label the database builder holds already, stored
    /// without checking the label again; false when the builder does not hold it (or there
    /// is no builder), and the row's label is still to be checked.
    private func storeRepeated(_ row: PlainRowRoute.Row, file: String, line: Int) throws(PipelineError) -> Bool {
        guard direct != nil else { return false }
        do throws(CallerIDError) {
            guard try direct!.addRepeated(row.number, utf8Label: row.label, category: row.category) else { return false }
        } catch {
            throw PipelineError(error)   // only writing a spilled run throws
        }
        stored(row, file: file, line: line)   // (a build with a builder spills no rows of its own)
        return true
    }

    /// ``storeRepeated(_:file:line:)`` for the fields of `line` read ahead: no ``PlainRowRoute/Row``
    /// is made, and the category's code in the builder is looked up once per category.
    private func storeRepeated(_ fields: PlainRowRoute.Fields, in line: UnsafeRawBufferPointer, file: String, line number: Int) throws(PipelineError) -> Bool {
        guard direct != nil, let code = aheadCode(fields.category) else { return false }
        let label = UnsafeRawBufferPointer(rebasing: line[Int(fields.labelStart)..<Int(fields.labelEnd)])
        do throws(CallerIDError) {
            guard try direct!.addRepeated(fields.number, utf8Label: label, categoryCode: code) else { return false }
        } catch {
            throw PipelineError(error)   // only writing a spilled run throws
        }
        rowsRead += 1
        if fields.reading >= 0 { nationalForms.noteAccepted(aheadReadings[Int(fields.reading)], place: (file, number)) }
        return true
    }

    /// The builder's code of the category at `index` of ``aheadCategories``; nil when the
    /// builder refuses it (more than 256 categories, or a name with two actions).
    private func aheadCode(_ index: UInt32) -> UInt8? {
        let i = Int(index)
        if aheadCodes[i] == Self.unknownCode {
            aheadCodes[i] = (try? direct!.code(of: aheadCategories[i])).map(Int16.init) ?? Self.refusedCode
        }
        return aheadCodes[i] < 0 ? nil : UInt8(aheadCodes[i])
    }

    private static let unknownCode: Int16 = -1
    private static let refusedCode: Int16 = -2

    /// The counts and notes of a row the fast route stored.
    @inline(__always)
    private func stored(_ row: PlainRowRoute.Row, file: String, line: Int) {
        rowsRead += 1
        if let reading = row.reading { nationalForms.noteAccepted(reading, place: (file, line)) }
    }

    /// A row of the fast route (``PlainRowRoute``), stored; false when the store refuses it,
    /// to have the general reading reject it with its reason.
    private func store(_ row: PlainRowRoute.Row, file: String, line: Int) throws(PipelineError) -> Bool {
        if direct != nil {
            do throws(CallerIDError) {
                if let cleaned = row.cleaned {
                    try direct!.add(row.number, label: cleaned, category: row.category)
                } else {
                    try direct!.add(row.number, utf8Label: row.label, category: row.category)
                }
            } catch {
                if error.code == .io { throw PipelineError(error) }
                return false
            }
        } else {
            let bytes = row.cleaned.map { Array($0.utf8) } ?? Array(row.label)
            let id = payloadID(PayloadKey(label: bytes, category: row.category)) { row.cleaned ?? String(decoding: row.label, as: UTF8.self) }
            numbers.append(row.number)
            payloadOf.append(id)
        }
        stored(row, file: file, line: line)
        if let spilled, rowMemory >= spilled.runs.memoryLimit { try spillRun(spilled) }
        return true
    }

    /// Forgets the labels of the rows in memory (they were spilled).
    func clearPayloads() {
        payloads.removeAll(keepingCapacity: true)
        payloadIndex.removeAll(keepingCapacity: true)
        payloadBytes = 0
    }


    private func regionID(_ name: String) throws(PipelineError) -> UInt16 { try regions.id(of: name) }
}

/// The regions of a run, each named once, by dense id (at most 65,535: ids are 16 bits).
struct RegionNames {
    private(set) var names: [String] = []
    private var index: [String: UInt16] = [:]

    /// The id of `name`, a new one when it is first met.
    mutating func id(of name: String) throws(PipelineError) -> UInt16 {
        if let id = index[name] { return id }
        guard names.count < Int(UInt16.max) else { throw PipelineError(.limitExceeded, "more than 65535 regions") }
        let id = UInt16(names.count)
        names.append(name)
        index[name] = id
        return id
    }
}

/// Where each wanted field is in a record.
struct FieldSlots {
    struct Slot {
        enum Where {
            case index(Int)
            /// JSON: the key with this name (exact), else one whose letters and digits match.
            case key(exact: [UInt8]?, loose: Set<String>)
            case position(Int)
        }
        var place: Where
        /// Chosen by an option (so a missing field rejects the row) rather than by default.
        var explicit: Bool
        var name: String

        func index(in record: Record) -> Int? {
            switch place {
            case .index(let i), .position(let i):
                return i < record.values.count ? i : nil
            case .key(let exact, let loose):
                if let exact {
                    for i in record.names.indices where record.name(i).elementsEqual(exact) { return i }
                }
                for i in record.names.indices where loose.contains(FieldSlots.loose(record.name(i))) { return i }
                return nil
            }
        }
    }

    var number: Slot?
    var label: Slot?
    /// Repeated label fields after the first.
    var extraLabels: [Slot] = []
    var category: Slot?
    var region: Slot?
    var weight: Slot?
    var country: Slot?
    var rangeEnd: Slot?
    var numberPrefix: Slot?
    /// The plain layout (a TSV file without a header, no field chosen): NUMBER, LABEL and
    /// CATEGORY, so a row with more columns is a bad row, as in a plain `lookup build`
    /// (a TAB inside a label would shift the category otherwise).
    var maxColumns: Int? = nil

    static let defaultNames: [String: [String]] = [
        "number": ["number", "phone", "phonenumber", "tel", "telephone", "msisdn", "e164", "номер", "телефон"],
        "label": ["label", "name", "title", "caption", "название"],
        "category": ["category", "type", "kind", "категория"],
    ]

    /// Lowercased letters and digits of a name: `Phone Number` → `phonenumber`.
    static func loose<C: Collection<UInt8>>(_ bytes: C) -> String {
        String(String(decoding: bytes, as: UTF8.self).lowercased().filter { $0.isLetter || $0.isNumber })
    }
    static func loose(_ s: String) -> String { loose(Array(s.utf8)) }

    /// JSON: names are looked up in every object.
    init(json options: PipelineOptions) {
        func slot(_ sel: FieldSelector?, _ key: String?) -> Slot? {
            switch sel {
            case .name(let n)?: return Slot(place: .key(exact: Array(n.utf8), loose: [FieldSlots.loose(n)]), explicit: true, name: InputQuote.quoted(n))
            case .position(let p)?: return Slot(place: .position(p - 1), explicit: true, name: "field \(p)")
            case nil:
                guard let key, let names = FieldSlots.defaultNames[key] else { return nil }
                return Slot(place: .key(exact: nil, loose: Set(names)), explicit: key == "number", name: names.prefix(3).joined(separator: "/"))
            }
        }
        number = slot(options.numberField, "number")
        label = slot(options.labelField, "label")
        extraLabels = options.additionalLabelFields.compactMap { slot($0, nil) }
        category = slot(options.categoryField, "category")
        region = slot(options.regionField, nil)
        weight = slot(options.weightField, nil)
        country = slot(options.countryField, nil)
        rangeEnd = slot(options.rangeEndField, nil)
        numberPrefix = slot(options.numberPrefixField, nil)
    }

    private init() {}

    /// Whether the first record of a TSV or CSV file is a header: as ``PipelineOptions/header``
    /// says, or (`auto`) when fields are chosen by name or the number field has no digit.
    static func isHeaderRow(_ first: Record, options: PipelineOptions, byName: Bool, file: String) throws(PipelineError) -> Bool {
        var isHeader: Bool
        switch options.header {
        case .present: isHeader = true
        case .absent: isHeader = false
        case .auto:
            if byName {
                isHeader = true
            } else {
                var column = 0
                if case .position(let p)? = options.numberField { column = p - 1 }
                let value = column < first.values.count ? first.value(column) : []
                isHeader = !value.contains { $0 >= 0x30 && $0 <= 0x39 }
            }
        }
        if byName && !isHeader {
            throw PipelineError(.invalidConfiguration, "\(file): fields are chosen by name but the file has no header row (use positions like --number-field 1, or --header yes)")
        }
        return isHeader
    }

    /// TSV/CSV: decides from the first record whether it is a header and resolves the fields.
    static func delimited(first: Record, format: InputFormat, options: PipelineOptions, file: String) throws(PipelineError) -> (FieldSlots, Bool) {
        let selectors = [options.numberField, options.labelField, options.categoryField, options.regionField,
                         options.weightField, options.countryField, options.rangeEndField, options.numberPrefixField]
        let byName = (selectors + options.additionalLabelFields.map { Optional($0) }).contains { if case .name = $0 { true } else { false } }
        let isHeader = try isHeaderRow(first, options: options, byName: byName, file: file)
        var slots = FieldSlots()
        let names = isHeader ? first.values.indices.map { String(decoding: first.value($0), as: UTF8.self).trimmedASCII } : []
        /// The header for messages: the first 10 names, quoted, and how many more.
        func columnList(_ names: [String]) -> String {
            let shown = names.prefix(10).map { InputQuote.quoted($0) }.joined(separator: ", ")
            return names.count > 10 ? shown + " and \(names.count - 10) more" : shown
        }
        func resolve(_ sel: FieldSelector?, _ key: String?, _ what: String) throws(PipelineError) -> Slot? {
            switch sel {
            case .position(let p)?:
                return Slot(place: .index(p - 1), explicit: true, name: "column \(p)")
            case .name(let n)?:
                if let i = names.firstIndex(of: n) ?? names.firstIndex(where: { FieldSlots.loose($0) == FieldSlots.loose(n) }) {
                    return Slot(place: .index(i), explicit: true, name: InputQuote.quoted(names[i]))
                }
                throw PipelineError(.invalidInput, "\(file): no column \(InputQuote.quoted(n)) for the \(what) in the header (columns: \(columnList(names)))")
            case nil:
                guard let key else { return nil }
                if isHeader {
                    let wanted = FieldSlots.defaultNames[key] ?? []
                    if let i = names.firstIndex(where: { wanted.contains(FieldSlots.loose($0)) }) {
                        return Slot(place: .index(i), explicit: false, name: InputQuote.quoted(names[i]))
                    }
                    if key == "number" {
                        throw PipelineError(.invalidInput, "\(file): no number column in the header (columns: \(columnList(names))); choose one with --number-field")
                    }
                    return nil
                }
                let position = ["number": 1, "label": 2, "category": 3][key]!
                return Slot(place: .index(position - 1), explicit: false, name: "column \(position)")
            }
        }
        slots.number = try resolve(options.numberField, "number", "number")
        slots.label = try resolve(options.labelField, "label", "label")
        for extra in options.additionalLabelFields {
            if let slot = try resolve(extra, nil, "label") { slots.extraLabels.append(slot) }
        }
        slots.category = try resolve(options.categoryField, "category", "category")
        slots.region = try resolve(options.regionField, nil, "region")
        slots.weight = try resolve(options.weightField, nil, "weight")
        slots.country = try resolve(options.countryField, nil, "country")
        slots.rangeEnd = try resolve(options.rangeEndField, nil, "range end")
        slots.numberPrefix = try resolve(options.numberPrefixField, nil, "number prefix")
        if !isHeader && format == .tsv && (selectors + options.additionalLabelFields.map { Optional($0) }).allSatisfy({ $0 == nil }) {
            slots.maxColumns = 3
        }
        return (slots, isHeader)
    }
}

extension String {
    /// Without leading and trailing ASCII spaces and tabs; `self` when there are none (no
    /// Foundation call on the per-row path).
    var trimmedASCII: String {
        let u = utf8
        guard let f = u.first, let l = u.last else { return self }
        if f != 0x20 && f != 0x09 && l != 0x20 && l != 0x09 { return self }
        guard let start = u.firstIndex(where: { $0 != 0x20 && $0 != 0x09 }) else { return "" }
        let end = u.lastIndex(where: { $0 != 0x20 && $0 != 0x09 })!
        return String(self[start...end])
    }
}
