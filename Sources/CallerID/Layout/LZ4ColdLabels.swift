// Format 3.1: the LZ4 cold labels, sections 13 and 14 (docs/FORMAT.md §5.13–5.14), which take
// the place of sections 9, 10 and 11 in a file of version 3.1. Their writer and their one
// reader, beside the drawing of their bytes (little-endian; coldCount = valueCount − hotCount):
//
//   section                   offset      size  field
//   ------------------------  ----------  ----  -----------------------------------------------
//   13 LZ4 cold label index   0           4     singles: cold numbers 0 ..< singles are each a
//                                               group of one label
//                             4           1     groupShift: the other cold numbers are in groups
//                                               of 2^groupShift (0 … 6)
//                             5           3     zero
//                             8 + 4·g     4     index[g], g = 0 … groups: where group g starts in
//                                               section 14; the last entry its length
//   14 LZ4 cold labels        index[g]    …     per group:
//                                               decodedLength  unsigned LEB128, minimal,
//                                                              ≤ 3 bytes, ≤ 65,536
//                                               block          one LZ4 block (none when
//                                                              decodedLength is 0) against the
//                                                              last 64 KiB of the hot labels
//
// groups = singles + ceil((coldCount − singles) / 2^groupShift). Decoded, a group holds its
// labels in cold-number order: each but the last as a LEB128 length (≤ 3 bytes, ≤ 65,535) and
// that many bytes, the last as all the bytes that remain.
//
// Checked at open: the header's fields, the index's exact length, index[0] = 0 and
// index[groups] = length of section 14. At use: the group's offsets ordered and inside section
// 14, its decoded length within the bound, the block decoding to exactly that length, each
// label's length inside the decoded bytes.

/// The LZ4 cold labels of a version 3.1 file: where each cold value's group lies, and the
/// group decoded. Every offset and length read from the file is checked before use.
struct LZ4ColdLabels {
    /// Section 13 after its 8-byte header: `groups + 1` u32 offsets.
    let index: ByteView
    /// Section 14.
    let groups: ByteView
    /// The LZ4 dictionary: the last 64 KiB of the hot labels.
    let dictionary: ByteView
    let singles: Int
    let groupShift: Int
    let groupCount: Int
    let coldCount: Int
    let path: String

    /// Where a cold value lies: its group, its place in it, how many labels the group holds.
    struct Place {
        var group: Int
        var position: Int
        var labels: Int
    }

    /// Checks section 13's header and length against `coldCount` and its first and last
    /// offsets against section 14 (O(1)).
    init(index section: ByteView, groups: ByteView, hotLabels: ByteView, coldCount: Int, path: String) throws(CallerIDError) {
        func bad(_ m: String) -> CallerIDError { CallerIDError.corrupt(path, m) }
        guard section.count >= Format.lz4IndexHeaderSize else {
            throw bad("section 'LZ4 cold label index' is \(section.count) bytes, shorter than its header")
        }
        let singles = Int(section.u32(0)), shift = Int(section.u8(4))
        guard section.u8(5) == 0, section.u16(6) == 0 else { throw bad("LZ4 cold label index header has nonzero reserved bytes") }
        guard shift <= Format.lz4MaxGroupShift, singles <= coldCount else {
            throw bad("LZ4 cold label index: \(singles) single labels and groups of 2^\(shift) for \(coldCount) cold values")
        }
        let groupCount = singles + ((coldCount - singles) + (1 << shift) - 1) >> shift
        let expected = Format.lz4IndexHeaderSize + 4 * (groupCount + 1)
        guard section.count == expected else {
            throw bad("section 'LZ4 cold label index' is \(section.count) bytes; it must be \(expected)")
        }
        let index = section.view(Format.lz4IndexHeaderSize, section.count - Format.lz4IndexHeaderSize)
        guard index.u32(0) == 0, Int(index.u32(4 * groupCount)) == groups.count else {
            throw bad("LZ4 cold label index does not span the LZ4 cold labels")
        }
        self.index = index
        self.groups = groups
        let dictionaryBytes = min(hotLabels.count, Format.lz4DictionaryBytes)
        self.dictionary = hotLabels.view(hotLabels.count - dictionaryBytes, dictionaryBytes)
        self.singles = singles
        self.groupShift = shift
        self.groupCount = groupCount
        self.coldCount = coldCount
        self.path = path
    }

    /// The place of cold number `c` (0 ≤ c < coldCount).
    @inline(__always)
    func place(_ c: Int) -> Place {
        if c < singles { return Place(group: c, position: 0, labels: 1) }
        let d = c &- singles, mask = (1 &<< groupShift) &- 1
        return Place(group: singles &+ (d &>> groupShift), position: d & mask,
                     labels: min(mask &+ 1, coldCount &- singles &- (d & ~mask)))
    }

