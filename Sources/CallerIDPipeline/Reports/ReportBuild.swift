public import CallerID
import CallerIDDirectory
import Foundation

/// What ``ReportBuild/write(to:)`` did: the reports read and left out, the verdicts, and the
/// block pack written (``pack``, as ``Pipeline/write(to:)`` reports a build).
public struct ReportSummary: Sendable {
    /// Rows read (reports, bad rows included) and rows refused.
    public var rowsRead = 0
    public var rowsRejected = 0
    public var rejectedByReason: [RejectReason: Int] = [:]
    /// The moment the score was computed for (Unix seconds).
    public var now: Int64 = 0
    /// Reports left out: older than the maximum age, or after ``now``.
    public var reportsTooOld = 0
    public var reportsInFuture = 0
    /// Reports a later report of the same reporter on the same number replaced.
    public var reportsSuperseded = 0
    /// Reporter-days over the daily cap (each of their reports weighed cap/n), and the distinct
    /// reporters that had such a day.
    public var cappedReporterDays = 0
    public var cappedReporters = 0
    /// Numbers with at least one report in the window.
    public var numbersScored = 0
    /// Numbers blocked, by category name.
    public var blockedByCategory: [String: Int] = [:]
    public var blocked: Int { blockedByCategory.values.reduce(0, +) }
    /// Protected numbers that passed the threshold (written as identification entries).
    public var protectedPassed = 0
    /// Against ``ReportOptions``' previous pack (`--previous`): numbers added, removed and
    /// relabelled (another label or category), by category name (the new one; a removed
    /// number's old one).
    public var previous: PackChanges? = nil
    /// The pack written.
    public var pack: PipelineSummary
}

/// A report as ``ReportBuild`` read it (``ReportBuild/onRecord``): its line, its number, the
/// hash of its reporter, its time (Unix seconds), its verdict (`safe` or a blocking category's
/// name) and its region ("" without a region field).
public struct ReportRecord: Sendable, Equatable {
    public var line: Int
    public var number: UInt64
    public var reporter: UInt64
    public var time: Int64
    public var verdict: String
    public var region: String
}

/// Numbers added, removed and relabelled between two packs, by category name.
public struct PackChanges: Sendable, Equatable {
    public var added: [String: Int] = [:]
    public var removed: [String: Int] = [:]
    public var relabelled: [String: Int] = [:]
    public var unchanged = 0
}

/// Turns a log of people's reports into a block pack (`lookup reports`): reads JSON Lines, CSV
/// or TSV reports, scores each number (docs/REPORTS.md: one verdict per reporter and number,
/// half-life decay, a daily cap per reporter, `safe` verdicts against, a score and a minimum of
/// reporters), and writes the blocked numbers as ``Pipeline`` writes a build, so that `sign`,
/// `fetch`, `install`, `serve` and `export` take the pack as they take a directory.
///
/// ```swift
/// var options = ReportOptions()
/// options.input.country = "RU"
/// let reports = try ReportBuild(options: options)
/// try reports.prepare(output: "toxic/")
/// try reports.add(file: "reports.jsonl")
/// let summary = try reports.write(to: "toxic/")
/// ```
///
/// Memory: 24 bytes per report while reading, then per report kept; with
/// ``PipelineOptions/buildOptions`` `memoryLimit` the records go to sorted runs beside the
/// output past the limit, and each stage reads them back in order.
public final class ReportBuild {
    public let options: ReportOptions
    let normalizer: NumberNormalizer
    /// Every rejected row, as it is found.
    public var onRejected: (RejectedRow) -> Void = { _ in }
    /// Every change made to an accepted row (a number read with a warning).
    public var onWarning: (RowWarning) -> Void = { _ in }
    /// Progress while reading (the build's phases after).
    public var onProgress: (PipelineProgress) -> Void = { _ in }
    /// When set, every report read is handed here instead of being kept for the score: the
    /// records of a part of a log, read exactly as ``add(file:)`` reads them (`lookup reports
    /// --records`, which the Spark job's executors run on their parts).
    public var onRecord: ((ReportRecord) -> Void)? = nil

