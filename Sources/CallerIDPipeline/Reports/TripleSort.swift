import CallerID

#if _endian(big)
#error("spilled report records are written little-endian as they lie in memory")
#endif

// The sort behind `lookup reports`: every report, and each later stage of the score, is a record
// of three words compared word by word. Records stay in memory up to the budget; beyond it they
// are sorted in runs, spilled beside the output (the build's spill area and I/O) and merged into
// one sorted file, which a stage may read as often as it needs.

/// A record of three words, ordered by the first, then the second, then the third.
struct Triple: Comparable {
    var a: UInt64
    var b: UInt64
    var c: UInt64

    @inline(__always)
    static func < (x: Triple, y: Triple) -> Bool {
        x.a != y.a ? x.a < y.a : x.b != y.b ? x.b < y.b : x.c < y.c
    }

    static let bytes = 24
}

/// Sorts triples in memory, or in runs on disk beyond ``memoryLimit``.
final class TripleSorter {
    /// Bytes the records in memory may take (24 each, and half as much again while sorting);
    /// nil: no limit.
    let memoryLimit: Int?
    private let spillTarget: String
    private var area: SpillArea?
    private var buffer: [Triple] = []
    private var runs: [String] = []
    /// Records added.
    private(set) var count = 0
    private let capacity: Int

    /// Records at most this many runs are merged at once (a larger set is merged in tiers).
    static let fanIn = 32

    /// A sorter that spills its runs into a folder beside `spillTarget` (the output being built)
    /// once its records pass `memoryLimit` bytes.
    init(memoryLimit: Int?, spillTarget: String) {
        self.memoryLimit = memoryLimit
        self.spillTarget = spillTarget
        capacity = memoryLimit.map { max($0 / (Triple.bytes * 2), 1024) } ?? Int.max
    }

    /// Makes room for `expected` more records in memory at once (up to the budget's share), so
    /// the buffer is not regrown and copied record by record: an estimate may be too high (the
    /// pages it does not fill are never touched) or too low (the buffer grows as before).
    func reserve(_ expected: Int) {
        buffer.reserveCapacity(min(buffer.count + max(expected, 0), capacity))
    }

    func append(_ t: Triple) throws(PipelineError) {
        buffer.append(t)
        count += 1
        if buffer.count >= capacity { try spill() }
    }

    private func spillArea() throws(PipelineError) -> SpillArea {
        if let area { return area }
        do {
            let made = try SpillArea(nextTo: spillTarget)
            area = made
            return made
        } catch {
            throw PipelineError(error)
        }
    }

    /// Sorts the records in memory and writes them as the next run.
    private func spill() throws(PipelineError) {
        Triple.sort(&buffer)
        let area = try spillArea()
        let path = area.newPath("reports")
        do {
            try Self.write(buffer, to: path)
        } catch {
            throw PipelineError(error)
        }
        runs.append(path)
        buffer.removeAll(keepingCapacity: true)
    }

    private static func write(_ records: [Triple], to path: String) throws(CallerIDError) {
        let out = try SpillWriter(path: path)
        try put(records, out)
        try out.finish()
    }

    /// The records in order: the array when they fit in memory, else the sorted runs (at most
    /// ``fanIn``: beyond that the first runs are merged into one until the rest are few enough),
    /// which a cursor merges as it reads. The sorter is spent.
    func sorted() throws(PipelineError) -> SortedTriples {
        if runs.isEmpty {
            Triple.sort(&buffer)
            defer { buffer = [] }
            return SortedTriples(storage: .memory(buffer), count: count, area: nil, bufferBudget: 0)
        }
        if !buffer.isEmpty { try spill() }
        buffer = []
        let area = try spillArea()
        let budget = max((memoryLimit ?? (64 << 20)) / 4, 1 << 20)
        do throws(CallerIDError) {
            while runs.count > Self.fanIn {
                // Merging k runs removes k - 1: no more than needed to come down to the fan-in.
                let group = Array(runs.prefix(min(Self.fanIn, runs.count - Self.fanIn + 1)))
                let path = area.newPath("reports")
                try Self.merge(group, into: path, bufferBytes: max(budget / (group.count + 1), 1 << 16))
                for p in group { area.remove(p) }
                runs = Array(runs.dropFirst(group.count)) + [path]
            }
        } catch {
            throw PipelineError(error)
        }
        return SortedTriples(storage: .runs(runs), count: count, area: area, bufferBudget: budget)
    }

    /// Merges sorted run files into one.
    private static func merge(_ paths: [String], into path: String, bufferBytes: Int) throws(CallerIDError) {
        var merged = try TripleCursor(runs: paths, bufferBytes: bufferBytes)
        let out = try SpillWriter(path: path, bufferBytes: bufferBytes)
        var chunk: [Triple] = []
        chunk.reserveCapacity(4096)
        while let t = try merged.next() {
            chunk.append(t)
            if chunk.count == 4096 {
                try put(chunk, out)
                chunk.removeAll(keepingCapacity: true)
            }
        }
        try put(chunk, out)
        try out.finish()
    }

    /// Writes records as they lie in memory: three words with no padding, little-endian on every
    /// platform the package builds for (``TripleCursor`` reads them so).
    private static func put(_ records: [Triple], _ out: SpillWriter) throws(CallerIDError) {
        try records.withUnsafeBytes { raw in Result { () throws(CallerIDError) in try out.write(raw) } }.get()
    }

}

