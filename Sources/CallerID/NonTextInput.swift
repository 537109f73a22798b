/// What the first bytes of an input say when it is not UTF-8 text: UTF-16 (a byte-order mark,
/// or a NUL beside most ASCII characters) or binary data (many NUL bytes). Text never holds
/// NUL, so reading such a file line by line would only give garbage rows (or, for
/// `/dev/zero`, one endless line).
package enum NonTextInput: Equatable {
    case utf16(bigEndian: Bool, byteOrderMark: Bool)
    case binary(nulBytes: Int, of: Int)

    /// Looks at the first 64 KiB at most; nil for anything that may be text.
    package static func detect(_ bytes: UnsafeRawBufferPointer) -> NonTextInput? {
        if bytes.count >= 2 && bytes[0] == 0xFF && bytes[1] == 0xFE { return .utf16(bigEndian: false, byteOrderMark: true) }
        if bytes.count >= 2 && bytes[0] == 0xFE && bytes[1] == 0xFF { return .utf16(bigEndian: true, byteOrderMark: true) }
        let n = min(bytes.count, 1 << 16)
        let pairs = n / 2
        guard pairs > 0 else { return nil }
        var zeroEven = 0, zeroOdd = 0
        for i in 0..<(pairs * 2) where bytes[i] == 0 {
            if i & 1 == 0 { zeroEven += 1 } else { zeroOdd += 1 }
        }
        // UTF-16 text: the ASCII characters (digits, TABs, line ends) have a zero high byte,
        // so NULs gather on one side (a few land on the other: U+4E00, the low half of 😀).
        if zeroOdd * 5 >= pairs && zeroOdd >= 4 * zeroEven { return .utf16(bigEndian: false, byteOrderMark: false) }
        if zeroEven * 5 >= pairs && zeroEven >= 4 * zeroOdd { return .utf16(bigEndian: true, byteOrderMark: false) }
        if (zeroEven + zeroOdd) * 4 >= n { return .binary(nulBytes: zeroEven + zeroOdd, of: n) }
        return nil
    }

    /// A sentence for people; `option` is how the encoding is declared (`--encoding`).
    package func message(declaring option: String) -> String {
        switch self {
        case .utf16(let be, let bom):
            let name = be ? "utf-16be" : "utf-16le"
            return bom
                ? "is UTF-16 (it starts with a byte-order mark); this reader takes UTF-8: try \(option) utf-16"
                : "looks like UTF-16 (\(be ? "big" : "little")-endian) without a byte-order mark (NUL bytes beside the characters); try \(option) \(name)"
        case .binary(let nul, let total):
            return "not a text file: \(nul) of its first \(total) bytes are NUL (binary data?)"
        }
    }
}