    public private(set) var rowsRead = 0
    public private(set) var rowsRejected = 0
    public private(set) var rejectedByReason: [RejectReason: Int] = [:]
    /// What reads the numbers ("libphonenumber", or "built-in table" and why).
    public var numberRulesFallback: String? { normalizer.fallbackReason }

    /// The blocking categories a report may name, by name; a verdict's code is its index + 1
    /// (0 is `safe`), so codes order as names do.
    let categoryNames: [String]
    private var codeOfValue: [String: UInt8] = [:]
    private var regions = RegionNames()
    private var reports: TripleSorter? = nil
    private var output = "."
    /// The newest report read (the default ``ReportOptions/now``).
    private var newest: Int64 = -1

    public init(options: ReportOptions) throws(PipelineError) {
        try options.check()
        self.options = options
        normalizer = try NumberNormalizer(plan: options.input.numberingPlan, validity: options.input.validity, rules: options.input.numberRules)
        var names = Category.blockingNames
        for c in options.input.categories.entries.values where c.action == .block { names.insert(c.name) }
        if let c = options.input.fixedCategory {
            guard c.action == .block else {
                throw PipelineError(.invalidConfiguration, "--category \(c.name): a report's category must block (one of \(Category.blockingNames.sorted().joined(separator: ", ")))")
            }
            names.insert(c.name)
        }
        categoryNames = names.sorted()
        guard categoryNames.count < 255 else { throw PipelineError(.limitExceeded, "more than 254 blocking categories") }
    }

    /// Checks that `output` can take the pack these options write (a database file, or a
    /// build directory), before anything is read: ``Pipeline/checkOutput(_:)``.
    public func checkOutput(_ output: String) throws(PipelineError) {
        try Pipeline(options: packOptions()).checkOutput(output)
    }

    /// Names the output before reading, so that records past the memory limit spill beside it.
    public func prepare(output: String) {
        self.output = output
        reports = TripleSorter(memoryLimit: options.input.buildOptions.memoryLimit.map { $0 / 2 }, spillTarget: output)
    }

    // MARK: Reading

    /// Reads one log file (`-` for standard input).
    public func add(file path: String) throws(PipelineError) {
        if reports == nil { prepare(output: output) }
        let format = options.input.format ?? InputFormat.guess(path: path)
        var source = try ByteSource(path: path, encoding: options.input.encoding)
        defer { source.close() }
        let encodingName = source.encoding.rawValue
        var fields: ReportFields? = format.isJSON ? ReportFields(json: options) : nil
        let total = source.totalBytes
        // A report takes 40 bytes or more of a log (a number, a reporter, a time, a category).
        if let total { reports!.reserve(Int(clamping: total / 40)) }
        let limits = ReadLimits(recordBytes: options.input.maxRecordBytes, fieldBytes: options.input.maxFieldBytes)
        let onRecord = { (record: inout Record) throws(PipelineError) in
            if fields == nil {
                let (slots, isHeader) = try ReportFields.delimited(first: record, options: self.options, file: path)
                fields = slots
                if isHeader { return }
            }
            self.rowsRead += 1
            try self.read(record, fields!, file: path, encodingName: encodingName)
        }
        let onSyntaxIssue = { (issue: SyntaxIssue) throws(PipelineError) in
            self.rowsRead += 1
            try self.reject(RejectedRow(file: path, line: issue.line, raw: issue.raw, reason: issue.reason, message: issue.message))
        }
        let onProgress = { (bytes: Int64) in
            self.onProgress(PipelineProgress(file: path, bytesRead: bytes, totalBytes: total, rowsRead: self.rowsRead))
        }
        if case .csv(let delimiter) = format, self.onRecord == nil, readsPlainLines {
            let csv = CSVReading(delimiter: delimiter, limits: limits, onRecord: onRecord, onSyntaxIssue: onSyntaxIssue)
            try readCSV(&source, csv, fields: { fields }, onProgress: onProgress)
            return
        }
        let reader = RecordReader(format: format, limits: limits, onRecord: onRecord, onSyntaxIssue: onSyntaxIssue, onProgress: onProgress)
        try reader.read(&source)
    }

