// Format 2.0: the footer, the last 32 bytes of a file (docs/FORMAT.md §4.2). Its writer and its
// reader, beside the drawing of its bytes (integers little-endian):
//
//   offset  size  field            value
//   ------  ----  ---------------  -------------------------------------------------------------
//        0     8  fileSize         the file's length (equals the header's)
//        8     8  tableChecksum    XXH3-64 of the section table's bytes
//       16     8  entryCount       equals the header's
//       24     8  magic            43 49 44 42 2D 45 4E 44 ("CIDB-END"; checked first: a
//                                  mismatch usually means a truncated file)

/// The footer (docs/FORMAT.md §4.2).
enum Footer {
    /// Where each field starts (the drawing above).
    enum Offset {
        static let fileSize = 0
        static let tableChecksum = 8
        static let entryCount = 16
        static let magic = 24
    }

    // MARK: Writer

    /// The 32 footer bytes.
    static func encode(fileSize: Int, tableChecksum: UInt64, entryCount: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.appendLE(UInt64(fileSize))
        out.appendLE(tableChecksum)
        out.appendLE(UInt64(entryCount))
        assert(out.count == Offset.magic)
        out.append(contentsOf: Format.footerMagic)
        assert(out.count == Format.footerSize)
        return out
    }

    // MARK: Reader

    /// Checks the footer of the file `b` (at least header and footer long) against `header`:
    /// the magic, then the file size and the entry count. Returns the table checksum it holds.
    static func check(_ b: ByteView, header: Header, path: String) throws(CallerIDError) -> UInt64 {
        let footer = b.count - Format.footerSize
        guard Array(b.bytes(footer + Offset.magic, Format.footerMagic.count)) == Format.footerMagic else {
            throw CallerIDError.corrupt(path, "footer magic missing at offset \(footer + Offset.magic) (truncated?)")
        }
        guard b.u64(footer + Offset.fileSize) == UInt64(b.count), b.u64(footer + Offset.entryCount) == header.entryCount else {
            throw CallerIDError.corrupt(path, "footer disagrees with the header")
        }
        return b.u64(footer + Offset.tableChecksum)
    }
}
