// The one UTF-8 rule labels are held to (the builder, the TSV reader, the pipeline, the tool).
/// Strict UTF-8 validation (no overlongs, surrogates or values above U+10FFFF), the rule
/// labels are held to; public so ingestion code applies the same one.
public func isValidUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool { validUTF8(bytes) }

/// Strict UTF-8 validation (no overlongs, surrogates or values above U+10FFFF).
func validUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
    var i = 0
    let n = bytes.count
    while i < n {
        let b0 = bytes[i]
        if b0 < 0x80 { i += 1; continue }
        let len: Int
        var lo: UInt8 = 0x80, hi: UInt8 = 0xBF
        switch b0 {
        case 0xC2...0xDF: len = 2
        case 0xE0: len = 3; lo = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: len = 3
        case 0xED: len = 3; hi = 0x9F
        case 0xF0: len = 4; lo = 0x90
        case 0xF1...0xF3: len = 4
        case 0xF4: len = 4; hi = 0x8F
        default: return false
        }
        guard i + len <= n else { return false }
        let b1 = bytes[i + 1]
        guard b1 >= lo && b1 <= hi else { return false }
        for j in 2..<max(2, len) where bytes[i + j] & 0xC0 != 0x80 { return false }
        i += len
    }
    return true
}
