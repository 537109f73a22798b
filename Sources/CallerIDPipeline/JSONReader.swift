import CallerID

/// A JSON syntax error with its line.
struct JSONSyntaxError: Error {
    var line: Int
    var message: String
}

/// A small streaming JSON reader for what directories are shipped as: an array of flat
/// objects, or one object per line. It never holds more than one chunk plus one object.
///
/// Values become field bytes: strings unescaped to UTF-8, numbers as written (digits are
/// never converted through a floating-point type), `true`/`false` as text, `null` as an
/// empty field. A nested object or array is skipped and marked, so selecting it is a row error.
struct JSONCursor {
    var buffer: [UInt8]
    var pos = 0
    var line = 1
    /// Where more bytes come from (nil: `buffer` is the whole input).
    var source: ByteSource?
    var onProgress: (Int64) -> Void = { _ in }
    /// Longest string or number kept (longer ones are read to their end but not kept).
    var maxField = Int.max
    /// Largest object kept (a larger one is read to its end, its fields dropped).
    var maxRecord = Int.max
    /// Why the object just parsed cannot be used although its syntax is fine: a field or the
    /// object passed a limit. Reset by ``parseObject(into:)``.
    var overflow: (reason: RejectReason, message: String)? = nil
    /// Length of the last string read when it passed ``maxField`` (nil otherwise).
    private var longString: Int? = nil

    init(buffer: [UInt8], source: ByteSource?) {
        self.buffer = buffer
        self.source = source
    }

    /// The next byte without consuming it; nil at the end of the input.
    mutating func peek() throws(PipelineError) -> UInt8? {
        if pos < buffer.count { return buffer[pos] }
        guard var s = source else { return nil }
        defer { source = s }
        while true {
            guard let chunk = try s.next() else { return nil }
            onProgress(s.bytesRead)
            if chunk.isEmpty { continue }
            buffer = chunk
            pos = 0
            return buffer[0]
        }
    }

    mutating func next() throws(PipelineError) -> UInt8? {
        guard let b = try peek() else { return nil }
        pos += 1
        if b == 0x0A { line += 1 }
        return b
    }

    func fail(_ message: String) -> JSONSyntaxError { JSONSyntaxError(line: line, message: message) }

    mutating func skipWhitespace() throws(PipelineError) {
        while let b = try peek(), b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D { _ = try next() }
    }

    mutating func expect(_ c: UInt8, _ what: String) throws(PipelineError) -> JSONSyntaxError? {
        try skipWhitespace()
        guard let b = try next() else { return fail("unexpected end of input, expected \(what)") }
        return b == c ? nil : fail("expected \(what), found \(describe(b))")
    }

    func describe(_ b: UInt8) -> String {
        b >= 0x21 && b < 0x7F ? "'\(Character(Unicode.Scalar(b)))'" : b == 0x20 ? "a space" : "byte 0x\(String(b, radix: 16))"
    }

