// The one UTF-8 rule labels are held to (the builder, the TSV reader, the pipeline, the tool).
/// Strict UTF-8 validation (no overlongs, surrogates or values above U+10FFFF), the rule
/// labels are held to; package access so ingestion code applies the same one.
package func isValidUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool { validUTF8(bytes) }

/// Strict UTF-8 validation (no overlongs, surrogates or values above U+10FFFF).
func validUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
    var i = 0
    let n = bytes.count
    while i < n {
        let b0 = bytes[i]
        if b0 < 0x80 { i += 1; continue }
        guard let len = utf8SequenceLength(bytes, at: i) else { return false }
        i += len
    }
    return true
}

/// The length of the strict UTF-8 sequence that starts with the non-ASCII byte at `i`, or nil
/// when it is not one (a bad lead byte, a sequence cut short, an overlong form, a surrogate,
/// a value above U+10FFFF): the one reading of UTF-8 `validUTF8` and `LabelText.check` share.
@inline(__always)
func utf8SequenceLength(_ bytes: UnsafeRawBufferPointer, at i: Int) -> Int? {
    let len: Int
    var lo: UInt8 = 0x80, hi: UInt8 = 0xBF
    switch bytes[i] {
    case 0xC2...0xDF: len = 2
    case 0xE0: len = 3; lo = 0xA0
    case 0xE1...0xEC, 0xEE...0xEF: len = 3
    case 0xED: len = 3; hi = 0x9F
    case 0xF0: len = 4; lo = 0x90
    case 0xF1...0xF3: len = 4
    case 0xF4: len = 4; hi = 0x8F
    default: return nil
    }
    guard i &+ len <= bytes.count else { return nil }
    let b1 = bytes[i &+ 1]
    guard b1 >= lo && b1 <= hi else { return nil }
    for j in 2..<max(2, len) where bytes[i &+ j] & 0xC0 != 0x80 { return nil }
    return len
}
