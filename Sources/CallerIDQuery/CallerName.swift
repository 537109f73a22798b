import Foundation
package import CallerID

/// How `GET /v1/cnam/NUMBER` of `lookup serve` makes a caller name of a label (docs/SERVE.md,
/// "Caller names for PBXs"). A PBX puts the answer in the caller's name as it is, and Kamailio,
/// Asterisk and the like place that name between the quotes of a SIP display name
/// (`From: "NAME" <sip:…>`, `P-Asserted-Identity`), so the answer holds nothing that could end
/// the quotes or the header, whatever the label holds:
/// - `"` becomes `'`, `\` becomes `/`, `<` becomes `(` and `>` becomes `)` (no quoted-string
///   end or escape, and no `<URI>` where a PBX writes the name without quotes);
/// - a control character, a line break or other white space becomes a space, runs of spaces
///   become one, and none leads or ends the name;
/// - hidden characters (``LabelText``: bidirectional controls, invisible characters) are
///   dropped; invalid UTF-8 becomes U+FFFD.
///
/// What is left is RFC 3261's `qdtext`: printable ASCII but `"` and `\`, spaces and UTF-8.
package struct CallerNameRule: Sendable, Equatable {
    /// Put before the name of a number whose category blocks (`--cnam-block-prefix`).
    package init() {}

    package var blockedPrefix = "SPAM? "
    /// The most characters an answer holds, the prefix included (`--cnam-max-chars`), counted
    /// as Unicode scalars and cut only between grapheme clusters (a letter and its marks, an
    /// emoji sequence, go whole or not at all), so an answer is at most 4 bytes a character and
    /// never ends inside a UTF-8 sequence.
    package var maxCharacters = CallerNameRule.defaultMaxCharacters
    /// Letters written in Latin ASCII (`?charset=ascii`: Cyrillic, Greek, CJK… transliterated
    /// by ICU's `Any-Latin; Latin-ASCII`, what is left outside ASCII as `?`), for phones that
    /// cannot show other scripts.
    package var ascii = false
    /// The classic caller-name limit of the telephone network: 15 characters.
    package static let defaultMaxCharacters = 15
    /// `--cnam-max-chars` at most: 4 KiB of UTF-8, half the 8 KiB SIP proxies take in a header.
    package static let maxMaxCharacters = 1024

    /// The prefix as a label must begin to look blocked: without its trailing spaces (`SPAM?`,
    /// what a dial plan compares), SIP-safe.
    package var blockedMark: String { Self.sipSafe(blockedPrefix) }

    /// What is wrong with `text` as a prefix: a character the answer never holds; nil when
    /// it may be used as it is.
    package static func prefixProblem(_ text: String) -> String? {
        for u in text.unicodeScalars {
            if u == "\"" || u == "\\" || u == "<" || u == ">" { return "'\(u)', which a SIP display name cannot hold as it is" }
            if LabelText.isControl(u.value) || (u.properties.isWhitespace && u != " ") { return "a control character or a line break" }
        }
        if let problem = LabelText.check(text), problem.kind == .hidden { return "a \(problem.what)" }
        return nil
    }

    /// The caller name of `label`, cut to ``maxCharacters``: after ``blockedPrefix`` when
    /// `blocks` (the prefix without its trailing spaces when the label leaves nothing).
    ///
    /// Only a blocking category's answer begins with ``blockedMark``: a blocking label that
    /// already begins with it (byte for byte, as a dial plan compares) is not given the prefix
    /// again (`SPAM? x`, not `SPAM? SPAM? x`), and a label of a category that does not block
    /// loses it and the spaces after it, however often it begins with it (`SPAM? Pizza Hut`
    /// of an identifying entry is `Pizza Hut`).
    package func name(label: UnsafeRawBufferPointer, blocks: Bool) -> String {
        var text = Self.sipSafe(String(decoding: label, as: UTF8.self))
        let mark = blockedMark
        if !mark.isEmpty {
            if blocks {
                if !text.utf8.starts(with: mark.utf8) { text = Self.sipSafe(blockedPrefix + text) }
            } else {
                while text.utf8.starts(with: mark.utf8) {
                    text = Self.sipSafe(String(decoding: text.utf8.dropFirst(mark.utf8.count), as: UTF8.self))
                }
            }
        }
        if ascii { text = Self.sipSafe(Self.asciiOnly(text)) }
        return Self.cut(text, to: maxCharacters)
    }

    /// `text` transliterated to Latin ASCII; a character without a transliteration becomes `?`.
    package static func asciiOnly(_ text: String) -> String {
        if text.utf8.allSatisfy({ $0 < 0x80 }) { return text }
        let latin = text.applyingTransform(StringTransform("Any-Latin; Latin-ASCII"), reverse: false) ?? text
        var out = String.UnicodeScalarView()
        for u in latin.unicodeScalars { out.append(u.isASCII ? u : "?") }
        return String(out)
    }

    /// `text` with the characters a SIP display name cannot hold replaced, spaces collapsed and
    /// trimmed, hidden characters dropped (the type's description).
    package static func sipSafe(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        var pendingSpace = false
        LabelText.forEachScalar(text) { u, problem in
            if problem == .hidden { return }
            if problem == .control || u.properties.isWhitespace {
                pendingSpace = !out.isEmpty
                return
            }
            if pendingSpace { out.append(" ") }
            pendingSpace = false
            switch u {
            case "\"": out.append("'")
            case "\\": out.append("/")
            case "<": out.append("(")
            case ">": out.append(")")
            default: out.append(u)
            }
        }
        return String(out)
    }

    /// The grapheme clusters of `text` from its start that hold at most `limit` scalars in all,
    /// without trailing spaces.
    package static func cut(_ text: String, to limit: Int) -> String {
        guard text.unicodeScalars.count > limit else { return text }
        return LabelText.prefix(of: text, budget: limit) { $0.unicodeScalars.count }
    }
}