    /// How CSV is read in general (``CSVReader``) and where its records and issues go.
    private struct CSVReading {
        let delimiter: UInt8
        let limits: ReadLimits
        let onRecord: (inout Record) throws(PipelineError) -> Void
        let onSyntaxIssue: (SyntaxIssue) throws(PipelineError) -> Void

        func reader(from line: Int) -> CSVReader {
            CSVReader(delimiter: delimiter, limits: limits, firstLine: line, onRecord: onRecord, onSyntaxIssue: onSyntaxIssue)
        }

        /// One line without quotes (its line feed not included), read in general.
        func line(_ bytes: Slice<UnsafeRawBufferPointer>, number: Int) throws(PipelineError) {
            var reader = reader(from: number)
            var chunk = [UInt8](bytes)
            chunk.append(0x0A)
            try reader.feed(chunk)
            try reader.finish()
        }
    }

    /// Bytes of CSV read and split on two threads at a time.
    var batchBytes = 4 << 20
    /// False: CSV is read by the general reader alone, one record at a time (the reading the
    /// plain lines must agree with; tests compare the two).
    var readsPlainLines = true

    /// CSV in batches of whole lines, the plain lines (``PlainReportLines``) of each batch read
    /// on two threads, the others in general on this thread, everything taken in the file's
    /// order. From the first line with a quote (which may hold a line feed) to the end, or
    /// a line longer than a batch, the general reader takes over.
    private func readCSV(_ source: inout ByteSource, _ csv: CSVReading, fields: () -> ReportFields?,
                         onProgress: (Int64) -> Void) throws(PipelineError) {
        var line = 1
        var pending: [UInt8] = []
        var atEnd = false
        var plain: PlainReportLines? = nil
        var tried = false
        while true {
            while pending.count < batchBytes, !atEnd {
                if let chunk = try source.next() { pending.append(contentsOf: chunk) } else { atEnd = true }
            }
            // Whole lines; up to the line of the first quote, or none when no line ends here.
            var cut = atEnd ? pending.count : (pending.lastIndex(of: 0x0A).map { $0 + 1 } ?? 0)
            var handOver = cut == 0 && !atEnd
            if let quote = pending[..<cut].firstIndex(of: 0x22) {
                cut = pending[..<quote].lastIndex(of: 0x0A).map { $0 + 1 } ?? 0
                handOver = true
            }
            try withBytes(pending) { (bytes) throws(PipelineError) in
                var start = 0
                // Until the fields are known (the header, or the first report), line by line.
                while start < cut, fields() == nil {
                    let end = bytes[start..<cut].firstIndex(of: 0x0A) ?? cut
                    try csv.line(bytes[start..<end], number: line)
                    line += 1
                    start = end + 1
                }
                guard start < cut, let f = fields() else { return }
                if !tried {
                    tried = true
                    plain = PlainReportLines(delimiter: csv.delimiter, fields: f, fixedCode: fixedCode, countryGiven: options.input.country != nil,
                                             normalizer: normalizer, limits: csv.limits)
                }
                guard var lines = plain else {
                    while start < cut {
                        let end = bytes[start..<cut].firstIndex(of: 0x0A) ?? cut
                        try csv.line(bytes[start..<end], number: line)
                        line += 1
                        start = end + 1
                    }
                    return
                }
                learn(&lines)
                plain = lines
                let middle = start + (cut - start) / 2
                let split = bytes[middle..<cut].firstIndex(of: 0x0A).map { $0 + 1 } ?? cut
                let (first, second) = runConcurrently({ lines.parse(bytes, in: start..<split) }, { lines.parse(bytes, in: split..<cut) })
                for part in [first, second] {
                    try take(part, bytes, csv, line: line)
                    line += part.lines
                }
            }
            if handOver {
                var reader = csv.reader(from: line)
                try reader.feed(Array(pending[cut...]))
                onProgress(source.bytesRead)
                while let chunk = try source.next() {
                    try reader.feed(chunk)
                    onProgress(source.bytesRead)
                }
                try reader.finish()
                return
            }
            onProgress(source.bytesRead)
            if atEnd { return }
            pending.removeFirst(cut)
        }
    }

