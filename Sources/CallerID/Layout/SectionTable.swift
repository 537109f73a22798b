// Format 2.0: the section table (docs/FORMAT.md §4.1), `sectionCount` entries of 32 bytes at
// `tableOffset`, right before the footer (so sectionCount = (fileSize − 32 − tableOffset) / 32,
// not stored). Its writer and its reader, beside the drawing of one entry (little-endian):
//
//   offset  size  field     value
//   ------  ----  --------  ---------------------------------------------------------------------
//        0     4  kind      section kind (FORMAT.md §5.0: 1 … 11 required, 12 ranges; others skipped)
//        4     4  reserved  0
//        8     8  offset    absolute offset of the section's first byte
//       16     8  length    the section's length in bytes (may be 0)
//       24     8  checksum  XXH3-64 of the section's bytes (checked by verify only)

/// The section table: the known sections, every section's place and checksum, the optional
/// ranges section, and the table's offset.
struct SectionTable {
    var known: [(section: Format.Section, view: ByteView)]
    var all: [(kind: UInt32, offset: Int, length: Int, checksum: UInt64)]
    var ranges: ByteView?
    var offset: Int

    /// Where each field of an entry starts (the drawing above).
    enum Offset {
        static let kind = 0
        static let reserved = 4
        static let offset = 8
        static let length = 16
        static let checksum = 24
    }

    // MARK: Writer

    /// Appends one 32-byte entry to `table`.
    static func appendEntry(kind: UInt32, offset: Int, length: Int, checksum: UInt64, to table: inout [UInt8]) {
        table.appendLE(kind)
        table.appendLE(UInt32(0))
        table.appendLE(UInt64(offset))
        table.appendLE(UInt64(length))
        table.appendLE(checksum)
    }

    // MARK: Reader

    /// The footer (``Footer/check(_:header:path:)``) and the section table of the file `b`,
    /// with the checks of docs/FORMAT.md §4 in its order: the table's position, its size, its
    /// checksum, each entry inside the data area with reserved 0, no kind 1 … 12 twice, no
    /// overlap. Reads only inside `b`.
    init(_ b: ByteView, header: Header, path: String) throws(CallerIDError) {
        func bad(_ what: String) -> CallerIDError { CallerIDError.corrupt(path, what) }
        let tableChecksum = try Footer.check(b, header: header, path: path)
        let tableOffset = header.tableOffset
        let footer = b.count - Format.footerSize
        guard tableOffset >= UInt64(Format.headerSize), tableOffset <= UInt64(footer),
              (UInt64(footer) - tableOffset) % UInt64(Format.sectionEntrySize) == 0 else {
            throw bad("section table offset \(tableOffset) does not end at the footer")
        }
        let table = Int(tableOffset)
        let sectionCount = (footer - table) / Format.sectionEntrySize
        guard (1...Format.maxSections).contains(sectionCount) else { throw bad("section count \(sectionCount) outside 1...\(Format.maxSections)") }
        guard Codec.xxh3(b.bytes(table, sectionCount * Format.sectionEntrySize)) == tableChecksum else {
            throw bad("section table checksum mismatch (offset \(table))")
        }
        // A list, not a dictionary: the first hashed collection a process makes costs a search
        // of every protocol conformance in the binary, and opening a file is on `lookup`'s
        // start-up path. There are at most `Format.maxSections` sections.
        var found: [(section: Format.Section, view: ByteView)] = []
        var list: [(kind: UInt32, offset: Int, length: Int, checksum: UInt64)] = []
        var rangesView: ByteView? = nil
        for i in 0..<sectionCount {
            let e = table + i * Format.sectionEntrySize
            let kind = b.u32(e + Offset.kind), offset = b.u64(e + Offset.offset), length = b.u64(e + Offset.length)
            guard b.u32(e + Offset.reserved) == 0, offset >= UInt64(Format.headerSize), offset <= tableOffset,
                  length <= tableOffset - offset, let view = b.slice(offset, length) else {
                throw bad("section \(i) (kind \(kind)) lies outside the data area: offset \(offset), length \(length)")
            }
            if let known = Format.Section(rawValue: kind) {
                guard !found.contains(where: { $0.section == known }) else { throw bad("section '\(known)' appears twice") }
                found.append((known, view))
            } else if kind == Format.rangesKind {
                guard rangesView == nil else { throw bad("section '\(Format.rangesName)' appears twice") }
                rangesView = view
            }
            list.append((kind, Int(offset), Int(length), b.u64(e + Offset.checksum)))
        }
        // Empty sections sort before a section at the same offset, so they never "overlap".
        let byOffset = list.sorted { ($0.offset, $0.length) < ($1.offset, $1.length) }
        for (x, y) in zip(byOffset, byOffset.dropFirst()) where x.offset + x.length > y.offset {
            throw bad("sections of kinds \(x.kind) and \(y.kind) overlap at offset \(y.offset)")
        }
        known = found
        all = list
        ranges = rangesView
        offset = table
    }

    /// The view of required section `s`; *corrupt* when the table does not list it.
    func section(_ s: Format.Section, path: String) throws(CallerIDError) -> ByteView {
        guard let v = known.first(where: { $0.section == s }) else { throw CallerIDError.corrupt(path, "section '\(s)' is missing") }
        return v.view
    }

    /// *corrupt* unless required section `s` is `expected` bytes long (docs/FORMAT.md §5.0).
    static func checkLength(_ s: Format.Section, _ view: ByteView, _ expected: Int, path: String) throws(CallerIDError) {
        guard view.count == expected else { throw CallerIDError.corrupt(path, "section '\(s)' is \(view.count) bytes; it must be \(expected)") }
    }
}
