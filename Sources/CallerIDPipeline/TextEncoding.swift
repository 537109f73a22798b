import CallerID

/// A character encoding of an input file. Everything is converted to UTF-8; a byte sequence
/// the encoding does not define makes its row a rejected row (`invalid-encoding`), it never
/// becomes garbage in a label.
///
/// Every input is converted to UTF-8 as it streams in (single-byte code pages byte by byte,
/// UTF-16 across chunk boundaries); an undefined byte or an unpaired surrogate becomes the
/// byte 0xFF, which is never valid UTF-8, so the row holding it is rejected when its fields
/// are checked.
public enum TextEncoding: String, Sendable, CaseIterable, CustomStringConvertible {
    case utf8 = "utf-8"
    /// UTF-16 with a byte-order mark (little-endian when the mark is missing).
    case utf16 = "utf-16"
    case utf16LE = "utf-16le"
    case utf16BE = "utf-16be"
    case windows1251 = "windows-1251"
    case windows1252 = "windows-1252"
    case iso8859_1 = "iso-8859-1"
    case koi8R = "koi8-r"

    public var description: String { rawValue }

    /// The encoding called `name`: canonical names and common aliases (`cp1251`, `latin1`,
    /// `utf8`, `koi8r`…), case-insensitive. Nil for an unknown name.
    public static func named(_ name: String) -> TextEncoding? {
        let key = String(name.lowercased().filter { $0.isLetter || $0.isNumber })
        switch key {
        case "utf8": return .utf8
        case "utf16": return .utf16
        case "utf16le": return .utf16LE
        case "utf16be": return .utf16BE
        case "windows1251", "cp1251", "win1251": return .windows1251
        case "windows1252", "cp1252", "win1252": return .windows1252
        case "iso88591", "latin1", "l1", "iso885911987": return .iso8859_1
        case "koi8r", "koi8": return .koi8R
        default: return nil
        }
    }

    /// True for encodings whose files are transcoded to UTF-8 while streaming.
    var isUTF16: Bool { self == .utf16 || self == .utf16LE || self == .utf16BE }

    /// The upper-half table of a single-byte code page (nil for UTF-8, UTF-16 and Latin-1,
    /// which maps every byte to the scalar of the same value).
    private var table: [UInt16]? {
        switch self {
        case .windows1251: CodePages.windows1251
        case .windows1252: CodePages.windows1252
        case .koi8R: CodePages.koi8r
        default: nil
        }
    }

    /// True for the single-byte code pages, converted to UTF-8 chunk by chunk.
    var isSingleByte: Bool { self == .windows1251 || self == .windows1252 || self == .iso8859_1 || self == .koi8R }

    /// Appends the UTF-8 form of single-byte-encoded `bytes` to `output`. A byte the code page
    /// leaves undefined becomes 0xFF, which is never valid UTF-8: the row holding it is
    /// rejected when its fields are checked.
    func appendUTF8(ofSingleByte bytes: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        let t = table
        for b in bytes {
            if b < 0x80 {
                output.append(b)
            } else if let t {
                let scalar = t[Int(b) - 0x80]
                if scalar == 0 { output.append(UTF16Transcoder.invalidMarker) } else { UTF8Check.append(UInt32(scalar), to: &output) }
            } else {
                UTF8Check.append(UInt32(b), to: &output)   // ISO-8859-1: byte value = scalar value
            }
        }
    }
}

/// Strict UTF-8 validation and encoding helpers.
enum UTF8Check {
    /// True when `bytes` is well-formed UTF-8 (no overlong forms, surrogates or values above U+10FFFF).
    static func isValid(_ bytes: UnsafeRawBufferPointer) -> Bool {
        isValidUTF8(bytes)   // the core's rule, so ingestion and the database agree
    }

    static func isValid(_ bytes: [UInt8]) -> Bool { bytes.withUnsafeBytes { isValid($0) } }

    /// Appends the UTF-8 encoding of a scalar value (callers pass valid scalars).
    @inline(__always)
    static func append(_ v: UInt32, to out: inout [UInt8]) {
        switch v {
        case 0..<0x80:
            out.append(UInt8(v))
        case 0x80..<0x800:
            out.append(UInt8(0xC0 | (v >> 6)))
            out.append(UInt8(0x80 | (v & 0x3F)))
        case 0x800..<0x10000:
            out.append(UInt8(0xE0 | (v >> 12)))
            out.append(UInt8(0x80 | ((v >> 6) & 0x3F)))
            out.append(UInt8(0x80 | (v & 0x3F)))
        default:
            out.append(UInt8(0xF0 | (v >> 18)))
            out.append(UInt8(0x80 | ((v >> 12) & 0x3F)))
            out.append(UInt8(0x80 | ((v >> 6) & 0x3F)))
            out.append(UInt8(0x80 | (v & 0x3F)))
        }
    }
}

/// Streams UTF-16 to UTF-8 across chunk boundaries. An unpaired surrogate (or a final odd
/// byte) becomes the byte 0xFF, never valid in UTF-8, so the row holding it is rejected.
struct UTF16Transcoder {
    var bigEndian: Bool
    private var carry: UInt8? = nil
    private var pendingHigh: UInt32? = nil

    init(bigEndian: Bool) { self.bigEndian = bigEndian }

    static let invalidMarker: UInt8 = 0xFF

    mutating func transcode(_ input: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        var i = 0
        let n = input.count
        var first: UInt8 = 0
        var haveFirst = false
        if let c = carry { first = c; haveFirst = true; carry = nil }
        while true {
            var a: UInt8, b: UInt8
            if haveFirst {
                guard i < n else { carry = first; return }
                a = first; b = input[i]; i += 1; haveFirst = false
            } else {
                guard i + 1 < n else {
                    if i < n { carry = input[i] }
                    return
                }
                a = input[i]; b = input[i + 1]; i += 2
            }
            if bigEndian { swap(&a, &b) }
            let unit = UInt32(a) | UInt32(b) << 8
            if let high = pendingHigh {
                pendingHigh = nil
                if (0xDC00...0xDFFF).contains(unit) {
                    UTF8Check.append(0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00), to: &out)
                    continue
                }
                out.append(UTF16Transcoder.invalidMarker)
            }
            switch unit {
            case 0xD800...0xDBFF: pendingHigh = unit
            case 0xDC00...0xDFFF: out.append(UTF16Transcoder.invalidMarker)
            default: UTF8Check.append(unit, to: &out)
            }
        }
    }

    /// Flushes what is left at the end of the input.
    mutating func finish(into out: inout [UInt8]) {
        if pendingHigh != nil { out.append(UTF16Transcoder.invalidMarker); pendingHigh = nil }
        if carry != nil { out.append(UTF16Transcoder.invalidMarker); carry = nil }
    }
}