    /// The code every report gets from `--category`, if it gives one.
    private var fixedCode: UInt8? {
        options.input.fixedCategory.map { UInt8(categoryNames.firstIndex(of: $0.name)! + 1) }
    }

    /// Tells the plain reading the category values and regions the general reading has met.
    private func learn(_ lines: inout PlainReportLines) {
        if lines.categories.count < codeOfValue.count {
            for (value, code) in codeOfValue where code != 255 {
                let bytes = Array(value.utf8)
                lines.categories[PlainReportLines.key(bytes)] = (bytes, code)
            }
        }
        if lines.regions.count < regions.names.count {
            for (id, name) in regions.names.enumerated() {
                let bytes = Array(name.utf8)
                lines.regions[PlainReportLines.key(bytes)] = (bytes, UInt16(id))
            }
        }
    }

    /// The records of a part read on another thread, and its other lines read in general, in order.
    private func take(_ part: PlainReportLines.Parsed, _ bytes: UnsafeRawBufferPointer, _ csv: CSVReading, line: Int) throws(PipelineError) {
        var next = 0
        for other in part.others {
            for r in part.records[next..<other.before] { try reports!.append(r) }
            rowsRead += other.before - next
            next = other.before
            try csv.line(bytes[other.start..<other.end], number: line + other.line)
        }
        for r in part.records[next...] { try reports!.append(r) }
        rowsRead += part.records.count - next
        if part.newest > newest { newest = part.newest }
    }

    private func reject(_ row: RejectedRow) throws(PipelineError) {
        rowsRejected += 1
        rejectedByReason[row.reason, default: 0] += 1
        onRejected(row.displaySafe)
        try options.input.maxBadRows.check(rejected: rowsRejected, what: "report")
    }

    /// The row being read: where it is, for its rejection, and how its text is encoded.
    private struct Row {
        let record: Record
        let file: String
        let encodingName: String
    }

    private func reject(_ row: Row, _ reason: RejectReason, _ message: String, raw: String? = nil) throws(PipelineError) {
        try reject(RejectedRow(file: row.file, line: row.record.line, raw: raw ?? row.record.rawText, reason: reason, message: message))
    }

    /// The field's bytes; nil (the row rejected) when it is missing, nested or not UTF-8.
    private func field(_ row: Row, _ slot: FieldSlots.Slot, _ what: String) throws(PipelineError) -> ArraySlice<UInt8>? {
        guard let i = slot.index(in: row.record) else {
            try reject(row, .missingField, "no \(what) field (\(slot.name)) in this report")
            return nil
        }
        guard !row.record.nested.contains(i) else {
            try reject(row, .missingField, "the \(what) field (\(slot.name)) is a nested JSON object or array")
            return nil
        }
        let bytes = row.record.value(i)
        guard bytes.withUnsafeBytes({ UTF8Check.isValid($0) }) else {
            try reject(row, .invalidEncoding, "the \(what) field is not valid \(row.encodingName) text")
            return nil
        }
        return bytes
    }

    /// One report: its fields read, checked and kept as a record, or the row rejected.
    private func read(_ record: Record, _ f: ReportFields, file: String, encodingName: String) throws(PipelineError) {
        let row = Row(record: record, file: file, encodingName: encodingName)
        guard let number = try number(row, f), let reporter = try reporter(row, f), let time = try time(row, f),
              let code = try verdict(row, f) else { return }
        // The region, for --split-by field.
        var region: UInt16 = 0
        if let slot = f.region {
            guard let bytes = try field(row, slot, "region") else { return }
            let name = String(decoding: bytes.trimmingSpaces, as: UTF8.self)
            guard !name.isEmpty else {
                try reject(row, .missingField, "the region field is empty (--split-by field needs a region for every report)")
                return
            }
            region = try regions.id(of: name)
        }

        if time > newest { newest = time }
        if let onRecord {
            onRecord(ReportRecord(line: record.line, number: number, reporter: reporter, time: time,
                                  verdict: code == 0 ? "safe" : categoryNames[Int(code) - 1],
                                  region: f.region == nil ? "" : regions.names[Int(region)]))
            return
        }
        try reports!.append(Triple.report(number: number, reporter: reporter, key: ReportKey.pack(time: time, verdict: code, region: region)))
    }

