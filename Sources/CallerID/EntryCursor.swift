/// A position in a database's ascending sequence of entries.
///
/// Create one with ``Database/cursor(from:filter:)``. Each call to ``next(_:)`` yields the
/// following entry; ``lastNumber`` is where to resume (pass `lastNumber + 1` as `from` to a
/// new cursor) after a pause, for example between two Call Directory requests. For the
/// fastest full scans, ``nextBatch(_:)`` fills an ``EntryBatch`` with up to its capacity of
/// entries per call.
///
/// Heap use is fixed when the cursor is created and does not depend on the file's size:
/// the keys and value ids of one block (12 bytes per entry, at most 12 KiB) and a buffer that
/// grows to the longest cold label decoded (at most 64 KiB).
public struct EntryCursor {
    let db: Database
    private var storage: CursorStorage
    private var block: Int
    private var pos = 0
    private var n = 0
    private var allowed: [Bool]?
    private var previous: UInt64 = 0
    /// Entries below this number are skipped (the `from` of the cursor).
    private let floor: UInt64
    /// Entries of the blocks decoded so far (with the blocks before `from`'s, an upper bound
    /// of the entries before): never more than the header's count.
    private var decoded = 0
    private var failure: CallerIDError?
    /// The number of the last entry returned, if any.
    public private(set) var lastNumber: UInt64?

    init(database db: Database, from: UInt64, filter: CategoryFilter?) {
        self.db = db
        storage = CursorStorage(blockSize: db.blockSize)
        if let filter {
            allowed = db.categories.map { filter.matches($0) }
        }
        floor = from
        let start = db.blockFor(from)
        block = max(start, 0) - 1
        do {
            _ = try advance()
        } catch {
            failure = error
        }
    }

    /// Decodes the next block; false at the end.
    private mutating func advance() throws(CallerIDError) -> Bool {
        // Copies of a cursor share storage until one of them decodes a block.
        if !isKnownUniquelyReferenced(&storage) { storage = CursorStorage(blockSize: db.blockSize) }
        block += 1
        pos = 0
        n = 0
        guard block < db.blockCount else { return false }
        let r = try db.decodeBlock(block, after: previous, keys: &storage.keys, ids: &storage.ids).record
        decoded &+= r.entryCount
        guard decoded <= db.count else {
            throw CallerIDError.corrupt(db.path, "block \(block): the blocks hold more entries than the header's \(db.count)")
        }
        previous = storage.keys[r.entryCount - 1]
        n = r.entryCount
        if storage.keys[0] < floor {
            // The block where the cursor starts (or, in a damaged index, a later one that
            // still lies below `from`): skip to the first key ≥ from.
            var lo = 0, hi = n
            while lo < hi {
                let mid = (lo + hi) / 2
                if storage.keys[mid] < floor { lo = mid + 1 } else { hi = mid }
            }
            pos = lo
        }
        return true
    }

    /// The label of value `id`: the mapping for a hot value, the cursor's buffer for a cold
    /// one (decoded once per run of equal cold values).
    @inline(__always)
    private mutating func label(_ id: Int) throws(CallerIDError) -> UnsafeRawBufferPointer {
        if id < db.labels.hotCount { return try db.labels.hotLabel(id) }
        if !isKnownUniquelyReferenced(&storage) {
            let copy = CursorStorage(blockSize: db.blockSize)
            copy.keys.copyPrefix(n, from: storage.keys)
            copy.ids.copyPrefix(n, from: storage.ids)
            storage = copy
        }
        if storage.decodedID == id { return storage.label.bytes(0, storage.decodedLength) }
        if let lz4 = db.labels.lz4 { return try lz4Label(id, lz4) }
        let codes = try db.labels.coldCodes(id)
        let capacity = LabelTable.symbolBufferBytes(codes)
        storage.reserveLabel(capacity)
        let length = try db.labels.decodeCold(codes, id, into: storage.label.writableBytes(0, capacity))
        storage.decodedID = id
        storage.decodedLength = length
        return storage.label.bytes(0, length)
    }

    /// The label of cold value `id` of a file with LZ4 cold labels, from the groups the cursor
    /// keeps (``LZ4GroupCache``).
    @inline(never)
    private mutating func lz4Label(_ id: Int, _ lz4: LZ4ColdLabels) throws(CallerIDError) -> UnsafeRawBufferPointer {
        try storage.groups.label(id, hotCount: db.labels.hotCount, lz4)
    }

