public import CallerID
import Foundation

/// Cleans labels: replacements (`_` → space, say), whitespace trimmed and collapsed to one
/// space (tabs and line breaks included), Unicode NFC, hidden characters (bidirectional
/// controls, invisible characters: ``LabelText``) removed, and an optional maximum length in
/// UTF-8 bytes, cut on a character boundary. A label left with a control character is refused.
public struct LabelCleaner: Sendable {
    /// Applied in order before whitespace is collapsed.
    public var replacements: [(from: String, to: String)]
    /// Maximum UTF-8 bytes of a label; longer labels are cut (and counted). Nil: no limit
    /// (the file format's own limit, 65,535 bytes, still rejects a row).
    public var maxBytes: Int?
    /// Hidden characters are removed (and reported in ``CleanedLabel/hiddenRemoved``), or the
    /// label is refused.
    public var hiddenCharacters: LabelText.HiddenCharacters

    public init(replacements: [(from: String, to: String)] = [], maxBytes: Int? = nil,
                hiddenCharacters: LabelText.HiddenCharacters = .remove) {
        self.replacements = replacements
        self.maxBytes = maxBytes
        self.hiddenCharacters = hiddenCharacters
    }

    /// A label as ``LabelCleaner/clean(_:)`` leaves it.
    public struct CleanedLabel: Sendable, Equatable {
        public var label: String
        /// Cut to ``LabelCleaner/maxBytes``.
        public var truncated: Bool
        /// The hidden characters removed, in order.
        public var hiddenRemoved: [Unicode.Scalar]

        /// `removed U+202E RIGHT-TO-LEFT OVERRIDE, U+202C POP DIRECTIONAL FORMATTING from the
        /// label` (the first three named): the warning of a row whose label lost some.
        public var hiddenRemovedWarning: String {
            let names = hiddenRemoved.prefix(3).map { LabelText.scalarName($0.value) }.joined(separator: ", ")
            let more = hiddenRemoved.count > 3 ? " and \(hiddenRemoved.count - 3) more" : ""
            return "removed hidden character\(hiddenRemoved.count == 1 ? "" : "s") \(names)\(more) from the label"
        }
    }

    /// Parses `--label-replace` values: `FROM=TO` (the first `=` splits; `\t`, `\n`, `\\`,
    /// `\=` escapes are understood).
    public static func parseReplacement(_ spec: String) -> (from: String, to: String)? {
        var from = "", to = "", inTo = false, escape = false
        for c in spec {
            if escape {
                let r: Character = c == "t" ? "\t" : c == "n" ? "\n" : c == "s" ? " " : c
                if inTo { to.append(r) } else { from.append(r) }
                escape = false
            } else if c == "\\" {
                escape = true
            } else if c == "=" && !inTo {
                inTo = true
            } else if inTo {
                to.append(c)
            } else {
                from.append(c)
            }
        }
        guard inTo, !from.isEmpty else { return nil }
        return (from, to)
    }

    /// The cleaned label, whether it was cut and the hidden characters removed.
    /// - Throws: the ``LabelText/Problem`` of a label left with a control character, or with a
    ///   hidden one when ``hiddenCharacters`` is `.refuse`.
    public func clean(_ input: String) throws(LabelText.Problem) -> CleanedLabel {
        var s = input
        for r in replacements where s.contains(r.from) { s = s.replacingOccurrences(of: r.from, with: r.to) }
        s = collapse(s)
        if let c = s.unicodeScalars.first(where: { LabelText.isControl($0.value) }) {
            throw LabelText.Problem(kind: .control, scalar: c.value)
        }
        if !LabelCleaner.isQuickNFC(s) { s = s.precomposedStringWithCanonicalMapping }
        var hidden: [Unicode.Scalar] = []
        if LabelText.check(s) != nil {
            (s, hidden) = LabelText.removingHiddenCharacters(s)
            if let first = hidden.first, hiddenCharacters == .refuse {
                throw LabelText.Problem(kind: .hidden, scalar: first.value)
            }
            s = collapse(s)   // "a \u{202E} b": the two spaces become one
        }
        var truncated = false
        if let maxBytes, s.utf8.count > maxBytes {
            truncated = true
            let cut = LabelText.prefix(of: s, budget: maxBytes) { $0.utf8.count }
            // A joiner the cut left without the letter after it.
            let (kept, removed) = LabelText.removingHiddenCharacters(cut)
            s = removed.isEmpty ? cut : collapse(kept)
        }
        return CleanedLabel(label: s, truncated: truncated, hiddenRemoved: hidden)
    }

