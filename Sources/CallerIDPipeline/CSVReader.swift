/// RFC 4180 records from a byte stream fed chunk by chunk: fields separated by `delimiter`,
/// optionally in double quotes (`""` is a quote; a quoted field may hold the delimiter and line
/// breaks), records ended by LF or CRLF. A record with a syntax error (a quote inside an
/// unquoted field, text after a closing quote, an unterminated quote at the end) is handed to
/// `onSyntaxIssue` whole, like one over the reader's limits; blank lines are skipped.
struct CSVReader {
    private enum State { case fieldStart, unquoted, quoted, quoteInQuoted, afterQuoteJunk }

    let delimiter: UInt8
    let limits: ReadLimits
    let onRecord: (inout Record) throws(PipelineError) -> Void
    let onSyntaxIssue: (SyntaxIssue) throws(PipelineError) -> Void

    private var state = State.fieldStart
    private var record = Record()
    /// The line the reader is on, and the line the current record started on (1-based).
    private var line = 1
    private var recordLine = 1
    private var fieldStart = 0
    private var recordHasContent = false
    /// The record's first syntax error.
    private var bad: String? = nil
    /// Bytes of the record not kept because it passed the limit (nil: under it).
    private var dropped: Int? = nil

    /// - Parameter firstLine: the number of the first line fed (a reader taking over an input
    ///   part of which was read another way starts at the line it takes over).
    init(delimiter: UInt8, limits: ReadLimits, firstLine: Int = 1,
         onRecord: @escaping (inout Record) throws(PipelineError) -> Void,
         onSyntaxIssue: @escaping (SyntaxIssue) throws(PipelineError) -> Void) {
        self.delimiter = delimiter
        self.limits = limits
        self.onRecord = onRecord
        self.onSyntaxIssue = onSyntaxIssue
        line = firstLine
        recordLine = firstLine
        record.reset(line: firstLine)
    }

    /// Reads one chunk; records complete at its end are handed on, the rest waits for the next.
    mutating func feed(_ chunk: [UInt8]) throws(PipelineError) {
        dropIfOverLimit()
        for b in chunk {
            let recordEnds: Bool
            switch state {
            case .fieldStart, .unquoted: recordEnds = unquoted(b)
            case .quoted: recordEnds = quoted(b)
            case .quoteInQuoted: recordEnds = afterClosingQuote(b)
            case .afterQuoteJunk: recordEnds = afterJunk(b)
            }
            if recordEnds { try endRecord() }
        }
    }

    /// The end of the input: the last record, even without a line break.
    mutating func finish() throws(PipelineError) {
        if state == .quoted {
            bad = "unterminated quoted field (started on line \(recordLine))"
            recordHasContent = true
        }
        if state == .unquoted, record.storage.last == 0x0D, record.storage.count > fieldStart {
            record.storage.removeLast()
        }
        try endRecord()
    }

    /// Checked once a chunk, so memory stays under the limit plus a chunk or two: a record over
    /// the limit keeps its parse state and drops what it holds (counted in `dropped`).
    private mutating func dropIfOverLimit() {
        guard record.storage.count + record.values.count > limits.recordBytes else { return }
        dropped = (dropped ?? 0) + record.storage.count + record.values.count
        record.storage.removeAll(keepingCapacity: true)
        record.values.removeAll(keepingCapacity: true)
        fieldStart = 0
    }

    // MARK: One byte in each state; true when it ends the record (a line feed outside quotes).

    @inline(__always)
    private mutating func unquoted(_ b: UInt8) -> Bool {
        if b == delimiter {
            recordHasContent = true
            endField()
            state = .fieldStart
        } else if b == 0x0A {
            if record.storage.last == 0x0D && state == .unquoted && record.storage.count > fieldStart {
                record.storage.removeLast()
            }
            return endLine()
        } else if b == 0x22 && state == .fieldStart {
            recordHasContent = true
            state = .quoted
        } else {
            record.storage.append(b)
            if b != 0x0D { recordHasContent = true }   // a line holding only CR is blank
            state = .unquoted
            if b == 0x22 && bad == nil { bad = "a quote inside an unquoted field" }
        }
        return false
    }

    @inline(__always)
    private mutating func quoted(_ b: UInt8) -> Bool {
        if b == 0x22 {
            state = .quoteInQuoted
        } else {
            if b == 0x0A { line += 1 }
            record.storage.append(b)
        }
        return false
    }

    @inline(__always)
    private mutating func afterClosingQuote(_ b: UInt8) -> Bool {
        if b == 0x22 {
            record.storage.append(0x22)
            state = .quoted
        } else if b == delimiter {
            endField()
            state = .fieldStart
        } else if b == 0x0A {
            return endLine()
        } else if b == 0x0D {
            // CR of a CRLF after a closing quote.
        } else {
            if bad == nil { bad = "text after a closing quote" }
            record.storage.append(b)
            state = .afterQuoteJunk
        }
        return false
    }

    @inline(__always)
    private mutating func afterJunk(_ b: UInt8) -> Bool {
        if b == delimiter {
            endField()
            state = .fieldStart
        } else if b == 0x0A {
            return endLine()
        } else {
            record.storage.append(b)
        }
        return false
    }

    /// A line feed outside quotes: the next line, a new field; the caller ends the record.
    @inline(__always)
    private mutating func endLine() -> Bool {
        line += 1
        state = .fieldStart
        return true
    }

    @inline(__always)
    private mutating func endField() {
        record.values.append(fieldStart..<record.storage.count)
        fieldStart = record.storage.count
    }

    /// Hands the record on (or its issue: too long, a syntax error, a field too long), unless it
    /// is a blank line, and starts the next one.
    private mutating func endRecord() throws(PipelineError) {
        defer {
            record.reset(line: line)
            fieldStart = 0
            recordHasContent = false
            bad = nil
            dropped = nil
            recordLine = line
        }
        guard recordHasContent else { return }   // a blank line
        endField()
        let size = record.storage.count + record.values.count + (dropped ?? 0)
        if size > limits.recordBytes, state != .quoted {
            try onSyntaxIssue(limits.recordIssue(line: recordLine, bytes: size, unit: "record"))
            return
        }
        if let bad {
            try onSyntaxIssue(SyntaxIssue(line: recordLine, raw: record.rawText, message: "CSV syntax: \(bad)"))
            return
        }
        if let issue = limits.fieldIssue(record) { try onSyntaxIssue(issue); return }
        try onRecord(&record)
    }
}
