import CallerID

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
struct CallerNameRule: Sendable, Equatable {
    /// Put before the name of a number whose category blocks (`--cnam-block-prefix`).
    var blockedPrefix = "SPAM? "

    /// What is wrong with `text` as a prefix: a character the answer never holds; nil when
    /// it may be used as it is.
    static func prefixProblem(_ text: String) -> String? {
        for u in text.unicodeScalars {
            if u == "\"" || u == "\\" || u == "<" || u == ">" { return "'\(u)', which a SIP display name cannot hold as it is" }
            if LabelText.isControl(u.value) || (u.properties.isWhitespace && u != " ") { return "a control character or a line break" }
        }
        if let problem = LabelText.check(text), problem.kind == .hidden { return "a \(problem.what)" }
        return nil
    }

    /// The caller name of `label`: after ``blockedPrefix`` when `blocks` (the prefix without
    /// its trailing spaces when the label leaves nothing).
    func name(label: UnsafeRawBufferPointer, blocks: Bool) -> String {
        let text = Self.sipSafe(String(decoding: label, as: UTF8.self))
        guard blocks else { return text }
        return Self.sipSafe(blockedPrefix + text)
    }

    /// `text` with the characters a SIP display name cannot hold replaced, spaces collapsed and
    /// trimmed, hidden characters dropped (the type's description).
    static func sipSafe(_ text: String) -> String {
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
}
