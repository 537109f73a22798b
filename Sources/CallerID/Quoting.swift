// How text reaches a terminal or a file: one function per output format, all on the one label
// rule (``LabelText``), so what a label may not hold is never written raw anywhere.
//
// | output                         | function                | what is escaped                          |
// |--------------------------------|-------------------------|------------------------------------------|
// | JSON (`--json`, manifests)     | `jsonQuote`             | RFC 8259 + what labels may not hold      |
// | TSV label cell (`dump`, query) | `tsvEscapedLabel`       | only in a label that fails the rule      |
// | a row quoted in a message      | `quotedInput`           | the rule's characters, cut at 40         |
// | any other text in a message    | `escapedForDisplay`     | the rule's characters, cut at `limit`    |

/// A JSON string literal (RFC 8259 escapes), as the manifest and the `lookup` tool write them.
/// Besides what JSON requires, what labels may not hold (``LabelText``: C1 controls, DEL,
/// hidden characters) is written as `\uXXXX`, so the JSON text itself never carries them to a
/// terminal.
package func jsonQuote(_ s: String) -> String {
    var out = "\""
    LabelText.forEachScalar(s) { u, problem in
        switch u {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case _ where problem != nil: out += jsonUnicodeEscape(u)
        default: out.unicodeScalars.append(u)
        }
    }
    return out + "\""
}

/// `\u001b`, `\u202e`: a scalar as a JSON escape; one above the BMP (a tag character
/// U+E0041, U+1D173) as its UTF-16 surrogate pair, `\udb40\udc41` (RFC 8259 §7).
package func jsonUnicodeEscape(_ u: Unicode.Scalar) -> String {
    func escape(_ unit: UInt32) -> String {
        let h = String(unit, radix: 16)
        return "\\u" + String(repeating: "0", count: max(0, 4 - h.count)) + h
    }
    guard u.value > 0xFFFF else { return escape(u.value) }
    let v = u.value - 0x10000
    return escape(0xD800 + (v >> 10)) + escape(0xDC00 + (v & 0x3FF))
}

/// A label as a TSV cell: nil when the label rule allows it as it is (``LabelText/check(_:)``:
/// always so in a file that passes `lookup verify`), so the caller writes the bytes unchanged;
/// otherwise the label escaped as the JSON output escapes it: `\n`, `\r`, `\t`, `\u00XX` for the
/// other control characters (C0, DEL, C1), `\u202e` for hidden ones (bidirectional controls,
/// invisible characters), U+FFFD for invalid UTF-8. A backslash is not escaped (it is legal in
/// labels).
package func tsvEscapedLabel(_ bytes: UnsafeRawBufferPointer) -> String? {
    guard LabelText.check(bytes) != nil else { return nil }
    var escaped = ""
    LabelText.forEachScalar(bytes) { u, problem in
        guard problem != nil else { escaped.unicodeScalars.append(u); return }
        switch u.value {
        case 0x0A: escaped += "\\n"
        case 0x0D: escaped += "\\r"
        case 0x09: escaped += "\\t"
        default: escaped += jsonUnicodeEscape(u)
        }
    }
    return escaped
}

/// Input text as an error message quotes it: at most 40 characters (then "…" and the length
/// in bytes), invalid UTF-8 shown as U+FFFD and what labels may not hold (``LabelText``:
/// control and hidden characters) as `\u{1B}` escapes, so a hostile row can neither flood the
/// report with a 10 MB field nor send terminal escapes or reorder the line.
package func quotedInput(_ bytes: some Collection<UInt8>) -> String {
    // Up to 40 bytes the rule finds nothing in are shown as they are (what the general path
    // below gives them), without a string built scalar by scalar: a file of bad rows quotes
    // every one of them.
    if bytes.count <= quotedInputLimit,
       let whole = bytes.withContiguousStorageIfAvailable({ LabelText.check(UnsafeRawBufferPointer($0)) == nil ? String(decoding: $0, as: UTF8.self) : nil }),
       let whole {
        return "'" + whole + "'"
    }
    return quotedInputScalarByScalar(bytes)
}

private let quotedInputLimit = 40

/// ``quotedInput(_:)`` scalar by scalar, whatever the input.
package func quotedInputScalarByScalar(_ bytes: some Collection<UInt8>) -> String {
    let limit = quotedInputLimit
    var out = ""
    var width = 0
    var truncated = bytes.count > limit * 4
    LabelText.forEachScalar(bytes.prefix(limit * 4)) { scalar, problem in
        guard !truncated || width < limit else { return }
        let piece = problem != nil ? escapedScalar(scalar) : String(scalar)
        let pieceWidth = problem != nil ? piece.unicodeScalars.count : 1
        if width + pieceWidth > limit {
            truncated = true
            width = limit
            return
        }
        out += piece
        width += pieceWidth
    }
    return "'" + out + (truncated ? "… (\(bytes.count) bytes)" : "") + "'"
}

/// `s` with what labels may not hold (``LabelText``: control and hidden characters) written as
/// `\u{1B}` escapes, at most `limit` characters (then `…` and the length in bytes): text from a
/// file, an input or a server (a message, a file name, a path) made safe to print.
package func escapedForDisplay(_ s: String, limit: Int = .max) -> String {
    // Text of at most `limit` bytes that the rule finds nothing in is its own display (as the
    // general path below would build it, scalar by scalar): most messages and paths are.
    if s.utf8.count <= limit, LabelText.check(s) == nil { return s }
    return escapedForDisplayScalarByScalar(s, limit: limit)
}

/// ``escapedForDisplay(_:limit:)`` scalar by scalar, whatever the text.
package func escapedForDisplayScalarByScalar(_ s: String, limit: Int = .max) -> String {
    var out = ""
    var count = 0
    var cut = false
    LabelText.forEachScalar(s) { scalar, problem in
        guard !cut else { return }
        if count >= limit {
            out += "… (\(s.utf8.count) bytes)"
            cut = true
            return
        }
        if problem != nil { out += escapedScalar(scalar) } else { out.unicodeScalars.append(scalar) }
        count += 1
    }
    return out
}

/// `\u{1B}`: how messages show a character they must not print.
package func escapedScalar(_ scalar: Unicode.Scalar) -> String {
    "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
}

/// A JSON array of strings.
package func jsonStrings(_ a: [String]) -> String { "[" + a.map(jsonQuote).joined(separator: ",") + "]" }
