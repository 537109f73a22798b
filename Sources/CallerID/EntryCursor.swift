/// A position in a database's ascending sequence of entries.
///
/// Create one with ``Database/cursor(from:filter:)``. Each call to ``next(_:)`` yields the
/// following entry; ``lastNumber`` is where to resume (pass `lastNumber + 1` as `from` to a
/// new cursor) after a pause, for example between two Call Directory requests.
/// Heap use is fixed when the cursor is created and does not depend on the file's size.
public struct EntryCursor {
    let db: Database
    private var block: Int
    private var pos = 0
    private var n = 0
    private var keys: [UInt64]
    private var values: [Int]
    private var allowed: [Bool]?
    private let cache: ChunkCache
    private var previous: UInt64 = 0
    private var failure: CallerIDError?
    /// The number of the last entry returned, if any.
    public private(set) var lastNumber: UInt64?

    init(database db: Database, from: UInt64, filter: CategoryFilter?, labelCacheBytes: Int) {
        self.db = db
        cache = ChunkCache(maxRawChunk: db.maxCompressedChunkRaw, budget: labelCacheBytes)
        keys = [UInt64](repeating: 0, count: db.blockSize)
        values = [Int](repeating: 0, count: db.blockSize)
        if let filter {
            allowed = db.categories.map { filter.matches($0) }
        }
        let start = db.blockFor(from)
        block = max(start, 0) - 1
        do {
            if try advance() {
                // Skip to the first key ≥ from inside the starting block.
                var lo = 0, hi = n
                while lo < hi {
                    let mid = (lo + hi) / 2
                    if keys[mid] < from { lo = mid + 1 } else { hi = mid }
                }
                pos = lo
            }
        } catch {
            failure = error
        }
    }

    /// Decodes the next block; false at the end.
    private mutating func advance() throws(CallerIDError) -> Bool {
        block += 1
        pos = 0
        n = 0
        guard block < db.blockCount else { return false }
        let r = db.blockReader(block)
        let count = r.n
        var last = previous
        for i in 0..<count {
            let k = db.key(r, i)
            guard k > last, k <= Format.maxNumber, i > 0 || k == db.blockKeys.u64(block * 8) else {
                throw CallerIDError.corrupt(db.path, "block \(block): key \(i) (\(k)) is out of order or does not match the block index")
            }
            last = k
            keys[i] = k
        }
        previous = last
        if r.mode == Format.ValueMode.constant.rawValue {
            let v = try db.value(r, 0)
            for i in 0..<count { values[i] = v }
        } else {
            for i in 0..<count { values[i] = try db.value(r, i) }
        }
        n = count
        return true
    }

    /// Calls `body` with each following entry (a borrowed view) until it returns false or the
    /// entries end. The fastest way through a database: no allocation, no per-entry copy.
    /// Throws when the file is damaged; the cursor then stays failed.
    public mutating func forEach(_ body: (EntryView) -> Bool) throws(CallerIDError) {
        if let failure { throw failure }
        do {
            while true {
                if pos == n {
                    guard try advance() else { return }
                    continue
                }
                let k = keys[pos], v = values[pos]
                pos += 1
                let code = try db.categoryCode(v)
                if let allowed, !allowed[code] { continue }
                let bytes = try label(v)
                lastNumber = k
                if !body(EntryView(number: k, categoryCode: code, labelBytes: bytes, database: db)) { return }
            }
        } catch {
            failure = error
            throw error
        }
    }

    /// Calls `body` with the next entry (a borrowed view) and returns its result,
    /// or returns nil at the end. Throws when the file is damaged.
    public mutating func next<R>(_ body: (EntryView) -> R) throws(CallerIDError) -> R? {
        var result: R? = nil
        try forEach { view in
            result = body(view)
            return false
        }
        return result
    }

    /// The next entry, or nil at the end.
    public mutating func next() throws(CallerIDError) -> Entry? {
        try next { $0.entry }
    }

    private func label(_ v: Int) throws(CallerIDError) -> UnsafeRawBufferPointer {
        let c = v >> db.labelShift
        let e = c * Format.chunkEntrySize
        let chunk: ByteView
        if db.chunkTable.u32(e + 12) == 0 {
            chunk = ByteView(base: db.labelData.base + Int(db.chunkTable.u32(e)), count: Int(db.chunkTable.u32(e + 4)))
        } else if let shared = db.decoded.load(c) {
            chunk = ByteView(base: shared, count: Int(db.chunkTable.u32(e + 8)))
        } else {
            let source = db.labelData.bytes(Int(db.chunkTable.u32(e)), Int(db.chunkTable.u32(e + 4)))
            guard let decoded = cache.chunk(c, raw: Int(db.chunkTable.u32(e + 8)), source: source, dictionary: db.labelDictionary.buffer) else {
                throw CallerIDError.corrupt(db.path, "label chunk \(c) does not decompress")
            }
            chunk = decoded
        }
        return try db.label(in: chunk, index: v & ((1 << db.labelShift) - 1), labels: db.labelsIn(chunk: c))
    }
}

/// The entries of a database in ascending order; see ``Database/entries(from:filter:)``.
public struct EntrySequence: Sequence {
    let database: Database
    let from: UInt64
    let filter: CategoryFilter?

    public struct Iterator: IteratorProtocol {
        var cursor: EntryCursor
        /// Set when iteration stopped because the file is damaged.
        public private(set) var error: CallerIDError?

        public mutating func next() -> Entry? {
            guard error == nil else { return nil }
            do {
                return try cursor.next()
            } catch {
                self.error = error
                return nil
            }
        }
    }

    public func makeIterator() -> Iterator {
        Iterator(cursor: database.cursor(from: from, filter: filter))
    }
}