    /// The number, read as `lookup build` reads it; nil when the row was rejected.
    private func number(_ row: Row, _ f: ReportFields) throws(PipelineError) -> UInt64? {
        guard let numberBytes = try field(row, f.number, "number") else { return nil }
        var country = options.input.country
        if let slot = f.country {
            guard let c = try field(row, slot, "country") else { return nil }
            let code = String(decoding: c.trimmingSpaces, as: UTF8.self)
            if !code.isEmpty { country = code.uppercased() }
        }
        if let plain = Self.plainE164(numberBytes, country: country) {
            do throws(NumberProblem) { return try normalizer.normalize(e164: plain) } catch {
                try reject(row, error.reason, error.message, raw: InputQuote.excerpt(bytes: numberBytes))
                return nil
            }
        }
        let raw = String(decoding: numberBytes, as: UTF8.self).trimmedASCII
        let normalized: NormalizedNumbers
        do throws(NumberProblem) { normalized = try normalizer.normalize(raw, country: country) } catch {
            try reject(row, error.reason, error.message, raw: InputQuote.excerpt(raw))
            return nil
        }
        guard normalized.numbers.count == 1 else {
            try reject(row, .badRange, "a report names one number; this field holds \(normalized.numbers.count)", raw: InputQuote.excerpt(raw))
            return nil
        }
        for w in normalized.warnings { onWarning(RowWarning(file: row.file, line: row.record.line, kind: w.kind, message: w.message)) }
        return normalized.numbers[0]
    }

    /// The reporter's id (a hash of the field): an opaque id, never a phone number; nil when
    /// the row was rejected.
    private func reporter(_ row: Row, _ f: ReportFields) throws(PipelineError) -> UInt64? {
        guard let reporterBytes = try field(row, f.reporter, "reporter") else { return nil }
        let reporter = reporterBytes.trimmingSpaces
        guard !reporter.isEmpty else {
            try reject(row, .badReporter, "the reporter is empty: every report needs the (hashed) id of who sent it")
            return nil
        }
        if Self.looksLikePhoneNumber(reporter) {
            try reject(row, .badReporter, "the reporter reads as a phone number: send an opaque id (a hash), never the reporter's number")
            return nil
        }
        return reporter.withUnsafeBytes { Checksum.xxh3(bytes: $0) }
    }

    /// The time, Unix seconds; nil when the row was rejected.
    private func time(_ row: Row, _ f: ReportFields) throws(PipelineError) -> Int64? {
        guard let timeBytes = try field(row, f.time, "time") else { return nil }
        let time: Int64
        do throws(ReportTime.Problem) { time = try ReportTime.parse(timeBytes) } catch {
            try reject(row, .badTime, error.message, raw: InputQuote.excerpt(bytes: timeBytes))
            return nil
        }
        guard time < ReportTime.limit else {
            try reject(row, .badTime, "the time is after the year 36812", raw: InputQuote.excerpt(bytes: timeBytes))
            return nil
        }
        return time
    }

    /// The verdict's code: a blocking category (1…) or `safe` (0); nil when the row was rejected.
    private func verdict(_ row: Row, _ f: ReportFields) throws(PipelineError) -> UInt8? {
        if let fixedCode { return fixedCode }
        guard let slot = f.category else {
            try reject(row, .missingField, "no category field in this report (name one with --category-field, or give every report one with --category)")
            return nil
        }
        guard let bytes = try field(row, slot, "category") else { return nil }
        let value = String(decoding: bytes.trimmingSpaces, as: UTF8.self)
        guard let known = try verdictCode(value) else {
            try reject(row, .badCategory, value.isEmpty
                ? "the category is empty: give a blocking category (\(categoryNames.joined(separator: ", "))) or safe"
                : "\(InputQuote.quoted(value)) is not a blocking category: use one of \(categoryNames.joined(separator: ", ")), or safe (a --category-map can rename yours)",
                raw: InputQuote.excerpt(value))
            return nil
        }
        return known
    }