    /// Group `g`'s bytes in section 14 (checked); `id` names the value in messages.
    @inline(__always)
    func groupBytes(_ g: Int, _ id: Int) throws(CallerIDError) -> UnsafeRawBufferPointer {
        let a = Int(index.u32(4 &* g)), e = Int(index.u32(4 &* g &+ 4))
        guard a <= e, e <= groups.count else { throw CallerIDError.corrupt(path, "LZ4 cold label index of value \(id)") }
        return groups.bytes(a, e &- a)
    }

    /// The decoded length a group's bytes declare, and where its block starts; nil when the
    /// varint is malformed or the length passes the bound.
    @inline(__always)
    static func header(of group: UnsafeRawBufferPointer) -> (length: Int, blockStart: Int)? {
        var at = 0
        // Minimal: no last byte of 0 after the first.
        guard let length = Varint.read(group, at: &at, maxBytes: 3), at == 1 || group[at &- 1] != 0 else { return nil }
        return length <= Format.lz4MaxGroupBytes ? (length, at) : nil
    }

    /// Bytes a decode of `group` needs (its declared length; 0 when the header is bad, which
    /// ``decode(_:_:into:)`` then reports).
    @inline(__always)
    static func decodedBytes(_ group: UnsafeRawBufferPointer) -> Int { header(of: group)?.length ?? 0 }

    /// Decodes `group` (of value `id`, for messages) into `out` (room for
    /// ``decodedBytes(_:)``): its length. Throws *corrupt* unless the block decodes to exactly
    /// the declared length.
    @inline(__always)
    func decode(_ group: UnsafeRawBufferPointer, _ id: Int, into out: MutableByteView) throws(CallerIDError) -> Int {
        guard let (length, start) = LZ4ColdLabels.header(of: group), length <= out.count else {
            throw CallerIDError.corrupt(path, "LZ4 cold label group of value \(id) declares a bad length")
        }
        if length == 0 {
            guard start == group.count else { throw CallerIDError.corrupt(path, "LZ4 cold label group of value \(id) has bytes after an empty group") }
            return 0
        }
        let block = UnsafeRawBufferPointer(rebasing: group[start...])
        guard Codec.lz4Decode(block, dictionary: dictionary.buffer, into: out.prefix(length)) == length else {
            throw CallerIDError.corrupt(path, "LZ4 cold label group of value \(id) does not decode to its \(length) bytes")
        }
        return length
    }

    /// Where label `position` of a decoded group of `labels` labels lies in `decoded`; `id`
    /// names the value in messages.
    @inline(__always)
    func label(_ position: Int, of labels: Int, in decoded: UnsafeRawBufferPointer, _ id: Int) throws(CallerIDError) -> Range<Int> {
        var at = 0, k = 0
        while true {
            if k == labels &- 1 {
                guard decoded.count &- at <= Format.maxLabelBytes else { throw CallerIDError.corrupt(path, "LZ4 cold label of value \(id) is too long") }
                return at..<decoded.count
            }
            guard let length = Varint.read(decoded, at: &at, maxBytes: 3) else {
                throw CallerIDError.corrupt(path, "LZ4 cold label length of value \(id)")
            }
            guard length <= Format.maxLabelBytes, length <= decoded.count &- at else {
                throw CallerIDError.corrupt(path, "LZ4 cold label of value \(id) runs past its group")
            }
            if k == position { return at..<(at &+ length) }
            at &+= length
            k &+= 1
        }
    }
}

// MARK: Writer

/// The LZ4 cold labels being written: labels are added in cold-number order, each group is
/// compressed as it fills, and its bytes are handed to the caller (with its index entry, the
/// section's size before it).
struct LZ4ColdLabelWriter {
    private let encoder: LZ4BlockEncoder
    let singles: Int
    let groupShift: Int
    /// The decoded group in progress, but for its last label, which is in `last`.
    private var group: [UInt8] = []
    private var last: [UInt8] = []
    private var inGroup = 0
    private var added = 0
    /// Bytes of section 14 so far.
    private(set) var size = 0

    /// A writer against `hotLabels` (their last 64 KiB are the dictionary); nil when this build
    /// cannot compress LZ4.
    init?(hotLabels: [UInt8], singles: Int, groupShift: Int = Format.lz4GroupShift) {
        guard let encoder = LZ4BlockEncoder(dictionary: Array(hotLabels.suffix(Format.lz4DictionaryBytes)), level: Format.lz4Level) else { return nil }
        self.encoder = encoder
        self.singles = singles
        self.groupShift = groupShift
    }

