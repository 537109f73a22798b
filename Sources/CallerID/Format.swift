/// Constants of file format v1 (see docs/FORMAT.md, which is the normative description).
enum Format {
    /// "\x89CIDB\r\n\x1A": non-ASCII first byte and CR LF catch text-mode mangling, like PNG.
    static let magic: [UInt8] = [0x89, 0x43, 0x49, 0x44, 0x42, 0x0D, 0x0A, 0x1A]
    /// "CIDB-END": the last 8 bytes of every complete file.
    static let footerMagic: [UInt8] = Array("CIDB-END".utf8)
    static let major: UInt16 = 1
    static let minor: UInt16 = 0
    static let headerSize = 64
    static let footerSize = 32
    static let sectionEntrySize = 32
    static let descriptorSize = 32
    static let chunkEntrySize = 16
    static let sectionAlignment = 64
    /// Zero bytes after the packed key and value data so that every 8-byte read stays inside.
    static let packPadding = 8
    static let maxSections = 64
    static let maxNumber: UInt64 = 999_999_999_999_999
    static let maxBlockSize = 4096
    static let maxLabelsPerChunkShift = 12
    static let maxLabelBytes = 65_535
    static let maxKeyWidth = 57
    static let maxValueWidth = 32
    /// The LZ4 window: the label dictionary (raw hot chunks) is at most this long.
    static let maxDictionaryBytes = 65_536
    /// A decoded label chunk larger than this is refused (defends against decompression bombs).
    static let maxRawChunkBytes = 64 << 20
    /// LZ4 block decoding never produces more than 255 bytes per input byte (a match length
    /// grows by at most 255 per extension byte), so a larger claimed ratio is refused at open.
    static let maxLZ4Ratio = 255
    static let compressedFlag: UInt32 = 1 << 31

    enum Section: UInt32, CaseIterable, CustomStringConvertible {
        case categories = 1
        case blockKeys = 2
        case blockDescriptors = 3
        case keyData = 4
        case valueData = 5
        case valueCategories = 6
        case labelChunks = 7
        case labelData = 8

        var description: String {
            switch self {
            case .categories: "categories"
            case .blockKeys: "block index"
            case .blockDescriptors: "block descriptors"
            case .keyData: "key data"
            case .valueData: "value data"
            case .valueCategories: "value categories"
            case .labelChunks: "label chunk table"
            case .labelData: "label data"
            }
        }
    }

    enum ValueMode: UInt8 {
        /// Every entry of the block has the value `valueBase`; no data.
        case constant = 0
        /// `width`-bit offsets from `valueBase`, one per entry.
        case frameOfReference = 1
        /// u16 palette size P, P `width`-bit palette offsets from `valueBase`, then one
        /// ceil(log2 P)-bit palette index per entry starting at the next byte.
        case palette = 2
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
    mutating func storeLE(_ v: UInt64, at offset: Int) {
        Swift.withUnsafeBytes(of: v.littleEndian) { for i in 0..<8 { self[offset + i] = $0[i] } }
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

    mutating func appendBytes(_ b: [UInt8]) {
        alignToByte()
        bytes.append(contentsOf: b)
    }
}