/// Sorted records that can be read from the start as often as wanted.
struct SortedTriples {
    enum Storage {
        case memory([Triple])
        /// Sorted runs on disk, merged as they are read.
        case runs([String])
    }
    let storage: Storage
    /// How many records there are.
    let count: Int
    /// Keeps the spill folder (and the files in it) while the records are read.
    let area: SpillArea?
    /// Bytes the read buffers of one cursor over the runs may take together.
    let bufferBudget: Int

    /// A cursor at the first record; over runs, each run's buffer is `bufferBytes` or its share
    /// of the budget, whichever is smaller (64 KiB at least).
    func open(bufferBytes: Int = 1 << 20) throws(PipelineError) -> TripleCursor {
        switch storage {
        case .memory(let records): return TripleCursor(records: records)
        case .runs(let paths):
            let each = max(min(bufferBytes, bufferBudget / paths.count), 1 << 16)
            do { return try TripleCursor(runs: paths, bufferBytes: each) } catch { throw PipelineError(error) }
        }
    }
}

/// Reads sorted records one by one: from memory, from a spilled run, or merging several runs.
struct TripleCursor {
    private var records: [Triple] = []
    private var index = 0
    private var reader: SpillReader? = nil
    private var merge: TripleMerge? = nil

    init(records: [Triple]) { self.records = records }

    /// The records of sorted run files in order.
    init(runs paths: [String], bufferBytes: Int) throws(CallerIDError) {
        if paths.count == 1 {
            reader = try SpillReader(path: paths[0], bufferBytes: bufferBytes)
            return
        }
        var cursors: [TripleCursor] = []
        for p in paths { cursors.append(try TripleCursor(runs: [p], bufferBytes: bufferBytes)) }
        merge = try TripleMerge(cursors)
    }

    /// The next record; nil at the end.
    mutating func next() throws(CallerIDError) -> Triple? {
        if index < records.count {
            index += 1
            return records[index - 1]
        }
        if let merge { return try merge.next() }
        guard let reader else { return nil }
        records.removeAll(keepingCapacity: true)
        index = 0
        let path = reader.path
        try reader.nextBytes(max: Triple.bytes * 4096, unit: Triple.bytes) { (bytes) throws(CallerIDError) in
            guard bytes.count % Triple.bytes == 0 else { throw CallerIDError(.io, "\(path): a spilled record is cut") }
            var at = 0
            while at < bytes.count {
                records.append(Triple(a: bytes.littleEndianWord(at: at), b: bytes.littleEndianWord(at: at + 8), c: bytes.littleEndianWord(at: at + 16)))
                at += Triple.bytes
            }
        }
        guard !records.isEmpty else { return nil }
        index = 1
        return records[0]
    }
}

/// A k-way merge of cursors over sorted runs, least record first: a tournament of losers (each
/// record taken costs one match per level, log2 k comparisons, where a binary heap costs two),
/// written for the records themselves: the module's generic heap is not specialized across
/// modules, and unspecialized it spent a quarter of a spilled score in the runtime's metadata.
private final class TripleMerge {
    @exclusivity(unchecked) private var cursors: [TripleCursor]
    /// Each input's current record, and whether it has one (inputs past the count never do).
    @exclusivity(unchecked) private var heads: [Triple]
    @exclusivity(unchecked) private var live: [Bool]
    /// `losers[n]`: the input that lost the match at node n (children 2n and 2n + 1, the inputs
    /// are the leaves `size + i`); `losers[0]`: the overall winner.
    @exclusivity(unchecked) private var losers: [Int]
    private let size: Int

    init(_ cursors: [TripleCursor]) throws(CallerIDError) {
        self.cursors = cursors
        var size = 2
        while size < cursors.count { size *= 2 }
        self.size = size
        heads = Array(repeating: Triple(a: 0, b: 0, c: 0), count: size)
        live = Array(repeating: false, count: size)
        losers = Array(repeating: 0, count: size)
        for i in cursors.indices {
            if let t = try self.cursors[i].next() {
                heads[i] = t
                live[i] = true
            }
        }
        losers[0] = play(1)
    }

    /// Whether input x's record comes before (or with) input y's; a spent input comes last.
    @inline(__always)
    private func beats(_ x: Int, _ y: Int) -> Bool {
        live[x] && (!live[y] || !(heads[y] < heads[x]))
    }

    /// The winner below `node`, its losers recorded on the way.
    private func play(_ node: Int) -> Int {
        if node >= size { return node - size }
        let l = play(2 * node), r = play(2 * node + 1)
        if beats(l, r) {
            losers[node] = r
            return l
        }
        losers[node] = l
        return r
    }

    func next() throws(CallerIDError) -> Triple? {
        var winner = losers[0]
        guard live[winner] else { return nil }
        let record = heads[winner]
        if let t = try cursors[winner].next() { heads[winner] = t } else { live[winner] = false }
        // The new record replays the matches on its input's path to the root.
        var node = (winner + size) / 2
        while node >= 1 {
            if beats(losers[node], winner) { swap(&losers[node], &winner) }
            node /= 2
        }
        losers[0] = winner
        return record
    }
}
