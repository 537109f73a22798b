// Formats 2.0, 3.0 and 3.1: the header, the first 64 bytes of a file (docs/FORMAT.md §3). Its writer and its
// reader, beside the drawing of its bytes (all integers little-endian):
//
//   offset  size  field            value
//   ------  ----  ---------------  -------------------------------------------------------------
//        0     8  magic            89 43 49 44 42 0D 0A 1A ("\x89CIDB\r\n\x1A")
//        8     2  major            2, or 3 when a block record uses key codec 2 (checked right
//                                  after the magic: another major is "unsupported version",
//                                  not damage)
//       10     2  minor            0, or 1 (major 3 only) when the cold labels are LZ4 groups
//                                  (a minor the reader does not know is "unsupported version")
//       12     4  headerSize       64
//       16     8  fileSize         the file's length, exactly
//       24     8  entryCount       entries (distinct numbers)
//       32     4  blockCount       block records
//       36     4  valueCount       values (distinct label and category pairs)
//       40     4  hotCount         values 0 ..< hotCount have raw (hot) labels
//       44     1  syncShift        a value sync point every 2^syncShift entries of a block
//       45     1  summaryShift     the summary holds every 2^summaryShift-th block's first key
//       46     2  blockSize        the most entries of any block record, 1 … 1,024
//       48     8  tableOffset      absolute offset of the section table
//       56     8  headerChecksum   XXH3-64 of bytes 0 … 55

/// The header's fields (docs/FORMAT.md §3), written by ``encoded`` and read, checked against
/// each other and the file's length, by ``init(_:path:)``.
struct Header {
    /// 2, or 3 when some block record uses key codec 2 (docs/FORMAT.md §9).
    var major: UInt16
    /// 1 when the cold labels are LZ4 groups (major 3), else 0.
    var minor: UInt16
    var fileSize: UInt64
    var entryCount: UInt64
    var blockCount: Int
    var valueCount: Int
    var hotCount: Int
    var syncShift: Int
    var summaryShift: Int
    var blockSize: Int
    var tableOffset: UInt64

    /// Where each field starts (the drawing above).
    enum Offset {
        static let magic = 0
        static let major = 8
        static let minor = 10
        static let headerSize = 12
        static let fileSize = 16
        static let entryCount = 24
        static let blockCount = 32
        static let valueCount = 36
        static let hotCount = 40
        static let syncShift = 44
        static let summaryShift = 45
        static let blockSize = 46
        static let tableOffset = 48
        static let headerChecksum = 56
    }

    init(major: UInt16, minor: UInt16, fileSize: UInt64, entryCount: UInt64, blockCount: Int, valueCount: Int, hotCount: Int, syncShift: Int,
         summaryShift: Int, blockSize: Int, tableOffset: UInt64) {
        self.major = major
        self.minor = minor
        self.fileSize = fileSize
        self.entryCount = entryCount
        self.blockCount = blockCount
        self.valueCount = valueCount
        self.hotCount = hotCount
        self.syncShift = syncShift
        self.summaryShift = summaryShift
        self.blockSize = blockSize
        self.tableOffset = tableOffset
    }

    // MARK: Writer

    /// The 64 header bytes, checksum included.
    var encoded: [UInt8] {
        var out: [UInt8] = Format.magic
        out.appendLE(major)
        out.appendLE(minor)
        out.appendLE(UInt32(Format.headerSize))
        out.appendLE(fileSize)
        out.appendLE(entryCount)
        out.appendLE(UInt32(blockCount))
        out.appendLE(UInt32(valueCount))
        out.appendLE(UInt32(hotCount))
        out.append(UInt8(syncShift))
        out.append(UInt8(summaryShift))
        out.appendLE(UInt16(blockSize))
        out.appendLE(tableOffset)
        assert(out.count == Offset.headerChecksum)
        out.appendLE(Codec.xxh3(out))
        assert(out.count == Format.headerSize)
        return out
    }

    // MARK: Reader