    /// Parses one object into `record`. Returns a syntax error instead of throwing it, so the
    /// caller decides whether it is a row error (JSON Lines) or a file error (an array).
    mutating func parseObject(into record: inout Record) throws(PipelineError) -> JSONSyntaxError? {
        overflow = nil
        var droppedBytes = 0
        if let e = try expect(0x7B, "'{' (each element must be an object)") { return e }
        try skipWhitespace()
        if try peek() == 0x7D { _ = try next(); return nil }
        while true {
            try skipWhitespace()
            guard let q = try next() else { return fail("unexpected end of input in an object, expected a key") }
            guard q == 0x22 else { return fail("expected a key in double quotes, found \(describe(q))") }
            let nameStart = record.storage.count
            if let e = try parseStringBody(into: &record.storage) { return e }
            if let n = longString, overflow == nil {
                overflow = (.fieldTooLong, "a key of \(n) bytes is longer than the limit of \(maxField) for a field")
            }
            record.names.append(nameStart..<record.storage.count)
            if let e = try expect(0x3A, "':' after the key") { return e }
            try skipWhitespace()
            let valueStart = record.storage.count
            guard let b = try peek() else { return fail("unexpected end of input in an object, expected a value") }
            var valueLength: Int? = nil
            switch b {
            case 0x22:
                _ = try next()
                if let e = try parseStringBody(into: &record.storage) { return e }
                valueLength = longString
            case 0x7B, 0x5B:
                if let e = try skipNested() { return e }
                record.nested.insert(record.values.count)
            case 0x2D, 0x30...0x39:
                var length = 0
                while let c = try peek(), c == 0x2D || c == 0x2B || c == 0x2E || c == 0x45 || c == 0x65 || (0x30...0x39).contains(c) {
                    if length < maxField { record.storage.append(c) }
                    length += 1
                    _ = try next()
                }
                if length > maxField { valueLength = length }
            case 0x74, 0x66, 0x6E:
                var word: [UInt8] = []
                while let c = try peek(), (0x61...0x7A).contains(c) {
                    word.append(c)
                    _ = try next()
                    if word.count > 5 { break }
                }
                switch word {
                case Array("true".utf8), Array("false".utf8): record.storage.append(contentsOf: word)
                case Array("null".utf8): break
                default: return fail("unknown literal \(InputQuote.quoted(bytes: word)) (expected true, false or null)")
                }
            default:
                return fail("unexpected \(describe(b)) where a value should be (a string, number, object, array, true, false or null)")
            }
            if let n = valueLength, overflow == nil {
                let key = InputQuote.quoted(bytes: record.storage[record.names[record.names.count - 1]])
                overflow = (.fieldTooLong, "the value of key \(key) is \(n) bytes, longer than the limit of \(maxField) for a field")
            }
            record.values.append(valueStart..<record.storage.count)
            if record.storage.count > maxRecord {
                // Too big to keep: read on to the end of the object, keeping nothing.
                droppedBytes += record.storage.count
                record.storage.removeAll(keepingCapacity: true)
                record.values.removeAll(keepingCapacity: true)
                record.names.removeAll(keepingCapacity: true)
                record.nested.removeAll()
                overflow = (.recordTooLong, "object of more than \(droppedBytes) bytes is longer than the limit of \(maxRecord); skipped")
            }
            try skipWhitespace()
            guard let sep = try next() else { return fail("unexpected end of input in an object, expected ',' or '}'") }
            if sep == 0x7D { return nil }
            if sep != 0x2C { return fail("expected ',' or '}' after a value, found \(describe(sep))") }
        }
    }

    /// After the opening quote: appends the unescaped UTF-8 bytes up to the closing quote.
    /// An unpaired surrogate escape becomes the invalid-text marker (the row is rejected as
    /// `invalid-encoding`), wherever it stands. Bytes past ``maxField`` are read but not kept
    /// (``longString`` then holds the string's length).
    mutating func parseStringBody(into out: inout [UInt8]) throws(PipelineError) -> JSONSyntaxError? {
        let start = out.count
        var dropped = 0
        var high: UInt32? = nil   // a high surrogate waiting for its low half
        longString = nil
        while true {
            if out.count - start > maxField {
                dropped += out.count - start - maxField
                out.removeSubrange((start + maxField)...)
            }
            guard let b = try next() else { return fail("unterminated string") }
            if b == 0x5C {
                guard let e = try next() else { return fail("unterminated string") }
                if e == 0x75 {
                    guard let unit = try hex4() else { return fail("bad \\u escape (expected 4 hex digits)") }
                    if let h = high {
                        high = nil
                        if (0xDC00...0xDFFF).contains(unit) {
                            UTF8Check.append(0x10000 + ((h - 0xD800) << 10) + (unit - 0xDC00), to: &out)
                            continue
                        }
                        out.append(UTF16Transcoder.invalidMarker)
                    }
                    if (0xD800...0xDBFF).contains(unit) {
                        high = unit
                    } else if (0xDC00...0xDFFF).contains(unit) {
                        out.append(UTF16Transcoder.invalidMarker)
                    } else {
                        UTF8Check.append(unit, to: &out)
                    }
                    continue
                }
                if high != nil { out.append(UTF16Transcoder.invalidMarker); high = nil }
                switch e {
                case 0x22, 0x5C, 0x2F: out.append(e)
                case 0x62: out.append(0x08)
                case 0x66: out.append(0x0C)
                case 0x6E: out.append(0x0A)
                case 0x72: out.append(0x0D)
                case 0x74: out.append(0x09)
                default: return fail("bad escape \(InputQuote.quoted(bytes: [0x5C, e])) (expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)")
                }
                continue
            }
            if high != nil { out.append(UTF16Transcoder.invalidMarker); high = nil }
            switch b {
            case 0x22:
                let length = out.count - start + dropped
                if length > maxField {
                    if out.count - start > maxField { out.removeSubrange((start + maxField)...) }
                    longString = length
                }
                return nil
            case 0x0A:
                return fail("line break inside a string (a string must be closed on its line)")
            default:
                out.append(b)
            }
        }
    }

