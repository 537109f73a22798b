// The builder's dictionary of distinct (category, label) values.
/// Interns (category, label bytes) pairs into dense ids with an open-addressing table.
struct LabelInterner {
    private var arena: [UInt8] = []
    private var starts: [UInt32] = []
    private(set) var categories: [UInt8] = []
    /// Open addressing: per slot the hash's high 32 bits above id + 1 (0: empty), so that a
    /// probe reads no other array until the hash matches.
    private var table = [UInt64](repeating: 0, count: 1024)
    private var hashes: [UInt64] = []

    var count: Int { starts.count - (starts.isEmpty ? 0 : 1) }

    /// Bytes the table holds (label text, 13 bytes per label, the hash table).
    var memoryBytes: Int { arena.capacity &+ count &* 13 &+ table.count &* 8 }

    init() { starts = [0] }

    /// An interner whose hash table starts with `slots` slots (a power of two): a small one for
    /// a dictionary kept within a small share of memory.
    init(slots: Int) {
        precondition(slots > 0 && slots & (slots - 1) == 0, "slots must be a power of two")
        starts = [0]
        table = [UInt64](repeating: 0, count: slots)
    }

    /// The hash of value `id` (its category and label): equal pairs have equal hashes in every
    /// interner.
    func hash(of id: Int) -> UInt64 { hashes[id] }

    func length(_ id: Int) -> Int { Int(starts[id + 1] - starts[id]) }
    func bytes(_ id: Int) -> ArraySlice<UInt8> { arena[Int(starts[id])..<Int(starts[id + 1])] }

    /// What ``intern(category:bytes:)`` made of a pair.
    enum Interned {
        case id(UInt32)
        /// A new label the label rule refuses (``LabelText/check(_:)``): not interned.
        case refused(LabelText.Problem)
    }

    /// The id of the pair, interned when it is new. A new label is held to the label rule
    /// first, so the rule runs once per distinct label, not once per record.
    mutating func intern(category: UInt8, bytes: UnsafeRawBufferPointer) throws(CallerIDError) -> Interned {
        let h = Self.hash(category, bytes)
        let (found, slot) = probe(h, category, bytes)
        if let found { return .id(found) }
        if let problem = LabelText.check(bytes) { return .refused(problem) }
        let id = count
        guard arena.count + bytes.count <= Int(UInt32.max) else {
            throw CallerIDError(.limitExceeded, "distinct labels exceed 4 GiB")
        }
        arena.append(contentsOf: bytes)
        starts.append(UInt32(arena.count))
        categories.append(category)
        hashes.append(h)
        table[slot] = Self.entry(h, id)
        if count * 2 > table.count { grow() }
        return .id(UInt32(id))
    }

    /// The id of the pair when it is interned already; nil (and nothing added) when not.
    func find(category: UInt8, bytes: UnsafeRawBufferPointer) -> UInt32? {
        probe(Self.hash(category, bytes), category, bytes).id
    }

    @inline(__always)
    private static func hash(_ category: UInt8, _ bytes: UnsafeRawBufferPointer) -> UInt64 {
        Codec.xxh3(bytes) &+ UInt64(category) &* 0x9E37_79B9_7F4A_7C15
    }

    @inline(__always)
    private static func entry(_ h: UInt64, _ id: Int) -> UInt64 { h & 0xFFFF_FFFF_0000_0000 | UInt64(id + 1) }

    /// The pair's id when the table holds it, else the empty slot where it would go.
    @inline(__always)
    private func probe(_ h: UInt64, _ category: UInt8, _ bytes: UnsafeRawBufferPointer) -> (id: UInt32?, slot: Int) {
        let mask = table.count - 1
        let tag = h & 0xFFFF_FFFF_0000_0000
        var slot = Int(truncatingIfNeeded: h) & mask
        while true {
            let e = table[slot]
            if e == 0 { return (nil, slot) }
            if e & 0xFFFF_FFFF_0000_0000 == tag {
                let id = Int(truncatingIfNeeded: e & 0xFFFF_FFFF) - 1
                if categories[id] == category && length(id) == bytes.count
                    && arena.withUnsafeBytes({ a in memEqual(a, Int(starts[id]), bytes) }) {
                    return (UInt32(id), slot)
                }
            }
            slot = (slot + 1) & mask
        }
    }

    private mutating func grow() {
        var newTable = [UInt64](repeating: 0, count: table.count * 2)
        let mask = newTable.count - 1
        for id in 0..<count {
            var slot = Int(truncatingIfNeeded: hashes[id]) & mask
            while newTable[slot] != 0 { slot = (slot + 1) & mask }
            newTable[slot] = Self.entry(hashes[id], id)
        }
        table = newTable
    }
}

@inline(__always)
private func memEqual(_ a: UnsafeRawBufferPointer, _ offset: Int, _ b: UnsafeRawBufferPointer) -> Bool {
    for i in 0..<b.count where a[offset + i] != b[i] { return false }
    return true
}
