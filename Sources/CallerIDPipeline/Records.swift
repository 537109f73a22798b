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

    /// The whole record, for error reports: fields joined by tabs (JSON: key=value).
    var rawText: String {
        var parts: [String] = []
        for i in values.indices {
            let v = String(decoding: value(i), as: UTF8.self)
            parts.append(names.isEmpty ? v : String(decoding: name(i), as: UTF8.self) + "=" + v)
        }
        return parts.joined(separator: "\t")
    }
}

/// A syntax problem that rejects one record (the reader goes on with the next).
struct SyntaxIssue {
    var line: Int
    var raw: String
    var message: String
}

/// Splits a UTF-8 stream into lines (LF or CRLF), across chunk boundaries.
struct LineSplitter {
    private var pending: [UInt8] = []
    private(set) var lineNumber = 0

    /// Calls `body` for every complete line of `chunk` (and for the rest when `final`).
    mutating func feed(_ chunk: [UInt8], final: Bool,
                       _ body: (UnsafeRawBufferPointer, Int) throws(PipelineError) -> Void) throws(PipelineError) {
        var start = 0
        let n = chunk.count
        try withBytes(chunk) { (raw) throws(PipelineError) in
            var i = 0
            while i < n {
                if raw[i] == 0x0A {
                    lineNumber += 1
                    if pending.isEmpty {
                        var end = i
                        if end > start && raw[end - 1] == 0x0D { end -= 1 }
                        try body(UnsafeRawBufferPointer(rebasing: raw[start..<end]), lineNumber)
                    } else {
                        pending.append(contentsOf: raw[start..<i])
                        if pending.last == 0x0D { pending.removeLast() }
                        let line = lineNumber
                        try withBytes(pending) { (p) throws(PipelineError) in try body(p, line) }
                        pending.removeAll(keepingCapacity: true)
                    }
                    start = i + 1
                }
                i += 1
            }
            if start < n { pending.append(contentsOf: raw[start..<n]) }
        }
        if final && !pending.isEmpty {
            lineNumber += 1
            if pending.last == 0x0D { pending.removeLast() }
            let line = lineNumber
            try withBytes(pending) { (p) throws(PipelineError) in try body(p, line) }
            pending.removeAll()
        }
    }
}

/// Reads records of any ``InputFormat`` from a ``ByteSource``.
struct RecordReader {
    let format: InputFormat
    var onRecord: (inout Record) throws(PipelineError) -> Void
    var onSyntaxIssue: (SyntaxIssue) throws(PipelineError) -> Void
    /// Called after every chunk with the raw bytes read so far.
    var onProgress: (Int64) -> Void = { _ in }

    func read(_ source: inout ByteSource) throws(PipelineError) {
        switch format {
        case .tsv: try readTSV(&source)
        case .csv(let d): try readCSV(&source, delimiter: d)
        case .jsonLines: try readJSONLines(&source)
        case .json:
            var parser = JSONArrayParser(source: source)
            try parser.parse(onRecord: onRecord, onProgress: onProgress)
            source = parser.source
        }
    }

    private func readTSV(_ source: inout ByteSource) throws(PipelineError) {
        var splitter = LineSplitter()
        var record = Record()
        while true {
            let chunk = try source.next()
            try splitter.feed(chunk ?? [], final: chunk == nil) { (line, number) throws(PipelineError) in
                if line.isEmpty || line[0] == UInt8(ascii: "#") { return }
                record.reset(line: number)
                record.storage.append(contentsOf: line)
                var fieldStart = 0
                for i in 0..<line.count where line[i] == 0x09 {
                    record.values.append(fieldStart..<i)
                    fieldStart = i + 1
                }
                record.values.append(fieldStart..<line.count)
                try onRecord(&record)
            }
            onProgress(source.bytesRead)
            if chunk == nil { return }
        }
    }

