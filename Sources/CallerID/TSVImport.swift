/// A rejected input row: where it is and why.
public struct RowError: Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var reason: String

    /// `file:line: reason`, the form compilers use, so editors can jump to it.
    public var description: String { "\(file):\(line): \(reason)" }
}

extension DatabaseBuilder {
    /// The longest line ``addTSV(path:onError:)`` reads (1 MiB); a longer line is a bad row.
    public static let maxTSVLineBytes = 1 << 20

    /// Adds the rows of a TSV file: `NUMBER<TAB>LABEL[<TAB>CATEGORY]`, UTF-8, one per line.
    ///
    /// NUMBER is parsed by ``PhoneNumber/parse(_:)``; CATEGORY defaults to `identify` and is
    /// resolved with ``Category/named(_:)``. Empty lines and lines starting with `#` are skipped.
    /// Bad rows are not added: each is passed to `onError`. The file is read in 1 MiB chunks;
    /// a line longer than ``maxTSVLineBytes`` is a bad row, skipped without being held in
    /// memory, so an endless line cannot exhaust it.
    ///
    /// - Parameter path: a file, or `-` for standard input.
    /// - Returns: the number of rows added.
    /// - Throws: ``CallerIDError`` when the file cannot be read, or (`.invalidInput`) when its
    ///   first bytes show it is not UTF-8 text: UTF-16, or binary data such as `/dev/zero`.
    public mutating func addTSV(path: String, onError: (RowError) -> Void) throws(CallerIDError) -> Int {
        try addTSV(path: path, rules: PlainTSVRules(), onError: onError)
    }

    /// ``addTSV(path:onError:)`` with the number and label of each row read by `rules` instead
    /// of ``PhoneNumber/parse(_:)`` and as is: the `lookup` tool passes the pipeline's rules, so
    /// that a plain TSV build and a pipeline build take the same rows and store the same bytes.
    /// `onWarning` gets the rows the rules changed in a way worth a warning (hidden characters
    /// removed from the label), as `file:line: message`.
    package mutating func addTSV(path: String, rules: some TSVRowRules,
                                 onError: (RowError) -> Void, onWarning: (RowError) -> Void = { _ in }) throws(CallerIDError) -> Int {
        var reader = try LineReader(path: path)
        defer { reader.close() }
        var added = 0
        var categoryCache = CategoryCache()
        let limit = DatabaseBuilder.maxTSVLineBytes
        try reader.forEachLine(maxLineBytes: limit, firstBytes: { (bytes) throws(CallerIDError) in
            if let problem = NonTextInput.detect(bytes) {
                throw CallerIDError(.invalidInput, "\(path): \(problem.message(declaring: "--encoding"))")
            }
        }, overlong: { (lineNumber, length, _) in
            onError(RowError(file: path, line: lineNumber,
                             reason: "line of \(length) bytes is longer than the limit of \(limit) (1 MiB); skipped"))
        }) { (line, lineNumber) throws(CallerIDError) in
            if line.isEmpty || line[0] == UInt8(ascii: "#") { return }
            do throws(CallerIDError) {
                if let warning = try addTSVRow(line, categoryCache: &categoryCache, rules: rules) {
                    onWarning(RowError(file: path, line: lineNumber, reason: warning))
                }
                added += 1
            } catch {
                // A run that could not be spilled (memory limit) is the build's failure, not the row's.
                if error.code == .io { throw error }
                onError(RowError(file: path, line: lineNumber, reason: error.message))
            }
        }
        return added
    }

