import CallerID

/// The layout of an input file.
public enum InputFormat: Sendable, Equatable, CustomStringConvertible {
    /// Tab-separated lines, no quoting. Empty lines and lines starting with `#` are skipped.
    case tsv
    /// RFC 4180: fields separated by `delimiter`, optionally in double quotes (`""` is a quote
    /// inside one; quoted fields may hold delimiters and line breaks); CRLF or LF line ends.
    case csv(delimiter: UInt8)
    /// One JSON array of flat objects: `[{"phoneNumber":"8211111111","name":"Type_1"}, …]`.
    case json
    /// One JSON object per line (JSON Lines); blank lines are skipped.
    case jsonLines

    public var description: String {
        switch self {
        case .tsv: "tsv"
        case .csv(let d): d == UInt8(ascii: ",") ? "csv" : "csv (delimiter '\(Character(Unicode.Scalar(d)))')"
        case .json: "json"
        case .jsonLines: "jsonl"
        }
    }

    /// The format a file name suggests: `.csv`, `.json`, `.jsonl`/`.ndjson`, otherwise TSV.
    public static func guess(path: String) -> InputFormat {
        let lower = path.lowercased()
        if lower.hasSuffix(".csv") { return .csv(delimiter: UInt8(ascii: ",")) }
        if lower.hasSuffix(".jsonl") || lower.hasSuffix(".ndjson") { return .jsonLines }
        if lower.hasSuffix(".json") { return .json }
        return .tsv
    }

    var isJSON: Bool { self == .json || self == .jsonLines }
}

/// Selects a field of a record: by name (a header column or a JSON key) or by 1-based position.
public enum FieldSelector: Sendable, Hashable, CustomStringConvertible {
    case name(String)
    case position(Int)

    /// `"3"` is the third field; anything else is a name.
    public init(_ text: String) {
        if let n = Int(text), n >= 1 { self = .position(n) } else { self = .name(text) }
    }

    public var description: String {
        switch self {
        case .name(let n): "'\(n)'"
        case .position(let p): "#\(p)"
        }
    }
}

/// One input record, valid until the reader hands out the next one. Field bytes are UTF-8
/// (possibly with invalid bytes, checked when a field is used); JSON records also have names.
struct Record {
    /// Line where the record starts (1-based).
    var line = 0
    var storage: [UInt8] = []
    var values: [Range<Int>] = []
    /// JSON keys (same order as `values`); empty for TSV and CSV.
    var names: [Range<Int>] = []
    /// Values that were a nested object or array (JSON), by index.
    var nested: Set<Int> = []

    mutating func reset(line: Int) {
        self.line = line
        storage.removeAll(keepingCapacity: true)
        values.removeAll(keepingCapacity: true)
        names.removeAll(keepingCapacity: true)
        if !nested.isEmpty { nested.removeAll() }
    }

    func value(_ i: Int) -> ArraySlice<UInt8> { storage[values[i]] }
    func name(_ i: Int) -> ArraySlice<UInt8> { storage[names[i]] }

    /// The record for error reports (fields joined by tabs; JSON: key=value), quoted the
    /// one way (``InputQuote``): at most 40 characters, control characters escaped. Only the
    /// first few hundred bytes are looked at.
    var rawText: String {
        var bytes: [UInt8] = []
        var total = 0
        for i in values.indices {
            if i > 0 { total += 1; if bytes.count < 400 { bytes.append(0x09) } }
            if !names.isEmpty {
                total += names[i].count + 1
                if bytes.count < 400 { bytes.append(contentsOf: name(i).prefix(400)); bytes.append(UInt8(ascii: "=")) }
            }
            total += values[i].count
            if bytes.count < 400 { bytes.append(contentsOf: value(i).prefix(400)) }
        }
        let excerpt = InputQuote.excerpt(bytes: bytes)
        // The length shown is the record's, not the prefix's.
        if total > bytes.count, let cut = excerpt.lastIndex(of: "…") {
            return String(excerpt[..<cut]) + "… (\(total) bytes)"
        }
        return total > bytes.count ? excerpt + "… (\(total) bytes)" : excerpt
    }

    /// The first field longer than `limit` bytes, if any: its index.
    func oversizedField(limit: Int) -> Int? {
        for i in values.indices where values[i].count > limit { return i }
        for i in names.indices where names[i].count > limit { return i }
        return nil
    }