    private func readJSONLines(_ source: inout ByteSource) throws(PipelineError) {
        var splitter = LineSplitter()
        var record = Record()
        while true {
            let chunk = try source.next()
            try splitter.feed(chunk ?? [], final: chunk == nil) { (line, number) throws(PipelineError) in
                if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { return }
                record.reset(line: number)
                do throws(JSONSyntaxError) {
                    try JSONObjectParser.parseLine(line, into: &record)
                } catch {
                    try onSyntaxIssue(SyntaxIssue(line: number, raw: String(decoding: line.prefix(200), as: UTF8.self),
                                                  message: "JSON syntax: \(error.message)"))
                    return
                }
                try onRecord(&record)
            }
            onProgress(source.bytesRead)
            if chunk == nil { return }
        }
    }

    /// RFC 4180 state machine over the byte stream.
    private func readCSV(_ source: inout ByteSource, delimiter: UInt8) throws(PipelineError) {
        enum State { case fieldStart, unquoted, quoted, quoteInQuoted, afterQuoteJunk }
        var state = State.fieldStart
        var record = Record()
        var line = 1
        var recordLine = 1
        var fieldStart = 0
        var recordHasContent = false
        var bad: String? = nil

        func endField() {
            record.values.append(fieldStart..<record.storage.count)
            fieldStart = record.storage.count
        }
        func endRecord() throws(PipelineError) {
            defer {
                record.reset(line: line)
                fieldStart = 0
                recordHasContent = false
                bad = nil
                recordLine = line
            }
            guard recordHasContent else { return }   // a blank line
            endField()
            if let bad {
                try onSyntaxIssue(SyntaxIssue(line: recordLine, raw: record.rawText, message: "CSV syntax: \(bad)"))
                return
            }
            try onRecord(&record)
        }
        record.reset(line: 1)
        while let chunk = try source.next() {
            for b in chunk {
                switch state {
                case .fieldStart, .unquoted:
                    if b == delimiter {
                        recordHasContent = true
                        endField()
                        state = .fieldStart
                    } else if b == 0x0A {
                        if record.storage.last == 0x0D && state == .unquoted && record.storage.count > fieldStart {
                            record.storage.removeLast()
                        }
                        line += 1
                        try endRecord()
                        state = .fieldStart
                    } else if b == 0x22 && state == .fieldStart {
                        recordHasContent = true
                        state = .quoted
                    } else {
                        record.storage.append(b)
                        if b != 0x0D { recordHasContent = true }   // a line holding only CR is blank
                        state = .unquoted
                        if b == 0x22 && bad == nil { bad = "a quote inside an unquoted field" }
                    }
                case .quoted:
                    if b == 0x22 {
                        state = .quoteInQuoted
                    } else {
                        if b == 0x0A { line += 1 }
                        record.storage.append(b)
                    }
                case .quoteInQuoted:
                    if b == 0x22 {
                        record.storage.append(0x22)
                        state = .quoted
                    } else if b == delimiter {
                        endField()
                        state = .fieldStart
                    } else if b == 0x0A {
                        line += 1
                        try endRecord()
                        state = .fieldStart
                    } else if b == 0x0D {
                        // CR of a CRLF after a closing quote.
                    } else {
                        if bad == nil { bad = "text after a closing quote" }
                        record.storage.append(b)
                        state = .afterQuoteJunk
                    }
                case .afterQuoteJunk:
                    if b == delimiter {
                        endField()
                        state = .fieldStart
                    } else if b == 0x0A {
                        line += 1
                        try endRecord()
                        state = .fieldStart
                    } else {
                        record.storage.append(b)
                    }
                }
            }
            onProgress(source.bytesRead)
        }
        if state == .quoted {
            bad = "unterminated quoted field (started on line \(recordLine))"
            recordHasContent = true
        }
        if state == .unquoted, record.storage.last == 0x0D, record.storage.count > fieldStart {
            record.storage.removeLast()
        }
        try endRecord()
    }
}

/// Runs `body` over the bytes of `array`, keeping the typed error.
func withBytes<R>(_ array: [UInt8], _ body: (UnsafeRawBufferPointer) throws(PipelineError) -> R) throws(PipelineError) -> R {
    try array.withUnsafeBytes { raw in Result { () throws(PipelineError) in try body(raw) } }.get()
}
