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
    /// becomes a ``Record``; true when it took the row (the fast route of plain rows), false to
    /// have it read as a record and passed to ``onRecord``.
    var onLine: (UnsafeRawBufferPointer, Int) throws(PipelineError) -> Bool = { _, _ in false }

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
        try readLines(&source) { (line, number) throws(PipelineError) in
            if line.isEmpty || line[0] == UInt8(ascii: "#") { return }
            if try onLine(line, number) { return }
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
        try readLines(&source) { (line, number) throws(PipelineError) in
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { return }
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

    /// The lines of a line-based format (TSV, JSON Lines), each with its number, chunk by
    /// chunk; a line over the record limit is a `record-too-long` issue, never held.
    private func readLines(_ source: inout ByteSource,
                           _ body: (UnsafeRawBufferPointer, Int) throws(PipelineError) -> Void) throws(PipelineError) {
        var splitter = LineSplitter(maxLineBytes: limits.recordBytes)
        let limits = limits
        while true {
            let chunk = try source.next()
            try withBytes(chunk ?? []) { (bytes) throws(PipelineError) in
                try splitter.feed(bytes, final: chunk == nil, overlong: { (number, length, _) throws(PipelineError) in
                    try onSyntaxIssue(limits.recordIssue(line: number, bytes: length))
                }, body)
            }
            onProgress(source.bytesRead)
            if chunk == nil { return }
        }
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

/// Runs `body` over the bytes of `array`, keeping the typed error.
func withBytes<R>(_ array: [UInt8], _ body: (UnsafeRawBufferPointer) throws(PipelineError) -> R) throws(PipelineError) -> R {
    try array.withUnsafeBytes { raw in Result { () throws(PipelineError) in try body(raw) } }.get()
}
