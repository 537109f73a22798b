/// A rejected input row: where it is and why.
public struct RowError: Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var reason: String

    /// `file:line: reason`, the form compilers use, so editors can jump to it.
    public var description: String { "\(file):\(line): \(reason)" }
}

extension DatabaseBuilder {
    /// Adds the rows of a TSV file: `NUMBER<TAB>LABEL[<TAB>CATEGORY]`, UTF-8, one per line.
    ///
    /// NUMBER is parsed by ``PhoneNumber/parse(_:)``; CATEGORY defaults to `identify` and is
    /// resolved with ``Category/named(_:)``. Empty lines and lines starting with `#` are skipped.
    /// Bad rows are not added: each is passed to `onError`. The file is read in 1 MiB chunks.
    ///
    /// - Parameter path: a file, or `-` for standard input.
    /// - Returns: the number of rows added.
    /// - Throws: ``CallerIDError`` when the file cannot be read.
    public mutating func addTSV(path: String, onError: (RowError) -> Void) throws(CallerIDError) -> Int {
        var reader = try LineReader(path: path)
        defer { reader.close() }
        var added = 0
        var categoryCache = CategoryCache()
        try reader.forEachLine { (line, lineNumber) throws(CallerIDError) in
            if line.isEmpty || line[0] == UInt8(ascii: "#") { return }
            do throws(CallerIDError) {
                try addTSVRow(line, categoryCache: &categoryCache)
                added += 1
            } catch {
                onError(RowError(file: path, line: lineNumber, reason: error.message))
            }
        }
        return added
    }

    private mutating func addTSVRow(_ line: UnsafeRawBufferPointer, categoryCache: inout CategoryCache) throws(CallerIDError) {
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
        let number: UInt64
        do throws(CallerIDError) {
            number = try PhoneNumber.parse(bytes: numberField)
        } catch {
            throw CallerIDError(.invalidNumber, "number \(quotedInput(numberField)): \(error.message)")
        }
        guard validUTF8(label) else {
            throw CallerIDError(.invalidInput, "label is not valid UTF-8")
        }
        var category = Category.identify
        if tabs.count > 1 {
            let field = UnsafeRawBufferPointer(rebasing: line[(tabs[1] + 1)...])
            if !field.isEmpty {
                category = try categoryCache.category(field)
            }
        }
        try add(number, utf8Label: label, category: category)
    }
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

/// Category names seen so far; most files use a handful, so a linear scan that compares
/// bytes in place beats hashing a new array for every row.
private struct CategoryCache {
    private var names: [[UInt8]] = []
    private var categories: [Category] = []

    mutating func category(_ field: UnsafeRawBufferPointer) throws(CallerIDError) -> Category {
        for (i, name) in names.enumerated() where name.count == field.count && name.elementsEqual(field) {
            return categories[i]
        }
        let c = try Category.named(String(decoding: field, as: UTF8.self))
        names.append(Array(field))
        categories.append(c)
        return c
    }
}
