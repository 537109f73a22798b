/// A small, fixed-size cache of decoded label chunks owned by one cursor, so that enumeration
/// never grows the heap with the file: one arena of `slots × maxRawChunk` bytes allocated up
/// front (never resized: resizing would churn malloc's caches), direct-mapped by chunk number.
/// The most frequent labels need no slot: their chunks are stored raw and read from the mapping.
final class ChunkCache {
    /// The default arena budget; slots are chosen so the arena stays within it (at least one slot).
    static let defaultBudget = 40 * 1024
    let slotCount: Int
    private let slotBytes: Int
    private let ids: UnsafeMutablePointer<Int>
    private var arena: UnsafeMutableRawPointer?

    /// - Parameters:
    ///   - maxRawChunk: the largest decoded chunk in the file.
    ///   - budget: bytes the arena may take (one slot at least, whatever the budget).
    init(maxRawChunk: Int, budget: Int = ChunkCache.defaultBudget) {
        slotBytes = max(maxRawChunk, 1)
        // No compressed chunk: one (unused) slot. Otherwise as many as fit, at most 64.
        let fit = maxRawChunk == 0 ? 1 : min(64, max(1, budget / slotBytes))
        slotCount = 1 << (Int.bitWidth - 1 - fit.leadingZeroBitCount)   // a power of two ≤ fit
        ids = .allocate(capacity: slotCount)
        ids.initialize(repeating: -1, count: slotCount)
    }

    deinit {
        ids.deallocate()
        arena?.deallocate()
    }

    /// Bytes of chunk `c` (raw size `raw` ≤ maxRawChunk), decoding `source` against
    /// `dictionary` into its slot when not cached. Returns nil when the data is malformed.
    @inline(__always)
    func chunk(_ c: Int, raw: Int, source: UnsafeRawBufferPointer, dictionary: UnsafeRawBufferPointer) -> ByteView? {
        let slot = c & (slotCount - 1)
        let arena = self.arena ?? allocateArena()
        let b = arena + slot * slotBytes
        if ids[slot] == c { return ByteView(base: b, count: raw) }
        guard raw <= slotBytes,
              Codec.decompress(source, into: UnsafeMutableRawBufferPointer(start: b, count: raw), dictionary: dictionary) else {
            ids[slot] = -1
            return nil
        }
        ids[slot] = c
        return ByteView(base: b, count: raw)
    }

    private func allocateArena() -> UnsafeMutableRawPointer {
        let a = UnsafeMutableRawPointer.allocate(byteCount: slotCount * slotBytes, alignment: 16)
        arena = a
        return a
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

    func decode(_ source: UnsafeRawBufferPointer, raw: Int, dictionary: UnsafeRawBufferPointer) -> ByteView? {
        if raw > capacity {
            pointer.deallocate()
            capacity = raw
            pointer = .allocate(byteCount: raw, alignment: 8)
        }
        guard Codec.decompress(source, into: UnsafeMutableRawBufferPointer(start: pointer, count: raw), dictionary: dictionary) else { return nil }
        return ByteView(base: pointer, count: raw)
    }
}
