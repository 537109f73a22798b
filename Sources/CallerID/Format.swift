/// Constants of file formats 2.0, 3.0 and 3.1 (see docs/FORMAT.md, which is the normative description).
enum Format {
    /// "\x89CIDB\r\n\x1A": non-ASCII first byte and CR LF catch text-mode mangling, like PNG.
    /// Shared by every major version; the version field after it says which layout follows.
    static let magic: [UInt8] = [0x89, 0x43, 0x49, 0x44, 0x42, 0x0D, 0x0A, 0x1A]
    /// "CIDB-END": the last 8 bytes of every complete file.
    static let footerMagic: [UInt8] = Array("CIDB-END".utf8)
    /// The newest major version: a file with a block of key codec 2 (``keyCodecRunBitmap``),
    /// which a 2.0 reader refuses as an unsupported version (docs/FORMAT.md §9).
    static let major: UInt16 = 3
    /// The major version of a file without key codec 2: the writer writes it whenever it can,
    /// so such files stay readable by 2.0 readers and byte for byte what 2.0 wrote.
    static let majorWithoutRunBitmap: UInt16 = 2
    /// The newest minor version of major 3: 1, a file whose cold labels are LZ4 groups
    /// (sections 13 and 14 in place of 9, 10 and 11). Major 2 knows minor 0 only.
    static let minor: UInt16 = 1
    /// The minor version of a file with LZ4 cold labels (major 3 always: a 2.0 reader, which
    /// checks only the major, then refuses it as an unsupported version).
    static let minorLZ4Labels: UInt16 = 1

    /// The newest minor version a reader knows of `major` (2 or 3).
    static func newestMinor(of major: UInt16) -> UInt16 { major >= 3 ? minor : 0 }
    static let headerSize = 64
    static let footerSize = 32
    static let sectionEntrySize = 32
    static let sectionAlignment = 8
    static let maxSections = 64
    static let maxNumber: UInt64 = 999_999_999_999_999
    /// Entries of one block record (the writer's block size is at most this).
    static let maxBlockEntries = 1024
    /// A value sync point every 2^syncShift entries of a block, syncShift ≤ this.
    static let maxSyncShift = 10
    /// The summary holds the first key of every 2^summaryShift-th block, summaryShift ≤ this
    /// (the writer uses 4): a lookup counts at most 2^maxSummaryShift index entries.
    static let maxSummaryShift = 6
    /// Cold labels are indexed in groups of 2^coldGroupShift.
    static let coldGroupShift = 3
    static let maxLabelBytes = 65_535
    /// LZ4 cold labels (version 3.1): groups of at most 2^lz4MaxGroupShift labels, each group
    /// decoding to at most lz4MaxGroupBytes, against a dictionary of the last lz4DictionaryBytes
    /// of the hot labels (LZ4's window).
    static let lz4MaxGroupShift = 6
    static let lz4MaxGroupBytes = 65_536
    static let lz4DictionaryBytes = 65_536
    /// Bytes of the LZ4 cold label index's fixed header: u32 singles, u8 group shift, 3 zero bytes.
    static let lz4IndexHeaderSize = 8
    /// The writer's LZ4 group (2^3 = 8 labels) and LZ4HC level.
    static let lz4GroupShift = 3
    static let lz4Level = 12
    /// The longest value code; the writer limits code lengths to it.
    static let maxCodeLength = 26
    /// Bits resolved by the value decoder's first-level table (built at open).
    static let fastBits = 12
    /// Zero bytes after the last block record: every 8-byte load inside a record stays in the section.
    static let recordPadding = 8
    /// Block index entry: u64 first key, u32 record offset.
    static let indexEntrySize = 12
    /// Bytes of a block record's fixed header.
    static let recordHeaderSize = 8
    /// Key codecs of a block record (byte 3 of its header).
    static let keyCodecEliasFano: UInt8 = 0
    static let keyCodecRun: UInt8 = 1
    /// A bitmap of the keys one above the key before them, and Elias–Fano over the others
    /// (major version 3 only).
    static let keyCodecRunBitmap: UInt8 = 2

    /// The highest key codec a file of major version `major` (2 or 3) may use.
    static func maxKeyCodec(major: UInt16) -> UInt8 { major >= 3 ? keyCodecRunBitmap : keyCodecRun }

