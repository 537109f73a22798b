// The one rule of what a label may hold: the builder, the TSV reader, the pipeline, verify, the
// Live Caller ID export, the Call Directory feed and every output of the tool apply it.

/// What label text may hold (docs/FORMAT.md §4, docs/HARDENING.md).
///
/// A label is strict UTF-8 (``isValidUTF8(_:)``) of at most 65,535 bytes, and holds neither
/// - a **control character**: Unicode's `Cc`, that is C0 (U+0000–U+001F), DEL (U+007F) and
///   C1 (U+0080–U+009F; U+009B is a terminal's CSI). A label is one line of text; a build
///   refuses the row, `verify` refuses the file;
/// - nor a **hidden character**, one that changes what a reader sees without being seen
///   (Unicode's security guidance, UTS #39 and UTS #55): Unicode's `Default_Ignorable_Code_Point`
///   (characters a renderer shows as nothing: the bidirectional controls U+061C, U+200E,
///   U+200F, U+202A–U+202E, U+2066–U+2069, which reorder text, `Pay\u{202E}dsu\u{202C} Bank`
///   showing as "Payusd Bank"; U+00AD SOFT HYPHEN, U+034F, U+200B ZERO WIDTH SPACE,
///   U+2060–U+206F, U+FEFF, the Hangul fillers U+115F, U+1160, U+3164, U+FFA0 that make a
///   label look blank, the tag characters U+E0000–U+E007F that carry text nobody sees …) and
///   the interlinear annotation characters U+FFF9–U+FFFB: the table of LabelHiddenRanges.swift,
///   generated from the Unicode Character Database by tools/gen_label_hidden_ranges.py. Two
///   kinds of them are judged by their neighbours: U+200C ZERO WIDTH NON-JOINER and U+200D ZERO
///   WIDTH JOINER are allowed where a script needs them (the contexts of
///   ``isJoinerAllowed(_:before:after:beforeBase:afterBase:)``), and a variation selector
///   (U+FE00–U+FE0F, U+E0100–U+E01EF, the Mongolian U+180B–U+180D, U+180F) right after a
///   character that is seen (``isSelectorBase(_:)``: `❤\u{FE0F}`, an ideographic variation
///   sequence), one at a time. A build removes hidden characters and counts the labels it
///   changed (or refuses them, ``HiddenCharacters/refuse``); `verify` refuses a file that holds
///   one (a file built before the rule: rebuild it).
///
/// Outputs escape what the rule refuses (`\u202e`), so a file that fails `verify` cannot bring
/// a hidden or control character to a terminal or a phone's screen.
public enum LabelText {
    /// The most UTF-8 bytes a label may hold (the file format's limit), for the readers of input
    /// that check a label's length before it reaches the builder.
    package static var maxBytes: Int { Format.maxLabelBytes }