    /// Adds one row; returns the rules' warning about it, if any.
    private mutating func addTSVRow(_ line: UnsafeRawBufferPointer, categoryCache: inout CategoryCache,
                                    rules: some TSVRowRules) throws(CallerIDError) -> String? {
        // Up to three TAB positions, without allocating per row.
        var tabs = TabPositions()
        for i in 0..<line.count where line[i] == 0x09 {
            tabs.append(i)
            if tabs.count > 2 { break }
        }
        guard !tabs.isEmpty else {
            throw CallerIDError(.invalidInput, "no TAB: expected NUMBER<TAB>LABEL[<TAB>CATEGORY]")
        }
        guard tabs.count <= 2 else {
            throw CallerIDError(.invalidInput, "more than 3 columns: expected NUMBER<TAB>LABEL[<TAB>CATEGORY]")
        }
        let numberField = UnsafeRawBufferPointer(rebasing: line[0..<tabs[0]])
        let labelEnd = tabs.count > 1 ? tabs[1] : line.count
        let label = UnsafeRawBufferPointer(rebasing: line[(tabs[0] + 1)..<labelEnd])
        var number: UInt64 = 0
        var more: [UInt64] = []
        switch rules.readNumber(numberField) {
        case .one(let n): number = n
        case .several(let list): number = list[0]; more = Array(list.dropFirst())
        case .refused(let why): throw CallerIDError(.invalidNumber, why)
        }
        guard validUTF8(label) else {
            throw CallerIDError(.invalidInput, "label is not valid UTF-8")
        }
        var cleaned: [UInt8]? = nil
        var warning: String? = nil
        switch rules.cleanLabel(label) {
        case .asIs: break
        case .replaced(let bytes, let hiddenRemoved): cleaned = bytes; warning = hiddenRemoved
        case .refused(let why): throw CallerIDError(.invalidInput, why)
        }
        var category = Category.identify
        if tabs.count > 1 {
            let field = UnsafeRawBufferPointer(rebasing: line[(tabs[1] + 1)...])
            if !field.isEmpty {
                category = try categoryCache.category(field)
            }
        }
        if let cleaned {
            try cleaned.withUnsafeBytes { bytes in
                Result { () throws(CallerIDError) in
                    for n in [number] + more {
                        try add(n, utf8Label: bytes, category: category)
                        if warning != nil { countHiddenCharactersRemoved() }
                    }
                }
            }.get()
        } else {
            try add(number, utf8Label: label, category: category)
            for n in more { try add(n, utf8Label: label, category: category) }
        }
        return warning
    }
}

/// What a number field holds, as ``TSVRowRules`` read it.
package enum TSVNumbers {
    case one(UInt64)
    /// A cell with several numbers (`045 2030367 / 6345-985-0418`): one entry each.
    case several([UInt64])
    /// Why the field is refused (the bad row's reason, quoting the field).
    case refused(String)
}

/// What becomes of a label, as ``TSVRowRules`` clean it.
package enum TSVLabel {
    case asIs
    /// The label to store instead, and the warning when hidden characters were removed from it
    /// (the builder counts the records in ``BuildSummary/hiddenCharactersRemoved``).
    case replaced([UInt8], hiddenRemoved: String?)
    case refused(String)
}

/// How a TSV row's number and label are read when the caller has rules of its own (the `lookup`
/// tool passes the build pipeline's: its normalizer and its label cleaning). `package` access.
/// A protocol, not closures: the row loop calls it millions of times, and a closure's context
/// is retained and released at every call.
package protocol TSVRowRules {
    func readNumber(_ field: UnsafeRawBufferPointer) -> TSVNumbers
    /// `label` is valid UTF-8.
    func cleanLabel(_ label: UnsafeRawBufferPointer) -> TSVLabel
}

/// The library's own reading: ``PhoneNumber/parse(_:)`` digits, labels as they are.
package struct PlainTSVRules: TSVRowRules {
    package init() {}
    package func readNumber(_ field: UnsafeRawBufferPointer) -> TSVNumbers {
        do throws(CallerIDError) {
            return .one(try PhoneNumber.parse(bytes: field))
        } catch {
            return .refused("number \(quotedInput(field)): \(error.message)")
        }
    }
    package func cleanLabel(_ label: UnsafeRawBufferPointer) -> TSVLabel { .asIs }
}

/// The first three TAB positions of a row.
private struct TabPositions {
    private var p = (0, 0, 0)
    private(set) var count = 0
    var isEmpty: Bool { count == 0 }

    mutating func append(_ i: Int) {
        switch count {
        case 0: p.0 = i
        case 1: p.1 = i
        default: p.2 = i
        }
        count += 1
    }

    subscript(_ k: Int) -> Int { k == 0 ? p.0 : k == 1 ? p.1 : p.2 }
}

/// Category names seen so far. Most files use a handful: the first ``scanned`` are compared in
/// place, with no hashing and no allocation per row; any further name is found in a dictionary,
/// so a file of 100,000 distinct names costs one lookup per row, not a scan of all the others.
private struct CategoryCache {
    static let scanned = 8
    private var names: [[UInt8]] = []
    private var categories: [Category] = []
    private var others: [[UInt8]: Category] = [:]

    mutating func category(_ field: UnsafeRawBufferPointer) throws(CallerIDError) -> Category {
        for (i, name) in names.enumerated() where name.count == field.count && name.elementsEqual(field) {
            return categories[i]
        }
        let key = Array(field)
        if let c = others[key] { return c }
        let c = try Category.named(String(decoding: field, as: UTF8.self))
        if names.count < CategoryCache.scanned {
            names.append(key)
            categories.append(c)
        } else {
            others[key] = c
        }
        return c
    }
}

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