    /// Calls `body` with each following entry (a borrowed view) until it returns false or the
    /// entries end. Throws when the file is damaged; the cursor then stays failed.
    public mutating func forEach(_ body: (EntryView) -> Bool) throws(CallerIDError) {
        if let failure { throw failure }
        do {
            while true {
                if pos == n {
                    guard try advance() else { return }
                    continue
                }
                let k = storage.keys[pos], v = Int(storage.ids[pos])
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

    /// Fills `batch` with the following entries, up to its capacity or `limit` (fewer when
    /// cold labels fill its 64 KiB label buffer; none only at the end); returns how many.
    /// Throws when the file is damaged; the cursor then stays failed.
    public mutating func nextBatch(_ batch: inout EntryBatch, limit: Int = .max) throws(CallerIDError) -> Int {
        batch.reset(database: db)
        return try fill(&batch, BatchColumns(&batch), limit: limit)
    }

    /// Like ``nextBatch(_:limit:)``, but writes the entries as `rows` (the C ABI's `cid_entry`)
    /// instead of the batch's columns; the labels live in `batch` until its next fill, and the
    /// batch itself holds no entries afterwards. Up to `min(limit, batch.capacity)` rows.
    package mutating func nextBatch(_ batch: inout EntryBatch, rows: EntryRows, limit: Int) throws(CallerIDError) -> Int {
        batch.reset(database: db)
        let n = try fill(&batch, rows, limit: limit)
        batch.setCount(0)  // its columns were not written
        return n
    }

    /// The batch fill, writing each entry to `sink`: up to `limit` entries and the batch's
    /// capacity, the batch's count moving with them.
    @inline(__always)
    private mutating func fill<S: EntrySink>(_ batch: inout EntryBatch, _ sink: S, limit: Int) throws(CallerIDError) -> Int {
        let wanted = min(batch.capacity, max(limit, 1))
        if let failure { throw failure }
        do throws(CallerIDError) {
            var cold = LastCold()
            while batch.count < wanted {
                if pos == n {
                    guard try advance() else { break }
                    continue
                }
                if allowed == nil {
                    guard try fillUnfiltered(&batch, sink, wanted, &cold) else { break }  // the label buffer is full
                    continue
                }
                let k = storage.keys[pos], v = Int(storage.ids[pos])
                let code = try db.categoryCode(v)
                if let allowed, !allowed[code] {
                    pos += 1
                    continue
                }
                if v < db.labels.hotCount {
                    batch.append(k, try db.labels.hotLabel(v), UInt8(truncatingIfNeeded: code), to: sink)
                } else {
                    guard try appendCold(k, v, code, &batch, sink, &cold) else { break }
                }
                pos += 1
                lastNumber = k
            }
            return batch.count
        } catch {
            failure = error
            batch.reset(database: db)
            throw error
        }
    }
}

/// Where a batch fill writes its entries: an ``EntryBatch``'s columns, or ``EntryRows``.
protocol EntrySink {
    /// Writes entry `i` of the fill.
    func put(_ i: Int, _ number: UInt64, _ label: UnsafeRawBufferPointer, _ category: UInt8)
}

/// The columns of an ``EntryBatch``.
struct BatchColumns: EntrySink {
    let numbers: FixedBufferWriter<UInt64>
    let labels: FixedBufferWriter<UnsafeRawBufferPointer>
    let categories: FixedBufferWriter<UInt8>

    init(_ batch: inout EntryBatch) {
        numbers = batch.numberStorage.writer()
        labels = batch.labelStorage.writer()
        categories = batch.categoryStorage.writer()
    }

    @inline(__always)
    func put(_ i: Int, _ number: UInt64, _ label: UnsafeRawBufferPointer, _ category: UInt8) {
        numbers[i] = number
        labels[i] = label
        categories[i] = category
    }
}

/// The cold label a fill decoded last (a run of equal cold ids shares its decode).
private struct LastCold {
    var id = -1
    var start = 0
    var length = 0
}

extension EntryCursor {
    /// The batch's fast path (no filter): writes the entries from `pos` to `sink` until `batch`
    /// counts `wanted` or the block ends — hot ones straight from the mapping in a tight loop,
    /// cold ones through ``appendCold(_:_:_:_:_:_:)`` — and returns true; false when a cold label
    /// does not fit the label buffer (the next fill starts there). The tables are read once per
    /// call, not once per run of hot entries.
    @inline(__always)
    fileprivate mutating func fillUnfiltered<S: EntrySink>(_ batch: inout EntryBatch, _ sink: S, _ wanted: Int, _ cold: inout LastCold) throws(CallerIDError) -> Bool {
        let keys = storage.keys.elements, ids = storage.ids.elements
        let hot = db.labels.hotCount, categoryCount = db.categories.count
        let cats = db.valueCategories, offsets = db.labels.hotOffsets, labels = db.labels.hotLabels
        var c = batch.count, p = pos
        let end = min(n, p &+ (wanted &- c))
        defer {
            if p > pos { lastNumber = keys[p &- 1] }
            pos = p
        }
        while p < end {
            let v = Int(ids[p])
            let code = cats.u8(v)
            if v < hot {
                let a = Int(offsets.u32(4 &* v)), e = Int(offsets.u32(4 &* v &+ 4))
                if Int(code) < categoryCount, a <= e, e <= labels.count, e &- a <= Format.maxLabelBytes {
                    sink.put(c, keys[p], labels.bytes(a, e &- a), code)
                    c &+= 1
                    p &+= 1
                    continue
                }
            }
            // A cold value, or a check that fails and must be reported: the general path.
            batch.setCount(c)
            guard Int(code) < categoryCount else { _ = try db.categoryCode(v); return true }
            if v < hot {
                _ = try db.labels.hotLabel(v)  // throws: its offsets failed the check above
            } else if !(try appendCold(keys[p], v, Int(code), &batch, sink, &cold)) {
                return false
            }
            c = batch.count
            p &+= 1
        }
        batch.setCount(c)
        return true
    }

    /// Appends entry (`k`, cold value `v`, category `code`) to `batch` through `sink`, its label decoded into
    /// the batch's label buffer (or shared with the cold label decoded just before); false when
    /// the label does not fit the room left (the buffer grows for the next fill).
    @inline(never)
    fileprivate func appendCold<S: EntrySink>(_ k: UInt64, _ v: Int, _ code: Int, _ batch: inout EntryBatch, _ sink: S,
                                              _ cold: inout LastCold) throws(CallerIDError) -> Bool {
        if v == cold.id {
            batch.append(k, batch.arena.bytes(cold.start, cold.length), UInt8(truncatingIfNeeded: code), to: sink)
            return true
        }
        if let lz4 = db.labels.lz4 { return try appendLZ4(k, v, code, &batch, sink, &cold, lz4) }
        let codes = try db.labels.coldCodes(v)
        let needed = LabelTable.symbolBufferBytes(codes)  // always enough for a valid label
        if cold.id < 0 && batch.arenaUsed == 0 { batch.growArena(to: needed) }  // no cold label of this fill points into it yet
        let at = batch.arenaUsed
        let room = batch.arenaCapacity &- at
        guard let length = db.labels.symbols.decode(codes, into: batch.arena.writableBytes(at, room)), length <= Format.maxLabelBytes else {
            if room >= needed { throw CallerIDError.corrupt(db.path, "cold label of value \(v) does not decode to at most \(Format.maxLabelBytes) bytes") }
            batch.growArenaLater(to: needed)
            return false  // the buffer is full: the next call starts here
        }
        batch.arenaUsed &+= length
        cold = LastCold(id: v, start: at, length: length)
        batch.append(k, batch.arena.bytes(at, length), UInt8(truncatingIfNeeded: code), to: sink)
        return true
    }
}

extension EntryCursor {
    /// ``appendCold(_:_:_:_:_:_:)`` for a file with LZ4 cold labels: the label comes from the
    /// groups the cursor keeps (``LZ4GroupCache``: a group is decoded once for the labels of it
    /// a scan meets in a row) and is copied into the batch's label buffer.
    fileprivate func appendLZ4<S: EntrySink>(_ k: UInt64, _ v: Int, _ code: Int, _ batch: inout EntryBatch, _ sink: S,
                                             _ cold: inout LastCold, _ lz4: LZ4ColdLabels) throws(CallerIDError) -> Bool {
        let label = try storage.groups.label(v, hotCount: db.labels.hotCount, lz4)
        if cold.id < 0 && batch.arenaUsed == 0 { batch.growArena(to: label.count) }  // no label of this fill points into it yet
        let at = batch.arenaUsed
        guard label.count <= batch.arenaCapacity &- at else {
            batch.growArenaLater(to: label.count)
            return false  // the buffer is full: the next call starts here
        }
        batch.arena.writableBytes(at, label.count).copy(label, at: 0)
        batch.arenaUsed &+= label.count
        cold = LastCold(id: v, start: at, length: label.count)
        batch.append(k, batch.arena.bytes(at, label.count), UInt8(truncatingIfNeeded: code), to: sink)
        return true
    }
}

/// The cursor's buffers (a class, so that copies of a cursor value share them and they are
/// freed once).
final class CursorStorage {
    // Used by one cursor call at a time: no dynamic exclusivity checks.
    @exclusivity(unchecked) var keys: FixedBuffer<UInt64>
    @exclusivity(unchecked) var ids: FixedBuffer<UInt32>
    @exclusivity(unchecked) var label = FixedBuffer<UInt8>(repeating: 0, count: 256)
    @exclusivity(unchecked) var decodedID = -1
    @exclusivity(unchecked) var decodedLength = 0
    /// With LZ4 cold labels: the decoded groups kept.
    @exclusivity(unchecked) var groups = LZ4GroupCache()

    init(blockSize: Int) {
        keys = FixedBuffer(repeating: 0, count: blockSize)
        ids = FixedBuffer(repeating: 0, count: blockSize)
    }

    func reserveLabel(_ capacity: Int) {
        guard capacity > label.count else { return }
        label = FixedBuffer(repeating: 0, count: max(capacity, min(2 * label.count, Format.maxLabelBytes + 8)))
        decodedID = -1
    }
}

/// Entries filled by ``EntryCursor/nextBatch(_:limit:)``: reusable storage for up to
/// ``capacity`` entries whose labels point into the database's mapping (hot labels) or into
/// the batch's own label buffer (cold labels decoded for this batch: 16 KiB from the first
/// fill, grown when a fill runs out, up to 64 KiB + 8 bytes, which one longest label always
/// fits). Heap: 25 bytes per entry of capacity plus the label buffer.
///
/// The batch lends what it holds: ``numbers`` as a span and each entry as an ``EntryView``,
/// both valid until the batch is filled again. A fill needs the batch exclusively (`inout`), so
/// the compiler refuses a fill while a span or a view of the last one is still in use. A batch
/// is not copyable: one owner, one set of buffers.
public struct EntryBatch: ~Copyable {
    /// Most bytes of the cold-label buffer.
    static let arenaLimit = 64 * 1024 + 8
    /// Bytes of the cold-label buffer at the first fill.
    static let arenaStart = 16 * 1024
    /// Most entries one fill returns.
    public let capacity: Int
    /// Entries of the last fill.
    public private(set) var count = 0
    /// The entries' numbers, labels and category codes.
    @usableFromInline var numberStorage: FixedBuffer<UInt64>
    @usableFromInline var labelStorage: FixedBuffer<UnsafeRawBufferPointer>
    @usableFromInline var categoryStorage: FixedBuffer<UInt8>
    /// The cold labels decoded for this fill (allocated at the first fill).
    var arena = FixedBuffer<UInt8>(repeating: 0, count: 0)
    var arenaUsed = 0
    /// Room the next fill's label buffer starts with (a fill ran out of it).
    private var pendingGrowth = 0
    /// The database of the last fill (held: the mapped labels stay valid while the batch lives).
    @usableFromInline var database: Database?

    /// Storage for up to `capacity` (≥ 1) entries per fill.
    public init(capacity: Int = 1024) {
        self.capacity = max(1, capacity)
        numberStorage = FixedBuffer(repeating: 0, count: self.capacity)
        labelStorage = FixedBuffer(repeating: UnsafeRawBufferPointer(start: nil, count: 0), count: self.capacity)
        categoryStorage = FixedBuffer(repeating: 0, count: self.capacity)
    }

    var arenaCapacity: Int { arena.count }

    /// Grows the label buffer to at least `bytes` (up to 64 KiB + 8); only while it holds
    /// nothing of the current fill.
    mutating func growArena(to bytes: Int) {
        guard bytes > arena.count else { return }
        arena = FixedBuffer(repeating: 0, count: min(EntryBatch.arenaLimit, max(2 &* arena.count, bytes)))
    }

    /// The buffer ran out during a fill: the next fill starts with room for `bytes` more.
    mutating func growArenaLater(to bytes: Int) {
        pendingGrowth = min(EntryBatch.arenaLimit, max(pendingGrowth, arenaUsed &+ bytes))
    }

    @inline(__always)
    mutating func setCount(_ n: Int) { count = n }

    mutating func reset(database: Database) {
        self.database = database
        count = 0
        arenaUsed = 0
        growArena(to: max(pendingGrowth, EntryBatch.arenaStart))
        pendingGrowth = 0
    }

    @inline(__always)
    mutating func append<S: EntrySink>(_ number: UInt64, _ label: UnsafeRawBufferPointer, _ category: UInt8, to sink: S) {
        sink.put(count, number, label, category)
        count &+= 1
    }

    /// The numbers of the last fill, ascending, lent until the batch is filled again.
    @inlinable
    public var numbers: Span<UInt64> {
        @_lifetime(borrow self) get { numberStorage.span(count) }
    }

    /// Entry `i` (< ``count``) of the last fill, lent until the batch is filled again.
    @inlinable
    public subscript(i: Int) -> EntryView {
        @_lifetime(borrow self) get {
            precondition(i >= 0 && i < count, "batch index out of range")
            return EntryView(i, of: self)
        }
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