    /// The optional ranges section (docs/FORMAT.md 5.12). Not a case of ``Section``: the
    /// eleven kinds there are required, this one is not.
    static let rangesKind: UInt32 = 12
    static let rangesName = "ranges"
    /// Bytes of the ranges section's fixed header: counts, 9 u32 part lengths, the label part
    /// count, the span table.
    static let rangesHeaderSize = 88
    /// Entries of the ranges section's span table (u16 decimal codes at header offset 56).
    static let rangeSpanTableSize = 16
    /// Parts of the ranges section, in order, after its header.
    static let rangesPartCount = 9
    /// The writer's ranges per block (each block but the last holds exactly this many).
    static let defaultRangeBlockSize = 4
    /// Blocks per group of the ranges index (a lookup bisects the groups, then scans one
    /// group's blocks).
    static let rangeGroupBlocks = 16
    /// Bytes of a group entry of the ranges index: u64 first number, u32 record offset.
    static let rangeGroupEntrySize = 12
    /// The writer keeps at most this many bytes of range labels raw (hot).
    static let rangeHotLabelBytes = 4 * 1024
    /// The name of a section kind for messages and `lookup info`.
    static func sectionName(_ kind: UInt32) -> String {
        if let s = Section(rawValue: kind) { return s.description }
        return kind == rangesKind ? rangesName : "kind \(kind)"
    }

    enum Section: UInt32, CaseIterable, CustomStringConvertible {
        case categories = 1
        case summary = 2
        case blockIndex = 3
        case blocks = 4
        case codeLengths = 5
        case valueCategories = 6
        case hotOffsets = 7
        case hotLabels = 8
        case symbolTable = 9
        case coldIndex = 10
        case coldLabels = 11
        /// Version 3.1 with LZ4 cold labels: these two instead of 9, 10 and 11.
        case lz4ColdIndex = 13
        case lz4ColdLabels = 14

        var description: String {
            switch self {
            case .categories: "categories"
            case .summary: "block summary"
            case .blockIndex: "block index"
            case .blocks: "block records"
            case .codeLengths: "value code lengths"
            case .valueCategories: "value categories"
            case .hotOffsets: "hot label offsets"
            case .hotLabels: "hot labels"
            case .symbolTable: "label symbol table"
            case .coldIndex: "cold label index"
            case .coldLabels: "cold labels"
            case .lz4ColdIndex: "LZ4 cold label index"
            case .lz4ColdLabels: "LZ4 cold labels"
            }
        }
    }

    /// Number of bits needed to store `v` (0 for 0).
    @inline(__always)
    static func bitWidth(_ v: UInt64) -> Int { v == 0 ? 0 : 64 - v.leadingZeroBitCount }
}

/// Little-endian byte appends for the writer.
extension Array where Element == UInt8 {
    mutating func appendLE(_ v: UInt16) { Swift.withUnsafeBytes(of: v.littleEndian) { append(contentsOf: $0) } }
    mutating func appendLE(_ v: UInt32) { Swift.withUnsafeBytes(of: v.littleEndian) { append(contentsOf: $0) } }
    mutating func appendLE(_ v: UInt64) { Swift.withUnsafeBytes(of: v.littleEndian) { append(contentsOf: $0) } }
    mutating func padZero(toMultipleOf alignment: Int) {
        let r = count % alignment
        if r != 0 { append(contentsOf: repeatElement(0, count: alignment - r)) }
    }
}

/// LSB-first bit packer used for key and value columns.
struct BitWriter {
    private(set) var bytes: [UInt8] = []
    private var acc: UInt64 = 0
    private var nbits = 0

    /// Appends the low `width` bits of `value` (width ≤ 57); higher bits are dropped.
    mutating func write(_ value: UInt64, width: Int) {
        guard width > 0 else { return }
        acc |= (value & ((~0 as UInt64) >> UInt64(64 - width))) << UInt64(nbits)
        nbits += width
        while nbits >= 8 {
            bytes.append(UInt8(truncatingIfNeeded: acc))
            acc >>= 8
            nbits -= 8
        }
    }

    /// Pads to a byte boundary; returns the byte offset where the next field starts.
    @discardableResult
    mutating func alignToByte() -> Int {
        if nbits > 0 {
            bytes.append(UInt8(truncatingIfNeeded: acc))
            acc = 0
            nbits = 0
        }
        return bytes.count
    }
}
