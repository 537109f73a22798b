// Format 2.0 prototype: ascending enumeration. A block is decoded once into two small
// arrays (≤ 4096 keys and ids); cold labels come from a bounded chunk cache, and since cold
// ids are numbered by first occurrence within their code length, a scan meets each cold chunk
// in order and decodes it about once.

@_spi(Format2Prototype) public struct Format2Cursor {
    let reader: Format2Reader
    var block: Int
    var index = 0
    var keys: [UInt64] = []
    var ids: [UInt32] = []
    var from: UInt64
    public var cache = Format2LabelCache()

    init(_ reader: Format2Reader, from: UInt64) {
        self.reader = reader
        self.from = from
        block = 0
        if reader.count > 0, from > 1 {
            // The last block whose first key ≤ from (or block 0).
            var lo = 0, n = reader.blockCount
            while n > 1 {
                let half = n / 2
                lo = reader.blockKeys.u64(8 * (lo + half)) <= from ? lo + half : lo
                n -= half
            }
            block = lo
        }
    }

    /// Bytes this cursor holds on the heap (decoded block arrays and label cache).
    public var heapBytes: Int { keys.capacity * 8 + ids.capacity * 4 + cache.heldBytes }

    @inline(__always)
    mutating func fill() throws(CallerIDError) -> Bool {
        while index >= keys.count {
            guard block < reader.blockCount else { return false }
            let record = try reader.record(block)
            try record.decodeAll(firstKey: reader.blockKeys.u64(8 * block), code: reader.code, keys: &keys, ids: &ids, path: reader.path)
            block += 1
            index = 0
            if from > 1 {
                while index < keys.count, keys[index] < from { index += 1 }
                from = 0
            }
        }
        return true
    }

    /// Calls `body(number, labelBytes, categoryCode)` for each entry until it returns false.
    @inline(__always)
    public mutating func forEach(_ body: (UInt64, UnsafeRawBufferPointer, Int) -> Bool) throws(CallerIDError) {
        while try fill() {
            let id = Int(ids[index])
            guard id < reader.valueCount else { throw CallerIDError.corrupt(reader.path, "value id out of range") }
            let label = try reader.label(id, cache: &cache)
            let go = body(keys[index], label, Int(reader.valueCategories.u8(id)))
            index += 1
            if !go { return }
        }
    }
}
