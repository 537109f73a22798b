/// A small, fixed-size cache of decoded label chunks owned by one cursor, so that enumeration
/// never grows the heap with the file: at most `slotCount` buffers, each as large as the
/// largest chunk it has held. The first `pinned` chunks (the most frequent labels) keep
/// their own slots; the others share the rest, direct-mapped.
final class ChunkCache {
    static let slotCount = 12
    static let pinned = 4
    private var ids = [Int](repeating: -1, count: ChunkCache.slotCount)
    private var buffers = [UnsafeMutableRawPointer?](repeating: nil, count: ChunkCache.slotCount)
    private var capacities = [Int](repeating: 0, count: ChunkCache.slotCount)

    deinit {
        for b in buffers { b?.deallocate() }
    }

    /// Bytes of chunk `c` (raw size `raw`), decoding `source` into a slot when not cached.
    /// Returns nil when the compressed data is malformed.
    func chunk(_ c: Int, raw: Int, source: UnsafeRawBufferPointer) -> ByteView? {
        let slot = c < ChunkCache.pinned ? c : ChunkCache.pinned + c % (ChunkCache.slotCount - ChunkCache.pinned)
        if ids[slot] == c, let b = buffers[slot] { return ByteView(base: b, count: raw) }
        if capacities[slot] < raw || buffers[slot] == nil {
            buffers[slot]?.deallocate()
            buffers[slot] = .allocate(byteCount: max(raw, 1), alignment: 8)
            capacities[slot] = max(raw, 1)
        }
        let b = buffers[slot]!
        guard Codec.decompress(source, into: UnsafeMutableRawBufferPointer(start: b, count: raw)) else {
            ids[slot] = -1
            return nil
        }
        ids[slot] = c
        return ByteView(base: b, count: raw)
    }
}

/// A scratch buffer for decoding one chunk at a time (used by ``Database/verify()``).
final class ScratchBuffer {
    private(set) var pointer: UnsafeMutableRawPointer
    private var capacity: Int

    init() {
        capacity = 4096
        pointer = .allocate(byteCount: capacity, alignment: 8)
    }

    deinit { pointer.deallocate() }

    func decode(_ source: UnsafeRawBufferPointer, raw: Int) -> ByteView? {
        if raw > capacity {
            pointer.deallocate()
            capacity = raw
            pointer = .allocate(byteCount: raw, alignment: 8)
        }
        guard Codec.decompress(source, into: UnsafeMutableRawBufferPointer(start: pointer, count: raw)) else { return nil }
        return ByteView(base: pointer, count: raw)
    }
}
