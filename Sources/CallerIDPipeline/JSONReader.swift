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
        b >= 0x21 && b < 0x7F ? "'\(Character(Unicode.Scalar(b)))'" : "byte 0x\(String(b, radix: 16))"
    }

    /// Parses one object into `record`. Returns a syntax error instead of throwing it, so the
    /// caller decides whether it is a row error (JSON Lines) or a file error (an array).
    mutating func parseObject(into record: inout Record) throws(PipelineError) -> JSONSyntaxError? {
        if let e = try expect(0x7B, "'{' (each element must be an object)") { return e }
        try skipWhitespace()
        if try peek() == 0x7D { _ = try next(); return nil }
        while true {
            try skipWhitespace()
            guard try next() == 0x22 else { return fail("expected a key in double quotes") }
            let nameStart = record.storage.count
            if let e = try parseStringBody(into: &record.storage) { return e }
            record.names.append(nameStart..<record.storage.count)
            if let e = try expect(0x3A, "':'") { return e }
            try skipWhitespace()
            let valueStart = record.storage.count
            guard let b = try peek() else { return fail("unexpected end of input in an object") }
            switch b {
            case 0x22:
                _ = try next()
                if let e = try parseStringBody(into: &record.storage) { return e }
            case 0x7B, 0x5B:
                if let e = try skipNested() { return e }
                record.nested.insert(record.values.count)
            case 0x2D, 0x30...0x39:
                while let c = try peek(), c == 0x2D || c == 0x2B || c == 0x2E || c == 0x45 || c == 0x65 || (0x30...0x39).contains(c) {
                    record.storage.append(c)
                    _ = try next()
                }
            case 0x74, 0x66, 0x6E:
                var word: [UInt8] = []
                while let c = try peek(), (0x61...0x7A).contains(c) { word.append(c); _ = try next() }
                switch word {
                case Array("true".utf8), Array("false".utf8): record.storage.append(contentsOf: word)
                case Array("null".utf8): break
                default: return fail("unknown literal '\(String(decoding: word, as: UTF8.self))'")
                }
            default:
                return fail("unexpected \(describe(b)) where a value should be")
            }
            record.values.append(valueStart..<record.storage.count)
            try skipWhitespace()
            guard let sep = try next() else { return fail("unexpected end of input in an object") }
            if sep == 0x7D { return nil }
            if sep != 0x2C { return fail("expected ',' or '}', found \(describe(sep))") }
        }
    }

    /// After the opening quote: appends the unescaped UTF-8 bytes up to the closing quote.
    mutating func parseStringBody(into out: inout [UInt8]) throws(PipelineError) -> JSONSyntaxError? {
        while true {
            guard let b = try next() else { return fail("unterminated string") }
            switch b {
            case 0x22:
                return nil
            case 0x5C:
                guard let e = try next() else { return fail("unterminated string") }
                switch e {
                case 0x22, 0x5C, 0x2F: out.append(e)
                case 0x62: out.append(0x08)
                case 0x66: out.append(0x0C)
                case 0x6E: out.append(0x0A)
                case 0x72: out.append(0x0D)
                case 0x74: out.append(0x09)
                case 0x75:
                    guard var unit = try hex4() else { return fail("bad \\u escape") }
                    if (0xD800...0xDBFF).contains(unit) {
                        // A surrogate pair is two escapes.
                        if try next() == 0x5C, try next() == 0x75, let low = try hex4(), (0xDC00...0xDFFF).contains(low) {
                            unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                        } else {
                            out.append(UTF16Transcoder.invalidMarker)   // rejected as invalid text later
                            continue
                        }
                    } else if (0xDC00...0xDFFF).contains(unit) {
                        out.append(UTF16Transcoder.invalidMarker)
                        continue
                    }
                    UTF8Check.append(unit, to: &out)
                default:
                    return fail("bad escape '\\\(Character(Unicode.Scalar(e)))'")
                }
            case 0x0A:
                return fail("line break inside a string")
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

    mutating func parse(onRecord: (inout Record) throws(PipelineError) -> Void,
                        onProgress: @escaping (Int64) -> Void) throws(PipelineError) {
        var cursor = JSONCursor(buffer: [], source: source)
        cursor.onProgress = onProgress
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
                try onRecord(&record)
                try cursor.skipWhitespace()
                guard let sep = try cursor.next() else { throw syntax(cursor.fail("unexpected end of input: the array is not closed")) }
                if sep == 0x5D { break }
                if sep != 0x2C { throw syntax(cursor.fail("expected ',' or ']' after an object, found \(cursor.describe(sep))")) }
            }
        }
        try cursor.skipWhitespace()
        if let b = try cursor.peek() { throw syntax(cursor.fail("text after the array: \(cursor.describe(b))")) }
    }
}