    /// How messages name field `i`: its JSON key, or its column.
    func fieldName(_ i: Int) -> String {
        if i < names.count { return "the value of key " + InputQuote.quoted(bytes: name(i)) }
        return "field \(i + 1)"
    }
}

/// A syntax problem that rejects one record (the reader goes on with the next).
struct SyntaxIssue {
    var line: Int
    var raw: String
    var message: String
    var reason: RejectReason = .syntax
}

/// The reader's limits (``PipelineOptions/maxRecordBytes``, ``PipelineOptions/maxFieldBytes``).
struct ReadLimits {
    var recordBytes = 1 << 20
    var fieldBytes = 1 << 16

    func recordIssue(line: Int, bytes: Int, unit: String = "line") -> SyntaxIssue {
        SyntaxIssue(line: line, raw: "(\(bytes) bytes)",
                    message: "\(unit) of \(bytes) bytes is longer than the limit of \(recordBytes); skipped",
                    reason: .recordTooLong)
    }

    /// A field over the limit, as a rejected row; nil when every field fits.
    func fieldIssue(_ record: Record) -> SyntaxIssue? {
        guard let i = record.oversizedField(limit: fieldBytes) else { return nil }
        let size = i < record.values.count && record.values[i].count > fieldBytes ? record.values[i].count : record.names[i].count
        return SyntaxIssue(line: record.line, raw: record.rawText,
                           message: "\(record.fieldName(i)) is \(size) bytes, longer than the limit of \(fieldBytes) for a field",
                           reason: .fieldTooLong)
    }
}

/// Reads records of any ``InputFormat`` from a ``ByteSource``.
struct RecordReader {
    let format: InputFormat
    var limits = ReadLimits()
    var onRecord: (inout Record) throws(PipelineError) -> Void
    var onSyntaxIssue: (SyntaxIssue) throws(PipelineError) -> Void
    /// Called after every chunk with the raw bytes read so far.
    var onProgress: (Int64) -> Void = { _ in }
    /// TSV: offered each line (not empty, not a comment, within the record limit) before it
    /// becomes a ``Record``, with what the second thread read in it; true when it took the row
    /// (the fast route of plain rows), false to have it read as a record and passed to
    /// ``onRecord``.
    var onLine: (UnsafeRawBufferPointer, Int, ReadAhead) throws(PipelineError) -> Bool = { _, _, _ in false }
    /// TSV: asked before each chunk is handed to the second thread for the route that reads its
    /// lines' fields ahead (``PlainRowRoute/parse(_:readings:)``), a copy of its own; nil: not
    /// (yet) known, the lines are offered unread.
    var routeAhead: () -> PlainRowRoute? = { nil }
    /// TSV: given, before the lines of a chunk read ahead are offered, what their fields index:
    /// the categories of the route that read them and their national readings.
    var onReadAhead: (_ categories: [Category], _ readings: [NationalReading]) -> Void = { _, _ in }

    /// What the second thread read in a line before ``onLine`` is offered it.
    enum ReadAhead {
        /// Not read: no route was known when its chunk was split.
        case unread
        /// Read: its fields (``PlainRowRoute/parse(_:readings:)``), nil when the general reading
        /// must decide; their categories and readings were given to ``onReadAhead`` before.
        case read(PlainRowRoute.Fields?)
    }

    func read(_ source: inout ByteSource) throws(PipelineError) {
        switch format {
        case .tsv: try readTSV(&source)
        case .csv(let d): try readCSV(&source, delimiter: d)
        case .jsonLines: try readJSONLines(&source)
        case .json:
            var parser = JSONArrayParser(source: source)
            try parser.parse(limits: limits, onRecord: onRecord, onSyntaxIssue: onSyntaxIssue, onProgress: onProgress)
            source = parser.source
        }
    }

    private func readTSV(_ source: inout ByteSource) throws(PipelineError) {
        var record = Record()
        let limits = limits
        try readLines(&source, routeAhead: routeAhead, skipping: Self.isBlankOrComment) { (line, number, ahead) throws(PipelineError) in
            if try onLine(line, number, ahead) { return }
            record.reset(line: number)
            record.storage.append(contentsOf: line)
            var fieldStart = 0
            for i in 0..<line.count where line[i] == 0x09 {
                record.values.append(fieldStart..<i)
                fieldStart = i + 1
            }
            record.values.append(fieldStart..<line.count)
            if let issue = limits.fieldIssue(record) { try onSyntaxIssue(issue); return }
            try onRecord(&record)
        }
    }

