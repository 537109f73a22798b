package import CallerID
package import CallerIDPipeline

/// Buffered standard output: scripts read a lot of lines, one write per line is too slow.
package struct Output {
    private var buffer: [UInt8] = []
    /// Keeps everything written, never writes it (answers rendered before they are put in order).
    private let capturing: Bool

    /// - Parameter capacity: bytes reserved at first.
    package init(capturing: Bool = false, capacity: Int = 1 << 16) {
        self.capturing = capturing
        buffer.reserveCapacity(capacity)
    }

    /// Bytes buffered (all bytes written, when capturing).
    package var count: Int { buffer.count }

    package mutating func write(_ s: String) {
        buffer.append(contentsOf: s.utf8)
        if buffer.count >= 1 << 16 { flush() }
    }

    package mutating func write(bytes: UnsafeRawBufferPointer) {
        buffer.append(contentsOf: bytes)
        if buffer.count >= 1 << 16 { flush() }
    }

    /// Empties the buffer, keeping its memory.
    package mutating func removeAll() { buffer.removeAll(keepingCapacity: true) }

    /// Runs `body` on the bytes buffered (all bytes written, when capturing).
    package func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R { try buffer.withUnsafeBytes(body) }

    /// Writes bytes `range` of a capturing output.
    package mutating func write(from other: Output, _ range: Range<Int>) {
        other.buffer[range].withUnsafeBytes { write(bytes: $0) }
    }

    package mutating func flush() {
        guard !capturing, !buffer.isEmpty else { return }
        buffer.withUnsafeBytes { StandardStream.output.write($0) }
        buffer.removeAll(keepingCapacity: true)
    }
}

/// Writes one found entry: `NUMBER<TAB>LABEL<TAB>CATEGORY`, or its JSON object. The label
/// is escaped (see `writeTSVLabel`), so a hostile file can neither forge output lines nor
/// send terminal escape sequences.
package func writeEntry(_ view: EntryView, json: Bool, to out: inout Output) {
    writeEntry(number: view.number, label: view.labelBytes, category: view.category, json: json, to: &out)
}

/// An entry line of `dump` from its parts (a merged list's entry, which has no view). The JSON
/// has no `found`: every line is an entry (a lookup's answer, ``writeAnswer``, has one).
package func writeEntry(number: UInt64, label: UnsafeRawBufferPointer, category: Category, json: Bool, to out: inout Output) {
    if json {
        out.write("{\"number\":\(number),\"label\":\(jsonQuote(String(decoding: label, as: UTF8.self))),\"category\":\(jsonQuote(category.name)),\"action\":\"\(category.action)\"}\n")
    } else {
        out.write("\(number)\t")
        writeTSVLabel(label, to: &out)
        out.write("\t\(category.name)\n")
    }
}

/// A label in TSV output: written as is when the label rule allows it, otherwise escaped
/// (``tsvEscapedLabel(_:)``).
package func writeTSVLabel(_ bytes: UnsafeRawBufferPointer, to out: inout Output) {
    if let escaped = tsvEscapedLabel(bytes) { out.write(escaped) } else { out.write(bytes: bytes) }
}

/// How a lookup's answer is written.
package enum AnswerFormat: Sendable, Equatable {
    /// `NUMBER<TAB>LABEL<TAB>CATEGORY`, a range answer with a 4th column `range:FIRST-LAST`;
    /// `NUMBER<TAB>-` when not found.
    case text
    /// `{"number":…,"found":true,"label":…,"category":…,"action":…,"match":"entry"}`, or
    /// `"match":"range","range":[FIRST,LAST]`; `{"number":…,"found":false}` when not found.
    case json
    /// The label as a caller name a PBX can place in a SIP header (``CallerNameRule``),
    /// without a line end; nothing when not found (`GET /v1/cnam/NUMBER` of `lookup serve`).
    case callerName(CallerNameRule)
}

/// How an answer was found: an entry, a range of a database (a numbering plan), or a
/// blocking rule of a store's settings (`FIRST...LAST`).
package enum AnswerMatch: Equatable {
    case entry
    case range(UInt64, UInt64)
    case rule(UInt64, UInt64)

    package init(_ kind: MatchKind) {
        switch kind {
        case .entry: self = .entry
        case .range(let first, let last): self = .range(first, last)
        }
    }
}

/// A lookup answer: as ``writeEntry`` plus how it was found (``AnswerFormat``).
package func writeAnswer(_ view: EntryView, format: AnswerFormat, to out: inout Output) {
    writeAnswer(number: view.number, label: view.labelBytes, category: view.category, match: AnswerMatch(view.match),
                format: format, to: &out)
}

/// A lookup answer from its parts: the number, the label shown, the category whose action
/// the answer takes, how it was found.
package func writeAnswer(number: UInt64, label: UnsafeRawBufferPointer, category: Category, match: AnswerMatch,
                 format: AnswerFormat, to out: inout Output) {
    switch format {
    case .json:
        var how = "\"match\":\"entry\""
        switch match {
        case .entry: break
        case .range(let first, let last): how = "\"match\":\"range\",\"range\":[\(first),\(last)]"
        case .rule(let first, let last): how = "\"match\":\"rule\",\"rule\":[\(first),\(last)]"
        }
        out.write("{\"number\":\(number),\"found\":true,\"label\":\(jsonQuote(String(decoding: label, as: UTF8.self))),\"category\":\(jsonQuote(category.name)),\"action\":\"\(category.action)\",\(how)}\n")
    case .text:
        out.write("\(number)\t")
        writeTSVLabel(label, to: &out)
        out.write("\t\(category.name)")
        switch match {
        case .entry: break
        case .range(let first, let last): out.write("\trange:\(first)-\(last)")
        case .rule(let first, let last): out.write("\trule:\(first)-\(last)")
        }
        out.write("\n")
    case .callerName(let rule):
        out.write(rule.name(label: label, blocks: category.action == .block))
    }
}