    /// The code of a category value (0: `safe`); nil when it is not a blocking category.
    private func verdictCode(_ value: String) throws(PipelineError) -> UInt8? {
        if let known = codeOfValue[value] { return known == 255 ? nil : known }
        var code: UInt8 = 255
        if value.lowercased() == "safe" {
            code = 0
        } else if !value.isEmpty, let c = try? options.input.categories.category(for: value), c.action == .block,
                  let i = categoryNames.firstIndex(of: c.name) {
            code = UInt8(i + 1)
        }
        if codeOfValue.count < 4096 { codeOfValue[value] = code }
        return code == 255 ? nil : code
    }

    /// A time as reports give it (RFC 3339 or Unix seconds) in seconds since 1970; nil when it
    /// is neither (`--now`).
    public static func parseTime(_ text: String) -> Int64? {
        guard let t = try? ReportTime.parse(Array(text.utf8)), t < ReportTime.limit else { return nil }
        return t
    }

    /// `2026-12-05T09:30:00Z` for seconds since 1970.
    public static func formatTime(_ seconds: Int64) -> String { ReportTime.format(seconds) }

    /// The digits of a number field that is plain E.164 (`+` and 8–15 digits, or digits alone
    /// when no country reads them as a national number): the normalizer's table lookup, no parse.
    static func plainE164(_ bytes: ArraySlice<UInt8>, country: String?) -> UInt64? {
        var digits = bytes.trimmingSpaces
        var plus = false
        if digits.first == 0x2B {
            plus = true
            digits = digits.dropFirst()
        }
        guard plus || country == nil, (8...15).contains(digits.count), digits.first != 0x30 else { return nil }
        var v: UInt64 = 0
        for c in digits {
            guard c >= 0x30 && c <= 0x39 else { return nil }
            v = v * 10 + UInt64(c - 0x30)
        }
        return v
    }

    /// True for a reporter id made of 7–15 digits with phone punctuation only (`+7 913 123-45-67`).
    static func looksLikePhoneNumber(_ bytes: some Collection<UInt8>) -> Bool {
        var digits = 0
        for c in bytes {
            switch c {
            case 0x30...0x39: digits += 1
            case 0x2B, 0x20, 0x2D, 0x28, 0x29, 0x2E: continue
            default: return false
            }
        }
        return (7...15).contains(digits)
    }

    // MARK: Scoring and writing