    /// The header of the file `b`, checked in the order of docs/FORMAT.md §3: length ≥ 12,
    /// magic, major, length ≥ 96, checksum, headerSize, fileSize, blockSize, the shifts, the
    /// counts of blocks and entries, the value counts. Reads only inside `b`.
    ///
    /// - Throws: *unsupported version* for another major version or a minor version this reader
    ///   does not know, else *corrupt* naming the field.
    init(_ b: ByteView, path: String) throws(CallerIDError) {
        func bad(_ what: String) -> CallerIDError { CallerIDError.corrupt(path, what) }
        guard b.count >= Offset.minor + 2 else {
            throw bad(b.count == 0 ? "the file is empty" : "the file is \(b.count) bytes, too short for a header and footer (truncated?)")
        }
        guard Array(b.bytes(Offset.magic, Format.magic.count)) == Format.magic else {
            throw bad("bad magic: not a CallerID database")
        }
        major = b.u16(Offset.major)
        guard major >= Format.majorWithoutRunBitmap, major <= Format.major else {
            let hint = major < Format.majorWithoutRunBitmap ? " — rebuild it with `lookup build`"
                : " — this reader reads versions \(Format.majorWithoutRunBitmap).x and \(Format.major).x; update CallerID"
            throw CallerIDError(.unsupportedVersion, "\(path): unsupported version \(major).\(b.u16(Offset.minor))\(hint)")
        }
        // A minor version marks a change that a reader of the same major cannot read right
        // (FORMAT.md §9): one this reader does not know is refused at open, as a newer major is.
        minor = b.u16(Offset.minor)
        guard minor <= Format.newestMinor(of: major) else {
            throw CallerIDError(.unsupportedVersion, "\(path): unsupported version \(major).\(minor) — this reader reads versions "
                                + "\(Header.knownVersions); update CallerID")
        }
        guard b.count >= Format.headerSize + Format.footerSize else {
            throw bad("the file is \(b.count) bytes, too short for a header and footer (truncated?)")
        }
        guard Codec.xxh3(b.bytes(0, Offset.headerChecksum)) == b.u64(Offset.headerChecksum) else {
            throw bad("header checksum mismatch (bytes 0-\(Offset.headerChecksum - 1))")
        }
        guard b.u32(Offset.headerSize) == UInt32(Format.headerSize) else { throw bad("header size field is \(b.u32(Offset.headerSize))") }
        fileSize = b.u64(Offset.fileSize)
        guard fileSize == UInt64(b.count) else {
            throw bad("the header says \(fileSize) bytes but the file has \(b.count) (truncated or extended)")
        }
        entryCount = b.u64(Offset.entryCount)
        blockCount = Int(b.u32(Offset.blockCount))
        valueCount = Int(b.u32(Offset.valueCount))
        hotCount = Int(b.u32(Offset.hotCount))
        syncShift = Int(b.u8(Offset.syncShift))
        summaryShift = Int(b.u8(Offset.summaryShift))
        blockSize = Int(b.u16(Offset.blockSize))
        tableOffset = b.u64(Offset.tableOffset)
        guard (1...Format.maxBlockEntries).contains(blockSize) else { throw bad("block size \(blockSize) outside 1...\(Format.maxBlockEntries)") }
        guard syncShift <= Format.maxSyncShift, summaryShift <= Format.maxSummaryShift else {
            throw bad("sync shift \(syncShift) or summary shift \(summaryShift) out of range")
        }
        // Every block costs 12 bytes of index and 8 of record header: a file of n bytes holds
        // fewer than n / 20 blocks, and each block 1…blockSize entries.
        guard blockCount <= b.count / 20, UInt64(blockCount) <= entryCount, entryCount <= UInt64(blockCount) * UInt64(blockSize) else {
            throw bad("entry count \(entryCount) and block count \(blockCount) are impossible for a \(b.count)-byte file with blocks of \(blockSize)")
        }
        guard hotCount <= valueCount, UInt64(valueCount) <= entryCount, (entryCount == 0) == (valueCount == 0) else {
            throw bad("\(valueCount) values (\(hotCount) hot) for \(entryCount) entries")
        }
    }

    /// "major.minor" of the file `b` (whose header was checked at open).
    static func version(_ b: ByteView) -> String { "\(b.u16(Offset.major)).\(b.u16(Offset.minor))" }

    /// "major.minor" of a file this writer writes with `major` and `minor`.
    static func version(major: UInt16, minor: UInt16) -> String { "\(major).\(minor)" }

    /// The versions this reader reads, for messages: "2.0, 3.0 and 3.1".
    static var knownVersions: String {
        var versions = ["\(Format.majorWithoutRunBitmap).0"]
        for m in 0...Format.minor { versions.append("\(Format.major).\(m)") }
        return versions.dropLast().joined(separator: ", ") + " and " + versions.last!
    }
}