    /// What a label holds that the rule refuses, and where.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public enum Kind: Sendable, Equatable {
            case tooLong
            case invalidUTF8
            case control
            case hidden
        }

        public let kind: Kind
        /// The scalar refused (0 for `tooLong` and `invalidUTF8`).
        public let scalar: UInt32
        /// Its offset in the label's UTF-8 bytes (the label's length for `tooLong`), when known.
        public let byteOffset: Int?

        public init(kind: Kind, scalar: UInt32, byteOffset: Int? = nil) {
            self.kind = kind
            self.scalar = scalar
            self.byteOffset = byteOffset
        }

        /// `hidden character U+202E RIGHT-TO-LEFT OVERRIDE`, `control character U+001B ESCAPE`,
        /// `invalid UTF-8`, `more than 65535 bytes`.
        public var what: String {
            switch kind {
            case .tooLong: "more than \(Format.maxLabelBytes) bytes"
            case .invalidUTF8: "invalid UTF-8"
            case .control: "control character \(LabelText.scalarName(scalar))"
            case .hidden: "hidden character \(LabelText.scalarName(scalar))"
            }
        }

        /// `label has hidden character U+202E RIGHT-TO-LEFT OVERRIDE at byte 5`, etc.
        public var description: String { description(of: "label") }

        /// The description with another subject: `label of value 7 has …`.
        public func description(of subject: String) -> String {
            let at = byteOffset.map { " at byte \($0 + 1)" } ?? ""
            switch kind {
            case .tooLong: return "\(subject) is \(byteOffset ?? 0) bytes; the limit is \(Format.maxLabelBytes)"
            case .invalidUTF8: return "\(subject) is not valid UTF-8\(at)"
            case .control: return "\(subject) has \(what)\(at); labels are one line of text"
            case .hidden: return "\(subject) has \(what)\(at)"
            }
        }
    }

    /// What a build does with hidden characters.
    public enum HiddenCharacters: String, Sendable, CaseIterable {
        /// Removes them and counts the labels changed (the default).
        case remove
        /// Refuses the label (a bad row).
        case refuse
    }

    /// The first thing in `bytes` the rule refuses, or nil for a label that may be stored and
    /// shown as it is. Eight bytes at a time while they hold printable ASCII and two-byte
    /// characters (Cyrillic, Greek, Latin with marks …: ``wordStep(_:)``); elsewhere a
    /// character at a time, where a multi-byte character costs a test of its lead byte unless
    /// it is one of the few whose lead byte begins a refused character (``refusedLeadBytes``:
    /// C2, CD, D8, E1, E2, E3, EF, F0, F3).
    package static func check(_ bytes: UnsafeRawBufferPointer) -> Problem? {
        let n = bytes.count
        guard n <= Format.maxLabelBytes else { return Problem(kind: .tooLong, scalar: 0, byteOffset: n) }
        var i = 0
        while i < n {
            if i &+ 8 <= n {
                let step = wordStep(bytes.littleEndianWord(at: i))
                if step > 0 {
                    i &+= step
                    continue
                }
            } else if n >= 8 {
                // The last 1 … 7 bytes: the word that ends with the label, the bytes before `i`
                // shifted out and spaces shifted in after the end (a lead byte at the end
                // then meets a space, not a continuation).
                let shift = UInt64(8 &* (i &+ 8 &- n))
                let tail = (bytes.littleEndianWord(at: n &- 8) &>> shift) | (0x2020_2020_2020_2020 &<< (64 &- shift))
                if wordStep(tail) > 0 { return nil }
            }
            // The next eight bytes (or so) a character at a time.
            let stop = min(n, i &+ 8)
            while i < stop {
                let b0 = bytes[i]
                if b0 < 0x80 {
                    if b0 < 0x20 || b0 == 0x7F { return Problem(kind: .control, scalar: UInt32(b0), byteOffset: i) }
                    i &+= 1
                    continue
                }
                // Two bytes (Cyrillic, Greek, Latin with marks …) whose characters the rule
                // allows, all but C2 (U+0080 … U+00BF), CD (U+0340 … U+037F) and D8 (U+0600 …
                // U+063F): the lead byte and one continuation byte are all strict UTF-8 asks of them.
                if b0 >= 0xC3, b0 <= 0xDF, !mayBeginRefused(b0), i &+ 1 < n, bytes[i &+ 1] & 0xC0 == 0x80 {
                    i &+= 2
                    continue
                }
                // Strict UTF-8 (UTF8Validation.swift), with the lead bytes of the refused
                // characters looked at on the way.
                guard let len = utf8SequenceLength(bytes, at: i) else { return Problem(kind: .invalidUTF8, scalar: 0, byteOffset: i) }
                if mayBeginRefused(b0) {
                    let v = scalarValue(bytes, at: i, length: len)
                    switch classify(v) {
                    case .allowed: break
                    case .control: return Problem(kind: .control, scalar: v, byteOffset: i)
                    case .hidden: return Problem(kind: .hidden, scalar: v, byteOffset: i)
                    case .joiner:
                        if !joinerAllowed(bytes, at: i) { return Problem(kind: .hidden, scalar: v, byteOffset: i) }
                    case .selector:
                        if !selectorAllowed(bytes, at: i) { return Problem(kind: .hidden, scalar: v, byteOffset: i) }
                    }
                }
                i &+= len
            }
        }
        return nil
    }

    /// Whether `lead`, a UTF-8 lead byte (C2 … F4), begins a character the rule does not allow
    /// wherever it stands, for one or more of the characters it begins (``refusedLeadBytes``).
    @inline(__always)
    static func mayBeginRefused(_ lead: UInt8) -> Bool { refusedLeadBytes &>> UInt64(lead &- 0xC0) & 1 != 0 }

    /// How many of the eight bytes of `w` (little-endian, starting at a character) the rule
    /// allows as they stand, 7 or 8, when they hold only printable ASCII and two-byte
    /// characters with lead bytes C3 … DF other than CD and D8 (7 when the last byte is such a
    /// lead: its continuation lies past `w`); 0 when anything else is there, valid or not. Lead
    /// bytes C0 … C2, CD and D8 are left to the character loop: C0 and C1 are never UTF-8, C2
    /// begins the C1 controls and U+00AD, CD U+034F and D8 U+061C (the two-byte leads of
    /// ``refusedLeadBytes``; LabelRuleTests checks the two agree).
    @inline(__always)
    static func wordStep(_ w: UInt64) -> Int {
        let highBits: UInt64 = 0x8080_8080_8080_8080
        let ascii = ~w & highBits
        // In an ASCII byte: < 0x20 (low) or 0x7F (high) — no borrow or carry crosses bytes.
        let low = ((w | highBits) &- 0x2020_2020_2020_2020) ^ highBits
        let high = (w &+ 0x0101_0101_0101_0101) | w
        let lead = w & (w &<< 1) & highBits          // 11xxxxxx
        let continuation = w & ~(w &<< 1) & highBits // 10xxxxxx
        // A two-byte lead (110xxxxx) whose payload is neither below 3 (C0 … C2), 0x0D (CD) nor
        // 0x18 (D8).
        let payload = w & 0x1F1F_1F1F_1F1F_1F1F
        let goodLead = (payload &+ 0x7D7D_7D7D_7D7D_7D7D) & ((payload ^ 0x1818_1818_1818_1818) &+ 0x7F7F_7F7F_7F7F_7F7F)
            & ((payload ^ 0x0D0D_0D0D_0D0D_0D0D) &+ 0x7F7F_7F7F_7F7F_7F7F) & ~(w &<< 2) & highBits
        let refused = ((low | high) & ascii) | (lead & ~goodLead)
        // Every continuation byte right after a lead, every lead (but the last byte) before one.
        guard refused == 0, continuation == lead &<< 8 else { return 0 }
        return lead & 0x8000_0000_0000_0000 == 0 ? 8 : 7
    }

    /// The rule read a byte at a time by a 32-state automaton, for checking many labels made
    /// of the same pieces (verify runs it over a cold label's symbols: ``LabelSymbolAutomaton``):
    /// from ``ruleStart``, a label the rule allows and that holds no joiner or variation
    /// selector ends in ``ruleStart``; any other label (one the rule refuses, one that stops
    /// inside a character, one with U+200C, U+200D or a selector, whose neighbours decide) ends
    /// elsewhere, and ``check(_:)`` says which. ``ruleUndecided`` keeps itself on every byte.
    ///
    /// The states are where a character stands: 0 between characters, 1 … 3 that many
    /// continuation bytes due, and the places where the byte ahead decides between an allowed
    /// character and one that is not (a control, a hidden character, a joiner, a selector: the
    /// lead bytes of ``refusedLeadBytes`` and the bytes after them down to the refused
    /// characters of LabelHiddenRanges.swift) or a form strict UTF-8 refuses (after E0, ED, F0,
    /// F4). LabelRuleTests holds it to ``check(_:)`` on every string of one and two bytes and on
    /// the characters around every range of the tables.
    static func ruleStep(_ state: UInt8, _ byte: UInt8) -> UInt8 {
        let undecided = ruleUndecided
        let isContinuation = byte & 0xC0 == 0x80
        // The last byte of a character: refused (undecided) in `refused`, allowed otherwise.
        func last(refusing refused: ClosedRange<UInt8>) -> UInt8 { refused.contains(byte) || !isContinuation ? undecided : 0 }
        switch state {
        case 0:
            switch byte {
            case 0x20...0x7E: return 0
            case 0xC2: return 8
            case 0xCD: return 15
            case 0xD8: return 9
            case 0xC3...0xDF: return 1
            case 0xE0: return 4
            case 0xE1: return 16
            case 0xE2: return 10
            case 0xE3: return 20
            case 0xED: return 5
            case 0xEF: return 13
            case 0xE4...0xEE: return 2
            case 0xF0: return 6
            case 0xF1, 0xF2: return 3
            case 0xF3: return 29
            case 0xF4: return 7
            default: return undecided  // C0 controls and DEL, a stray continuation, leads C0, C1 and F5 … FF
            }
        case 1, 2, 3: return isContinuation ? state &- 1 : undecided
        case 4: return byte >= 0xA0 && byte <= 0xBF ? 1 : undecided                 // E0: no overlong form
        case 5: return byte >= 0x80 && byte <= 0x9F ? 1 : undecided                 // ED: no surrogate
        case 6:                                                                     // F0: no overlong form
            switch byte {
            case 0x9B: return 25
            case 0x9D: return 27
            case 0x90...0xBF: return 2
            default: return undecided
            }
        case 7: return byte >= 0x80 && byte <= 0x8F ? 2 : undecided                 // F4: at most U+10FFFF
        case 8: return byte >= 0xA0 && byte <= 0xBF && byte != 0xAD ? 0 : undecided // C2: U+0080 … U+009F are C1, U+00AD
        case 9: return last(refusing: 0x9C...0x9C)                                   // D8 9C: U+061C
        case 10: return byte == 0x80 ? 11 : byte == 0x81 ? 12 : isContinuation ? 1 : undecided
        case 11:                                                                    // U+2000 … U+203F
            switch byte {
            case 0x8B...0x8F, 0xAA...0xAE: return undecided                         // U+200B … U+200F, U+202A … U+202E
            default: return isContinuation ? 0 : undecided
            }
        case 12: return last(refusing: 0xA0...0xAF)                                  // U+2060 … U+206F
        case 13:                                                                    // EF
            switch byte {
            case 0xB8: return 22
            case 0xBB: return 14
            case 0xBE: return 23
            case 0xBF: return 24
            default: return isContinuation ? 1 : undecided
            }
        case 14: return last(refusing: 0xBF...0xBF)                                  // EF BB BF: U+FEFF
        case 15: return last(refusing: 0x8F...0x8F)                                  // CD 8F: U+034F
        case 16:                                                                    // E1
            switch byte {
            case 0x85: return 17
            case 0x9E: return 18
            case 0xA0: return 19
            default: return isContinuation ? 1 : undecided
            }
        case 17: return last(refusing: 0x9F...0xA0)                                  // U+115F, U+1160
        case 18: return last(refusing: 0xB4...0xB5)                                  // U+17B4, U+17B5
        case 19: return last(refusing: 0x8B...0x8F)                                  // U+180B … U+180F
        case 20: return byte == 0x85 ? 21 : isContinuation ? 1 : undecided          // E3
        case 21: return last(refusing: 0xA4...0xA4)                                  // E3 85 A4: U+3164
        case 22: return last(refusing: 0x80...0x8F)                                  // U+FE00 … U+FE0F
        case 23: return last(refusing: 0xA0...0xA0)                                  // EF BE A0: U+FFA0
        case 24: return last(refusing: 0xB0...0xBB)                                  // U+FFF0 … U+FFFB
        case 25: return byte == 0xB2 ? 26 : isContinuation ? 1 : undecided          // F0 9B
        case 26: return last(refusing: 0xA0...0xA3)                                  // U+1BCA0 … U+1BCA3
        case 27: return byte == 0x85 ? 28 : isContinuation ? 1 : undecided          // F0 9D
        case 28: return last(refusing: 0xB3...0xBA)                                  // U+1D173 … U+1D17A
        case 29: return byte == 0xA0 ? undecided : isContinuation ? 2 : undecided   // F3 A0: U+E0000 … U+E0FFF
        default: return undecided
        }
    }

    /// ``ruleStep(_:_:)``'s state between characters.
    static let ruleStart: UInt8 = 0
    /// ``ruleStep(_:_:)``'s state that keeps itself: ``check(_:)`` decides.
    static let ruleUndecided: UInt8 = 31
    /// ``ruleStep(_:_:)``'s number of states (state 30 is not used).
    static let ruleStates = 32

    /// ``check(_:)`` of a string's UTF-8.
    public static func check(_ s: String) -> Problem? {
        var s = s
        return s.withUTF8 { check(UnsafeRawBufferPointer($0)) }
    }

    /// True for a control character: Unicode's `Cc` (C0, DEL, C1).
    @inlinable
    public static func isControl(_ v: UInt32) -> Bool { v < 0x20 || (v >= 0x7F && v <= 0x9F) }

    /// What the rule says of one scalar out of context.
    /// True for a scalar the rule allows wherever it stands (false for controls, hidden
    /// characters and the joiners, which depend on their neighbours). Inlinable: the pipeline's
    /// label check asks it of every non-ASCII character.
    @inlinable
    package static func isAllowedAnywhere(_ v: UInt32) -> Bool { classify(v) == .allowed }

    @usableFromInline
    enum ScalarClass {
        case allowed, control, hidden
        /// U+200C or U+200D: allowed where a script needs it.
        case joiner
        /// A variation selector: allowed right after a character that is seen.
        case selector
    }

    @inlinable
    static func classify(_ v: UInt32) -> ScalarClass {
        if isControl(v) { return .control }
        if v < 0xAD { return .allowed }   // the first hidden character is U+00AD
        if v < 0x10000 {
            // Most characters lie in a block of the BMP without any the rule judges.
            let word = switch v >> 14 {
            case 0: judgedBlocks0
            case 1: judgedBlocks1
            case 2: judgedBlocks2
            default: judgedBlocks3
            }
            if word >> UInt64((v >> 8) & 63) & 1 == 0 { return .allowed }
        }
        if v == 0x200C || v == 0x200D { return .joiner }
        if inRanges(selectorRanges, v) { return .selector }
        return inRanges(hiddenRanges, v) ? .hidden : .allowed
    }

    /// Whether `v` lies in one of the first, last pairs of `table` (ascending).
    @inlinable
    static func inRanges(_ table: [UInt32], _ v: UInt32) -> Bool {
        var low = 0
        var high = table.count / 2
        while low < high {
            let mid = (low + high) / 2
            if v > table[2 * mid + 1] { low = mid + 1 } else { high = mid }
        }
        return low < table.count / 2 && v >= table[2 * low]
    }

    /// A character a variation selector may follow: one that is seen, that is, allowed wherever
    /// it stands and not white space (so not a control, a hidden character, a joiner, another
    /// selector nor a space: a selector never stands alone or in a run that could carry text
    /// nobody sees).
    static func isSelectorBase(_ v: UInt32) -> Bool {
        guard classify(v) == .allowed, let scalar = Unicode.Scalar(v) else { return false }
        return !scalar.properties.isWhitespace
    }

    /// Whether the selector at byte `i` of valid UTF-8 `bytes` follows a character that is seen.
    static func selectorAllowed(_ bytes: UnsafeRawBufferPointer, at i: Int) -> Bool {
        guard i > 0 else { return false }
        var start = i &- 1
        while start > 0, bytes[start] & 0xC0 == 0x80 { start &-= 1 }
        let length = i &- start
        let v = length == 1 ? UInt32(bytes[start]) : scalarValue(bytes, at: start, length: length)
        return isSelectorBase(v)
    }

    /// The scalar of the valid UTF-8 sequence of `length` bytes at `i`.
    @inline(__always)
    static func scalarValue(_ bytes: UnsafeRawBufferPointer, at i: Int, length: Int) -> UInt32 {
        var v = UInt32(bytes[i]) & (length == 2 ? 0x1F : length == 3 ? 0x0F : 0x07)
        for k in 1..<length { v = v << 6 | UInt32(bytes[i &+ k] & 0x3F) }
        return v
    }

    /// Whether the joiner at byte `i` of valid UTF-8 `bytes` stands where a script needs it
    /// (the slow path: labels rarely hold one).
    static func joinerAllowed(_ bytes: UnsafeRawBufferPointer, at i: Int) -> Bool {
        let scalars = Array(String(decoding: bytes, as: UTF8.self).unicodeScalars)
        // The scalar index of byte offset i.
        var offset = 0
        var index = 0
        while offset < i {
            offset += UTF8.width(scalars[index])
            index += 1
        }
        return joinerAllowed(in: scalars, at: index)
    }

    /// Whether the joiner `scalars[k]` stands where a script needs it.
    static func joinerAllowed(in scalars: [Unicode.Scalar], at k: Int) -> Bool {
        let before = k > 0 ? scalars[k - 1] : nil
        let after = k + 1 < scalars.count ? scalars[k + 1] : nil
        var b = k - 1
        while b >= 0, isTransparent(scalars[b]) { b -= 1 }
        var a = k + 1
        while a < scalars.count, isTransparent(scalars[a]) { a += 1 }
        return isJoinerAllowed(scalars[k], before: before, after: after,
                               beforeBase: b >= 0 ? scalars[b] : nil, afterBase: a < scalars.count ? scalars[a] : nil)
    }

    /// The contexts in which a script needs a joiner (U+200C ZWNJ, U+200D ZWJ):
    /// - after a virama (canonical combining class 9: Devanagari, Bengali, Tamil… conjuncts,
    ///   IDNA's CONTEXTJ rule, RFC 5892 A.1 and A.2), either joiner;
    /// - ZWNJ between two letters of a script that joins its letters (Arabic and Persian,
    ///   Syriac, N'Ko, Mongolian, Mandaic, Phags-pa, Adlam…), combining marks between them
    ///   skipped (`می‌خواهم`; RFC 5892 A.1's joining rule, by script rather than joining type);
    /// - ZWJ between two emoji (an emoji ZWJ sequence, `👩‍💻`; after an emoji modifier or
    ///   U+FE0F too, `🏳️‍🌈`).
    ///
    /// `before`/`after` are the neighbouring scalars, `beforeBase`/`afterBase` the nearest ones
    /// that are not combining marks.
    public static func isJoinerAllowed(_ joiner: Unicode.Scalar, before: Unicode.Scalar?, after: Unicode.Scalar?,
                                       beforeBase: Unicode.Scalar?, afterBase: Unicode.Scalar?) -> Bool {
        if let before, before.properties.canonicalCombiningClass == .virama { return true }
        if joiner.value == 0x200D {
            guard let before, let after else { return false }
            let emojiBefore = before.properties.isEmoji || before.value == 0xFE0F || before.properties.isEmojiModifier
            return emojiBefore && after.properties.isEmoji && !isASCIIEmoji(before) && !isASCIIEmoji(after)
        }
        guard let beforeBase, let afterBase else { return false }
        return isJoiningLetter(beforeBase) && isJoiningLetter(afterBase)
    }

    /// Digits, `#` and `*` are `Emoji` (keycap bases) but not pictures a ZWJ joins.
    private static func isASCIIEmoji(_ s: Unicode.Scalar) -> Bool { s.value < 0x80 }

    /// A combining mark (`Mn`, `Me`): transparent to joining.
    private static func isTransparent(_ s: Unicode.Scalar) -> Bool {
        switch s.properties.generalCategory {
        case .nonspacingMark, .enclosingMark: true
        default: false
        }
    }

    /// A letter of a script whose letters join (cursive scripts).
    private static func isJoiningLetter(_ s: Unicode.Scalar) -> Bool {
        switch s.value {
        case 0x0600...0x06FF, 0x0700...0x074F, 0x0750...0x077F, 0x07C0...0x07FF, 0x0840...0x086F, 0x0870...0x089F,
             0x08A0...0x08FF, 0x1800...0x18AF, 0xA840...0xA87F, 0xFB50...0xFDFF, 0xFE70...0xFEFE,
             0x10AC0...0x10AFF, 0x10B80...0x10BAF, 0x10D00...0x10D3F, 0x10F30...0x10F6F, 0x1E900...0x1E95F:
            return s.properties.isAlphabetic
        default:
            return false
        }
    }

    /// `U+202E RIGHT-TO-LEFT OVERRIDE`, `U+009B CONTROL SEQUENCE INTRODUCER` (a control's alias),
    /// or `U+E000` for a scalar without a name.
    public static func scalarName(_ v: UInt32) -> String {
        let hex = String(v, radix: 16, uppercase: true)
        let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        guard let scalar = Unicode.Scalar(v), let name = scalar.properties.name ?? scalar.properties.nameAlias else { return code }
        return code + " " + name
    }

    /// `text` with its hidden characters removed (none of its other characters changed), and
    /// the scalars removed. Idempotent: the result passes ``check(_:)`` unless `text` has a
    /// control character or is too long.
    public static func removingHiddenCharacters(_ text: String) -> (text: String, removed: [Unicode.Scalar]) {
        // 1. Bidirectional controls and invisible characters, wherever they stand; variation
        //    selectors that do not follow a character that is seen among what is kept (a
        //    selector after a joiner goes here, so step 2 never leaves one after a joiner).
        var removed: [Unicode.Scalar] = []
        var kept: [Unicode.Scalar] = []
        for u in text.unicodeScalars {
            switch classify(u.value) {
            case .hidden: removed.append(u)
            case .selector:
                if let before = kept.last, isSelectorBase(before.value) { kept.append(u) } else { removed.append(u) }
            default: kept.append(u)
            }
        }
        // 2. Joiners, judged among what is left: a joiner kept has neighbours that are neither
        //    joiners nor removed, so removing the others changes no kept joiner's context.
        var out = String.UnicodeScalarView()
        for k in kept.indices {
            let u = kept[k]
            if classify(u.value) == .joiner && !joinerAllowed(in: kept, at: k) {
                removed.append(u)
            } else {
                out.append(u)
            }
        }
        return removed.isEmpty ? (text, []) : (String(out), removed)
    }

    /// Each scalar of `bytes` (invalid UTF-8 read as U+FFFD) with what the rule says of it
    /// there: the one classification the escaping outputs use (TSV and JSON, quoted input in
    /// messages).
    /// The characters (grapheme clusters) of `text` from its start whose `size` adds up to at
    /// most `budget`, without trailing spaces: a label cut without splitting a letter from its
    /// marks or an emoji sequence (the pipeline's `--max-label-bytes`, the server's caller names).
    package static func prefix(of text: String, budget: Int, size: (Character) -> Int) -> String {
        var out = ""
        var used = 0
        for character in text {
            let n = size(character)
            if used + n > budget { break }
            out.append(character)
            used += n
        }
        while out.last == " " { out.removeLast() }
        return out
    }

    package static func forEachScalar(_ bytes: some Collection<UInt8>, _ body: (Unicode.Scalar, Problem.Kind?) -> Void) {
        forEachScalar(String(decoding: bytes, as: UTF8.self), body)
    }

    /// ``forEachScalar(_:_:)`` of a string.
    package static func forEachScalar(_ s: String, _ body: (Unicode.Scalar, Problem.Kind?) -> Void) {
        guard s.unicodeScalars.contains(where: { $0.value == 0x200C || $0.value == 0x200D }) else {
            // No joiner: only a selector depends on its neighbour, the scalar before it.
            var before: Unicode.Scalar? = nil
            for u in s.unicodeScalars {
                switch classify(u.value) {
                case .allowed, .joiner: body(u, nil)
                case .control: body(u, .control)
                case .hidden: body(u, .hidden)
                case .selector: body(u, before.map { isSelectorBase($0.value) } == true ? nil : .hidden)
                }
                before = u
            }
            return
        }
        let scalars = Array(s.unicodeScalars)
        for (k, u) in scalars.enumerated() {
            switch classify(u.value) {
            case .allowed: body(u, nil)
            case .control: body(u, .control)
            case .hidden: body(u, .hidden)
            case .joiner: body(u, joinerAllowed(in: scalars, at: k) ? nil : .hidden)
            case .selector: body(u, k > 0 && isSelectorBase(scalars[k - 1].value) ? nil : .hidden)
            }
        }
    }

    /// `bytes` as text to show on a screen that cannot show escapes (a CallKit label): as it is
    /// when it passes ``check(_:)`` (every label of a file that passes `verify`), otherwise
    /// without its control and hidden characters (invalid UTF-8 as U+FFFD).
    package static func shownString(_ bytes: UnsafeRawBufferPointer) -> String {
        if check(bytes) == nil { return String(decoding: bytes, as: UTF8.self) }
        var out = String.UnicodeScalarView()
        forEachScalar(bytes) { u, problem in if problem == nil { out.append(u) } }
        return String(out)
    }
}
