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
        var categoryCache: [[UInt8]: Category] = [:]
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

    private mutating func addTSVRow(_ line: UnsafeRawBufferPointer, categoryCache: inout [[UInt8]: Category]) throws(CallerIDError) {
        var tabs: [Int] = []
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
            throw CallerIDError(.invalidNumber, "number '\(String(decoding: numberField, as: UTF8.self))': \(error.message)")
        }
        guard validUTF8(label) else {
            throw CallerIDError(.invalidInput, "label is not valid UTF-8")
        }
        var category = Category.identify
        if tabs.count > 1 {
            let field = Array(UnsafeRawBufferPointer(rebasing: line[(tabs[1] + 1)...]))
            if !field.isEmpty {
                if let c = categoryCache[field] {
                    category = c
                } else {
                    category = try Category.named(String(decoding: field, as: UTF8.self))
                    categoryCache[field] = category
                }
            }
        }
        try add(number, utf8Label: label, category: category)
    }
}