    /// Section 13's 8-byte header.
    var indexHeader: [UInt8] {
        var out: [UInt8] = []
        out.appendLE(UInt32(singles))
        out.append(UInt8(groupShift))
        out.append(contentsOf: [0, 0, 0])
        return out
    }

    /// Adds the next cold label; `emit` gets each finished group's offset in section 14 and
    /// its bytes.
    mutating func add(_ label: some Collection<UInt8>, emit: (UInt32, [UInt8]) throws(CallerIDError) -> Void) throws(CallerIDError) {
        if inGroup > 0 {
            group.appendVarint(last.count)
            group.append(contentsOf: last)
        }
        last.removeAll(keepingCapacity: true)
        last.append(contentsOf: label)
        inGroup += 1
        added += 1
        if inGroup == (added <= singles ? 1 : 1 << groupShift) { try flush(emit) }
    }

    /// Writes the group in progress, if any; call once after the last label.
    mutating func finish(emit: (UInt32, [UInt8]) throws(CallerIDError) -> Void) throws(CallerIDError) {
        if inGroup > 0 { try flush(emit) }
    }

    private mutating func flush(_ emit: (UInt32, [UInt8]) throws(CallerIDError) -> Void) throws(CallerIDError) {
        group.append(contentsOf: last)
        guard group.count <= Format.lz4MaxGroupBytes else {
            throw CallerIDError(.limitExceeded, "a group of \(inGroup) cold labels holds \(group.count) bytes, more than the \(Format.lz4MaxGroupBytes) an LZ4 group may")
        }
        var out: [UInt8] = []
        out.appendVarint(group.count)
        if !group.isEmpty {
            guard encoder.compress(group, appendingTo: &out) else { throw CallerIDError(.io, "LZ4 compression of a cold label group failed") }
        }
        let offset = size
        size += out.count
        guard size <= Int(UInt32.max) else { throw CallerIDError(.limitExceeded, "LZ4 cold labels exceed 4 GiB") }
        group.removeAll(keepingCapacity: true)
        last.removeAll(keepingCapacity: true)
        inGroup = 0
        try emit(UInt32(offset), out)
    }
}

// MARK: The groups a cursor keeps

/// The decoded LZ4 groups a cursor keeps, two of them. A scan meets the cold values used once
/// in ascending id order (ids follow first use within a code length, and those values share
/// the longest code), so the labels of one group come one after the other: the "ascending"
/// slot keeps the group of the highest index met, decoded once for its 8 labels. The values
/// used more than once come in any order; the other slot keeps the last of those.
struct LZ4GroupCache: ~Copyable {
    private var ascending = Slot()
    private var other = Slot()

    private struct Slot: ~Copyable {
        var group = -1
        var length = 0
        var bytes = FixedBuffer<UInt8>(repeating: 0, count: 0)
    }

    /// The label of cold value `id` (`hotCount` ≤ id), from a kept group or its group decoded;
    /// valid until the next call.
    mutating func label(_ id: Int, hotCount: Int, _ lz4: LZ4ColdLabels) throws(CallerIDError) -> UnsafeRawBufferPointer {
        let place = lz4.place(id &- hotCount)
        if place.group == ascending.group { return try LZ4GroupCache.label(of: ascending, place, id, lz4) }
        if place.group == other.group { return try LZ4GroupCache.label(of: other, place, id, lz4) }
        if place.group > ascending.group {
            try LZ4GroupCache.decode(place.group, id, lz4, into: &ascending)
            return try LZ4GroupCache.label(of: ascending, place, id, lz4)
        }
        try LZ4GroupCache.decode(place.group, id, lz4, into: &other)
        return try LZ4GroupCache.label(of: other, place, id, lz4)
    }

    private static func decode(_ g: Int, _ id: Int, _ lz4: LZ4ColdLabels, into slot: inout Slot) throws(CallerIDError) {
        let group = try lz4.groupBytes(g, id)
        let needed = LZ4ColdLabels.decodedBytes(group)
        if needed > slot.bytes.count {
            slot.bytes = FixedBuffer(repeating: 0, count: max(needed, min(2 * slot.bytes.count, Format.lz4MaxGroupBytes), 256))
        }
        slot.group = -1
        slot.length = try lz4.decode(group, id, into: slot.bytes.writableBytes(0, needed))
        slot.group = g
    }

    private static func label(of slot: borrowing Slot, _ place: LZ4ColdLabels.Place, _ id: Int, _ lz4: LZ4ColdLabels) throws(CallerIDError) -> UnsafeRawBufferPointer {
        let range = try lz4.label(place.position, of: place.labels, in: slot.bytes.bytes(0, slot.length), id)
        return slot.bytes.bytes(range.lowerBound, range.count)
    }
}