    private mutating func hex4() throws(PipelineError) -> UInt32? {
        var v: UInt32 = 0
        for _ in 0..<4 {
            guard let c = try next() else { return nil }
            let d: UInt32
            switch c {
            case 0x30...0x39: d = UInt32(c - 0x30)
            case 0x41...0x46: d = UInt32(c - 0x41 + 10)
            case 0x61...0x66: d = UInt32(c - 0x61 + 10)
            default: return nil
            }
            v = v << 4 | d
        }
        return v
    }

    /// Skips a nested object or array (strings inside are honoured).
    private mutating func skipNested() throws(PipelineError) -> JSONSyntaxError? {
        var depth = 0
        var scratch: [UInt8] = []
        defer { longString = nil }
        repeat {
            guard let b = try next() else { return fail("unexpected end of input in a nested value") }
            switch b {
            case 0x7B, 0x5B: depth += 1
            case 0x7D, 0x5D: depth -= 1
            case 0x22:
                scratch.removeAll(keepingCapacity: true)
                if let e = try parseStringBody(into: &scratch) { return e }
            default: break
            }
        } while depth > 0
        return nil
    }
}

/// Parses one JSON Lines line.
enum JSONObjectParser {
    static func parseLine(_ line: UnsafeRawBufferPointer, into record: inout Record) throws(JSONSyntaxError) {
        var cursor = JSONCursor(buffer: Array(line), source: nil)
        let result: JSONSyntaxError?
        do {
            result = try cursor.parseObject(into: &record)
            if result == nil {
                try cursor.skipWhitespace()
                if let b = try cursor.peek() { throw cursor.fail("text after the object: \(cursor.describe(b))") }
            }
        } catch let e as JSONSyntaxError {
            throw e
        } catch {
            throw JSONSyntaxError(line: 1, message: "\(error)")   // no source: cannot happen
        }
        if let result { throw result }
    }
}

extension JSONSyntaxError {
    var messageWithLine: String { "line \(line): \(message)" }
}

/// Streams the objects of a top-level JSON array. A syntax error ends the file (there is no
/// reliable record boundary to resume at), reported with its line.
struct JSONArrayParser {
    var source: ByteSource

    init(source: ByteSource) { self.source = source }

    mutating func parse(limits: ReadLimits,
                        onRecord: (inout Record) throws(PipelineError) -> Void,
                        onSyntaxIssue: (SyntaxIssue) throws(PipelineError) -> Void,
                        onProgress: @escaping (Int64) -> Void) throws(PipelineError) {
        var cursor = JSONCursor(buffer: [], source: source)
        cursor.onProgress = onProgress
        cursor.maxField = limits.fieldBytes
        cursor.maxRecord = limits.recordBytes
        defer { source = cursor.source! }
        var record = Record()
        let path = source.path
        func syntax(_ e: JSONSyntaxError) -> PipelineError {
            PipelineError(.invalidInput, "\(path):\(e.line): JSON syntax: \(e.message) (a JSON input must be one array of objects)")
        }
        if let e = try cursor.expect(0x5B, "'[' (a JSON input must be one array of objects; use --format jsonl for JSON Lines)") { throw syntax(e) }
        try cursor.skipWhitespace()
        if try cursor.peek() == 0x5D {
            _ = try cursor.next()
        } else {
            while true {
                try cursor.skipWhitespace()
                record.reset(line: cursor.line)
                if let e = try cursor.parseObject(into: &record) { throw syntax(e) }
                if let o = cursor.overflow {
                    try onSyntaxIssue(SyntaxIssue(line: record.line, raw: record.rawText, message: o.message, reason: o.reason))
                } else {
                    try onRecord(&record)
                }
                try cursor.skipWhitespace()
                guard let sep = try cursor.next() else { throw syntax(cursor.fail("unexpected end of input: the array is not closed (expected ',' or ']')")) }
                if sep == 0x5D { break }
                if sep != 0x2C { throw syntax(cursor.fail("expected ',' or ']' after an object, found \(cursor.describe(sep))")) }
            }
        }
        try cursor.skipWhitespace()
        if let b = try cursor.peek() { throw syntax(cursor.fail("text after the array: \(cursor.describe(b))")) }
    }
}

