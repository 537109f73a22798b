/// E.164 numbers as CallerID stores them: country code followed by the national number,
/// digits only, as an unsigned integer in 1 … 999,999,999,999,999 (at most 15 digits).
public enum PhoneNumber {
    /// The largest valid number (15 nines).
    public static let maximum: UInt64 = Format.maxNumber

    /// True when `number` is a storable E.164 number.
    public static func isValid(_ number: UInt64) -> Bool { number >= 1 && number <= maximum }

    /// Parses a number written with formatting: `+7 913 123-45-67`, `79131234567`,
    /// `+7 (913) 123.45.67`. Spaces, tabs, NBSP, `-`, `.`, `(`, `)` and `/` are ignored and a
    /// single leading `+` is allowed; the digits are the E.164 number.
    ///
    /// - Throws: ``CallerIDError/Code-swift.struct/invalidNumber`` with the reason: empty,
    ///   letters or other characters, more than 15 digits, a leading zero (a national or
    ///   international-prefix form, not E.164).
    public static func parse(_ text: some StringProtocol) throws(CallerIDError) -> UInt64 {
        try parse(utf8: text.utf8)
    }

    /// Same as ``parse(_:)`` for raw bytes that may not be valid UTF-8 (a line read from a file).
    public static func parse(utf8 bytes: some Collection<UInt8>) throws(CallerIDError) -> UInt64 {
        let array = Array(bytes)
        return try array.withUnsafeBytes { raw in
            Result { () throws(CallerIDError) in try parse(bytes: raw) }
        }.get()
    }

    static func parse(bytes: UnsafeRawBufferPointer) throws(CallerIDError) -> UInt64 {
        var value: UInt64 = 0
        var digits = 0
        var sawPlus = false
        var i = 0
        let n = bytes.count
        while i < n {
            let b = bytes[i]
            switch b {
            case 0x30...0x39:
                if digits == 0 && b == 0x30 {
                    throw CallerIDError(.invalidNumber, "leading zero: not an E.164 number (national or 00-prefixed form?)")
                }
                digits += 1
                if digits > 15 {
                    throw CallerIDError(.invalidNumber, "too long: more than 15 digits")
                }
                value = value &* 10 &+ UInt64(b - 0x30)
            case 0x20, 0x09, 0x2D, 0x2E, 0x28, 0x29, 0x2F:
                break
            case 0x2B where digits == 0 && !sawPlus:
                sawPlus = true
            case 0xC2 where i + 1 < n && bytes[i + 1] == 0xA0:  // U+00A0 NO-BREAK SPACE
                i += 1
            default:
                let shown = b >= 0x20 && b < 0x7F ? "'\(Character(Unicode.Scalar(b)))'" : "byte 0x" + String(b, radix: 16)
                throw CallerIDError(.invalidNumber, "unexpected character \(shown) at position \(i + 1)")
            }
            i += 1
        }
        guard digits > 0 else { throw CallerIDError(.invalidNumber, "no digits") }
        return value
    }
}