    /// Scores every number, writes the block pack to `output` (a database file or a build
    /// directory, as ``Pipeline/write(to:)`` writes them; a failure leaves `output` as it was)
    /// and returns what was done. `previous`: an earlier pack (file or build directory) to count
    /// the numbers added, removed and relabelled against.
    public func write(to output: String, previous: String? = nil) throws(PipelineError) -> ReportSummary {
        if reports == nil { prepare(output: output) }
        if case .percent(let p) = options.input.maxBadRows, rowsRead > 0 {
            let share = Double(rowsRejected) * 100 / Double(rowsRead)
            if share > p {
                throw PipelineError(.tooManyBadRows, "\(rowsRejected) of \(rowsRead) reports rejected (\(String(format: "%.2f", share))%), more than the \(p)% allowed; nothing written")
            }
        }
        let pipeline = try Pipeline(options: packOptions())
        // The score is this build's sorting phase (reported below); of the pack's build only its
        // writing is reported (its reading of the blocked numbers' spilled list and their sort
        // are brief and would name a temporary file).
        pipeline.onProgress = { [onProgress] p in if p.phase == .writing { onProgress(p) } }
        try pipeline.checkOutput(output)
        let protection = try Protection(paths: options.protect, normalizer: normalizer)
        var stats = ScoreStats()
        let now = options.now ?? max(newest, 0)
        let area: SpillArea
        do { area = try SpillArea(nextTo: output) } catch { throw PipelineError(error) }
        let entriesPath = area.newPath("entries.tsv")
        defer { area.remove(entriesPath) }
        var writer: SpillWriter
        do { writer = try SpillWriter(path: entriesPath) } catch { throw PipelineError(error) }
        var line: [UInt8] = []
        var blockedByCategory: [String: Int] = [:]
        var protectedPassed = 0
        var previousDiff = try previous.map { (p) throws(PipelineError) in try PackDiff(previous: p) }

        let scorer = ReportScorer(options: options, now: now, categoryCount: categoryNames.count,
                                  memoryLimit: options.input.buildOptions.memoryLimit.map { $0 / 2 }, spillTarget: output)
        onProgress(PipelineProgress(file: output, bytesRead: 0, totalBytes: nil, rowsRead: rowsRead, phase: .sorting, count: reports!.count))
        let sorted = try reports!.sorted()
        reports = nil
        try scorer.score(sorted, stats: &stats) { (verdict) throws(PipelineError) in
            let category = categoryNames[Int(verdict.category) - 1]
            var label: String
            var categoryName = category
            if let name = try protection.name(of: verdict.number) {
                protectedPassed += 1
                label = ReportLabels.render(options.protectedLabelTemplate, category: category, reporters: verdict.reporters,
                                            name: name.isEmpty ? "+\(verdict.number)" : name, language: options.language)
                categoryName = "identify"
            } else {
                label = ReportLabels.render(options.labelTemplate, category: category, reporters: verdict.reporters, name: "", language: options.language)
                blockedByCategory[category, default: 0] += 1
            }
            label = LabelText.prefix(of: label, budget: 65_535) { $0.utf8.count }
            try previousDiff?.note(verdict.number, category: categoryName, label: label)
            line.removeAll(keepingCapacity: true)
            line.append(contentsOf: String(verdict.number).utf8)
            line.append(0x09)
            line.append(contentsOf: label.utf8.map { $0 == 0x09 || $0 == 0x0A || $0 == 0x0D ? 0x20 : $0 })
            line.append(0x09)
            line.append(contentsOf: categoryName.utf8)
            if options.input.split == .field {
                line.append(0x09)
                line.append(contentsOf: regions.names[Int(verdict.region)].utf8)
            }
            line.append(0x0A)
            do throws(CallerIDError) { try writer.write(line) } catch { throw PipelineError(error) }
        }
        do { try writer.finish() } catch { throw PipelineError(error) }

        pipeline.prepare(output: output)
        try pipeline.add(file: entriesPath)
        let pack = try pipeline.write(to: output)
        var summary = ReportSummary(pack: pack)
        summary.rowsRead = rowsRead
        summary.rowsRejected = rowsRejected
        summary.rejectedByReason = rejectedByReason
        summary.now = now
        summary.reportsTooOld = stats.tooOld
        summary.reportsInFuture = stats.inFuture
        summary.reportsSuperseded = stats.superseded
        summary.cappedReporterDays = stats.cappedDays
        summary.cappedReporters = stats.cappedReporters
        summary.numbersScored = stats.scored
        summary.blockedByCategory = blockedByCategory
        summary.protectedPassed = protectedPassed
        summary.previous = try previousDiff?.finish()
        return summary
    }

    /// The options of the build that writes the pack: the blocked numbers as TSV rows
    /// (`NUMBER<TAB>LABEL<TAB>CATEGORY[<TAB>REGION]`), with the user's outputs.
    private func packOptions() throws(PipelineError) -> PipelineOptions {
        var o = PipelineOptions()
        let user = options.input
        o.format = .tsv
        o.header = .absent
        o.numberField = .position(1)
        o.labelField = .position(2)
        o.categoryField = .position(3)
        if user.split == .field { o.regionField = .position(4) }
        // The numbers were read and checked already: E.164 digits, stored as they are.
        o.validity = .any
        o.numberRules = .builtInTable
        o.numberingPlan = user.numberingPlan
        o.labels.hiddenCharacters = user.labels.hiddenCharacters
        var map = CategoryMap()
        for name in categoryNames {
            do { map.set(name, to: try Category(name, action: .block)) } catch { throw PipelineError(error) }
        }
        map.set("identify", to: .identify)
        o.categories = map
        o.split = user.split
        o.regionMap = user.regionMap
        o.regionAfter = user.regionAfter
        o.blockList = user.blockList
        o.maxEntries = user.maxEntries
        o.maxBadRows = .count(0)
        o.datasetVersion = user.datasetVersion
        o.buildTime = user.buildTime
        o.buildOptions = user.buildOptions
        return o
    }
}