/// Finds the first syntax error of a whole JSON document, with its line, column and what
/// was expected there: configuration files are read with Foundation, whose error names
/// neither. Only used once a file has failed to parse.
enum JSONSyntaxCheck {
    struct Problem {
        var line: Int
        var column: Int
        var message: String
    }

    static func firstError(in bytes: UnsafeRawBufferPointer) -> Problem? {
        var i = 0, line = 1, lineStart = 0
        func problem(_ message: String) -> Problem { Problem(line: line, column: i - lineStart + 1, message: message) }
        func found() -> String {
            guard i < bytes.count else { return "the end of the file" }
            let b = bytes[i]
            return b >= 0x21 && b < 0x7F ? "'\(Character(Unicode.Scalar(b)))'" : "byte 0x\(String(b, radix: 16))"
        }
        func skipSpace() {
            while i < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[i]) {
                if bytes[i] == 0x0A { line += 1; lineStart = i + 1 }
                i += 1
            }
        }
        func string() -> Problem? {
            i += 1   // the opening quote
            while i < bytes.count {
                switch bytes[i] {
                case 0x22: i += 1; return nil
                case 0x5C: i += 2
                case 0x00..<0x20: return problem("a control character inside a string (expected '\"' to close it)")
                default: i += 1
                }
            }
            return problem("unterminated string")
        }
        func value(depth: Int) -> Problem? {
            skipSpace()
            guard depth < 512 else { return problem("nested too deeply") }
            guard i < bytes.count else { return problem("expected a value, found the end of the file") }
            switch bytes[i] {
            case 0x22: return string()
            case 0x7B:
                i += 1
                skipSpace()
                if i < bytes.count, bytes[i] == 0x7D { i += 1; return nil }
                while true {
                    skipSpace()
                    guard i < bytes.count, bytes[i] == 0x22 else { return problem("expected a key in double quotes, found \(found())") }
                    if let p = string() { return p }
                    skipSpace()
                    guard i < bytes.count, bytes[i] == 0x3A else { return problem("expected ':' after the key, found \(found())") }
                    i += 1
                    if let p = value(depth: depth + 1) { return p }
                    skipSpace()
                    guard i < bytes.count, bytes[i] == 0x2C || bytes[i] == 0x7D else { return problem("expected ',' or '}' after a value, found \(found())") }
                    i += 1
                    if bytes[i - 1] == 0x7D { return nil }
                }
            case 0x5B:
                i += 1
                skipSpace()
                if i < bytes.count, bytes[i] == 0x5D { i += 1; return nil }
                while true {
                    if let p = value(depth: depth + 1) { return p }
                    skipSpace()
                    guard i < bytes.count, bytes[i] == 0x2C || bytes[i] == 0x5D else { return problem("expected ',' or ']' after a value, found \(found())") }
                    i += 1
                    if bytes[i - 1] == 0x5D { return nil }
                }
            case 0x2D, 0x30...0x39:
                while i < bytes.count, [0x2D, 0x2B, 0x2E, 0x45, 0x65].contains(bytes[i]) || (0x30...0x39).contains(bytes[i]) { i += 1 }
                return nil
            default:
                for word in ["true", "false", "null"] where bytes[i...].starts(with: word.utf8) {
                    i += word.utf8.count
                    return nil
                }
                return problem("expected a value (a string, number, object, array, true, false or null), found \(found())")
            }
        }
        if let p = value(depth: 0) { return p }
        skipSpace()
        return i < bytes.count ? problem("text after the JSON value: \(found())") : nil
    }
}

/// The UTF-8 text of a JSON string whose contents (what lies between its quotes, escapes as
/// written) are `body`, read by the one JSON string reader (``JSONCursor``), and the problem
/// that ended it early (nil when none): for callers that find a string's ends themselves
/// (the request bodies of `lookup serve`). An unpaired surrogate escape becomes invalid UTF-8.
package func jsonUnescape(_ body: [UInt8]) -> (text: [UInt8], problem: String?) {
    var cursor = JSONCursor(buffer: body + [0x22], source: nil)
    var text: [UInt8] = []
    do {
        if let e = try cursor.parseStringBody(into: &text) { return (text, e.message) }
    } catch {
        return (text, "\(error)")   // no source: cannot happen
    }
    return (text, nil)
}