    private func readJSONLines(_ source: inout ByteSource) throws(PipelineError) {
        var record = Record()
        let limits = limits
        try readLines(&source, routeAhead: { nil }, skipping: Self.isBlank) { (line, number, _) throws(PipelineError) in
            record.reset(line: number)
            do throws(JSONSyntaxError) {
                try JSONObjectParser.parseLine(line, into: &record)
            } catch {
                try onSyntaxIssue(SyntaxIssue(line: number, raw: InputQuote.excerpt(bytes: line),
                                              message: "JSON syntax: \(error.message)"))
                return
            }
            if let issue = limits.fieldIssue(record) { try onSyntaxIssue(issue); return }
            try onRecord(&record)
        }
    }

    /// TSV: an empty line or a comment is skipped.
    private static let isBlankOrComment: @Sendable (UnsafeRawBufferPointer) -> Bool = { $0.isEmpty || $0[0] == UInt8(ascii: "#") }
    /// JSON Lines: a line of spaces, TABs and CRs (or nothing) is skipped.
    private static let isBlank: @Sendable (UnsafeRawBufferPointer) -> Bool = { $0.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D } }

    /// The lines of a line-based format (TSV, JSON Lines) but those `skipping` is true of,
    /// each with its number, chunk by chunk; a line over the record limit is a
    /// `record-too-long` issue, never held.
    ///
    /// Two batches are in hand at a time: while `body` is given the lines of one on this
    /// thread, a second thread reads on from `source`, splits the next lines and, once
    /// `routeAhead` gives a route, reads their fields. Everything reaches `body`,
    /// `onSyntaxIssue` and `onProgress` on this thread and in the file's order, as if read
    /// one line at a time. A batch holds one chunk at most and ``LineBatch/maxLines`` lines
    /// at most (a chunk of short lines is handed over in parts), so memory stays at two or
    /// three chunks and about 4 MB of their lines' places and fields, whatever the input.
    private func readLines(_ source: inout ByteSource, routeAhead: () -> PlainRowRoute?,
                           skipping: @escaping @Sendable (UnsafeRawBufferPointer) -> Bool,
                           _ body: (UnsafeRawBufferPointer, Int, ReadAhead) throws(PipelineError) -> Void) throws(PipelineError) {
        var reading = LineBatch.Reading(splitter: LineSplitter(maxLineBytes: limits.recordBytes), skipping: skipping)
        var batch = LineBatch.next(from: &source, &reading)
        while true {
            if reading.route == nil { reading.route = routeAhead() }
            let current = batch
            let (done, next) = runConcurrently({ () -> Result<Void, PipelineError> in
                Result { () throws(PipelineError) in try lines(of: current, body) }
            }, { () -> LineBatch? in
                current.isLast ? nil : LineBatch.next(from: &source, &reading)
            })
            try done.get()
            guard let next else { return }
            batch = next
        }
    }

    /// Hands the lines and issues of `batch` out in order, then its failure or its progress.
    private func lines(of batch: LineBatch,
                       _ body: (UnsafeRawBufferPointer, Int, ReadAhead) throws(PipelineError) -> Void) throws(PipelineError) {
        let limits = limits
        if !batch.fields.isEmpty { onReadAhead(batch.categories, batch.readings) }
        try withBytes(batch.bytes) { (bytes) throws(PipelineError) in
            for (i, place) in batch.places.enumerated() {
                switch place {
                case .line(let start, let count, let number):
                    let line = UnsafeRawBufferPointer(rebasing: bytes[start..<(start + count)])
                    try body(line, number, batch.fields.isEmpty ? .unread : .read(batch.fields[i]))
                case .overlong(let number, let length):
                    try onSyntaxIssue(limits.recordIssue(line: number, bytes: length))
                }
            }
        }
        if let failure = batch.failure { throw failure }
        onProgress(batch.bytesRead)
    }

    /// RFC 4180 (``CSVReader``), chunk by chunk.
    private func readCSV(_ source: inout ByteSource, delimiter: UInt8) throws(PipelineError) {
        var reader = CSVReader(delimiter: delimiter, limits: limits, onRecord: onRecord, onSyntaxIssue: onSyntaxIssue)
        while let chunk = try source.next() {
            try reader.feed(chunk)
            onProgress(source.bytesRead)
        }
        try reader.finish()
    }
}