    /// Trims and collapses runs of whitespace to one space; returns `s` itself when it is clean.
    private func collapse(_ s: String) -> String {
        var needsWork = false
        var previousSpace = true   // a space first would be a leading space
        let u = Array(s.utf8)
        var i = 0
        while i < u.count {
            let b = u[i]
            if b == 0x20 {
                if previousSpace { needsWork = true; break }
                previousSpace = true
            } else if b < 0x20 || b == 0x7F {
                needsWork = true
                break
            } else {
                // Unicode whitespace: U+0085, U+00A0 (C2 85, C2 A0), U+1680, U+180E (E1 9A 80,
                // E1 A0 8E), U+2000-200A, U+2028/2029/202F (E2 80 xx), U+205F (E2 81 9F), U+3000 (E3 80 80).
                // U+200B ZERO WIDTH SPACE is not white space but a hidden character: removed
                // with a warning below, not turned into a space.
                let b1: UInt8 = i + 1 < u.count ? u[i + 1] : 0, b2: UInt8 = i + 2 < u.count ? u[i + 2] : 0
                switch b {
                case 0xC2 where b1 == 0x85 || b1 == 0xA0: needsWork = true
                case 0xE1 where (b1 == 0x9A && b2 == 0x80) || (b1 == 0xA0 && b2 == 0x8E): needsWork = true
                case 0xE2 where (b1 == 0x80 && (b2 <= 0x8A || b2 == 0xA8 || b2 == 0xA9 || b2 == 0xAF)) || (b1 == 0x81 && b2 == 0x9F): needsWork = true
                case 0xE3 where b1 == 0x80 && b2 == 0x80: needsWork = true
                default: break
                }
                if needsWork { break }
                previousSpace = false
            }
            i += 1
        }
        if !needsWork && !(previousSpace && !s.isEmpty) { return s }
        var out = String.UnicodeScalarView()
        var pendingSpace = false
        for u in s.unicodeScalars {
            if u.properties.isWhitespace {
                pendingSpace = !out.isEmpty
            } else {
                if pendingSpace { out.append(" ") }
                pendingSpace = false
                out.append(u)
            }
        }
        return String(out)
    }

    /// True when every scalar is in a block whose characters are all NFC-stable starters
    /// (ASCII, Latin-1 and Latin Extended, Cyrillic letters, CJK ideographs, Hangul syllables,
    /// kana without the combining sound marks): such a string is already NFC.
    /// True when ``clean(_:)`` would return these UTF-8 bytes unchanged (no replacements or
    /// length limit set, no control character, no leading, trailing or repeated whitespace, and
    /// every character in ranges that are NFC as they stand): the check of a plain TSV build's
    /// labels, which allocates nothing for a clean label.
    func isClean(utf8 bytes: UnsafeRawBufferPointer) -> Bool {
        guard replacements.isEmpty, maxBytes == nil else { return false }
        var i = 0
        var previousSpace = true   // a space first would be a leading space
        let n = bytes.count
        while i < n {
            // Eight printable ASCII bytes other than space at a time (most of most labels).
            if i + 8 <= n {
                let w = bytes.littleEndianWord(at: i)
                // A byte < 0x21 or >= 0x7F sets its high bit in one of these (no borrow crosses
                // bytes: every byte of w | 0x80… is >= 0x80 before the subtraction).
                let low = ((w | 0x8080_8080_8080_8080) &- 0x2121_2121_2121_2121) ^ 0x8080_8080_8080_8080
                let high = (w &+ 0x0101_0101_0101_0101) | w
                if (low | high) & 0x8080_8080_8080_8080 == 0 {
                    previousSpace = false
                    i += 8
                    continue
                }
            }
            let b = bytes[i]
            if b < 0x80 {
                if b < 0x20 || b == 0x7F { return false }
                if b == 0x20 {
                    if previousSpace { return false }
                    previousSpace = true
                } else {
                    previousSpace = false
                }
                i += 1
                continue
            }
            // A multi-byte character (the bytes are valid UTF-8): its scalar value.
            let length = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2
            guard i + length <= n else { return false }
            var v = UInt32(b) & (length == 2 ? 0x1F : length == 3 ? 0x0F : 0x07)
            for k in 1..<length { v = v << 6 | UInt32(bytes[i + k] & 0x3F) }
            switch v {
            case 0x85, 0xA0, 0x1680, 0x180E, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000:
                return false   // Unicode whitespace: collapsed to a space
            default:
                // C1 controls, hidden characters and joiners: the slow path decides.
                guard LabelText.isAllowedAnywhere(v), LabelCleaner.isQuickNFC(scalar: v) else { return false }
            }
            previousSpace = false
            i += length
        }
        return !(previousSpace && n > 0)
    }

    static func isQuickNFC(_ s: String) -> Bool {
        s.unicodeScalars.allSatisfy { isQuickNFC(scalar: $0.value) }
    }

    /// True for characters in ranges that are NFC as they stand (Latin up to the combining
    /// marks, Cyrillic, kana, CJK, Hangul syllables, punctuation, currency, full-width forms).
    @inline(__always)
    static func isQuickNFC(scalar v: UInt32) -> Bool {
        switch v {
        case 0..<0x300, 0x400...0x482, 0x48A...0x52F, 0x3041...0x3096, 0x30A1...0x30FA,
             0x4E00...0x9FFF, 0xAC00...0xD7A3, 0x2000...0x206F, 0x20A0...0x20BF, 0xFF01...0xFF5E:
            return true
        default:
            return false
        }
    }
}