/// One chunk of a line-based input, split into lines (and their fields read, when a route was
/// known) on the thread that read it, for another thread to take in order.
struct LineBatch {
    /// The chunk, then the lines that began in an earlier chunk (``LineSplitter/lines(of:in:final:skipping:)``);
    /// the parts of one chunk share it.
    var bytes: [UInt8] = []
    var places: [LineSplitter.Place] = []
    /// Per place: the fields ``PlainRowRoute/parse(_:readings:)`` read (nil for an overlong line
    /// or one the general reading must decide); empty when no route read them.
    var fields: [PlainRowRoute.Fields?] = []
    /// What ``fields`` index: the route's categories, the national readings of the lines.
    var categories: [Category] = []
    var readings: [NationalReading] = []
    /// The raw bytes read from the input so far.
    var bytesRead: Int64 = 0
    /// Why reading stopped after the lines above.
    var failure: PipelineError? = nil
    /// The end of the input (or a failure): no batch follows.
    var isLast = false

    /// The lines of a batch at most: 64 bytes each of places and fields.
    static let maxLines = 1 << 16

    /// What the thread that makes batches keeps from one to the next.
    struct Reading {
        /// Keeps a line that crosses into the next chunk.
        var splitter: LineSplitter
        /// Lines that get no place (blank lines, comments).
        let skipping: (UnsafeRawBufferPointer) -> Bool
        /// Reads the lines' fields, once known.
        var route: PlainRowRoute? = nil
        /// The chunk being handed over in parts, and where its next part starts and it ends.
        var chunk: [UInt8] = []
        var next = 0
        var end = 0
    }

    /// The next lines of `source`: the rest of the chunk in hand or the next chunk, up to
    /// ``maxLines`` lines, split by the reading's splitter and read by its route when there is
    /// one.
    static func next(from source: inout ByteSource, _ reading: inout Reading) -> LineBatch {
        var batch = LineBatch()
        if reading.next >= reading.end {
            var chunk: [UInt8]?
            do throws(PipelineError) {
                chunk = try source.next()
            } catch {
                batch.failure = error
                batch.isLast = true
                return batch
            }
            batch.isLast = chunk == nil
            reading.chunk = chunk ?? []
            chunk = nil   // the splitter appends to the only reference
            reading.next = 0
            reading.end = reading.chunk.count
        }
        let cut = batch.isLast ? reading.end
            : LineSplitter.end(ofLines: maxLines, in: reading.chunk, reading.next..<reading.end) ?? reading.end
        let owned = reading.chunk
        reading.chunk = []
        (batch.bytes, batch.places) = reading.splitter.lines(of: owned, in: reading.next..<cut, final: batch.isLast, skipping: reading.skipping)
        reading.chunk = batch.bytes   // (shared with the batch: the later parts add nothing to it)
        reading.next = cut
        batch.bytesRead = source.bytesRead
        let route = reading.route
        guard var route else { return batch }
        var fields: [PlainRowRoute.Fields?] = []
        var readings: [NationalReading] = []
        fields.reserveCapacity(batch.places.count)
        batch.bytes.withUnsafeBytes { bytes in
            for place in batch.places {
                guard case .line(let start, let count, _) = place else { fields.append(nil); continue }
                fields.append(route.parse(UnsafeRawBufferPointer(rebasing: bytes[start..<(start + count)]), readings: &readings))
            }
        }
        batch.fields = fields
        batch.readings = readings
        batch.categories = route.categoriesSeen
        reading.route = route
        return batch
    }
}

/// Runs `body` over the bytes of `array`, keeping the typed error.
func withBytes<R>(_ array: [UInt8], _ body: (UnsafeRawBufferPointer) throws(PipelineError) -> R) throws(PipelineError) -> R {
    try array.withUnsafeBytes { raw in Result { () throws(PipelineError) in try body(raw) } }.get()
}
