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
    /// Runs written to disk (0 when everything fit).
    var runsSpilled: Int { runs.count }
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

    /// The records in order: the array when they fit in memory, else one merged file. The
    /// sorter is spent.
    func sorted() throws(PipelineError) -> SortedTriples {
        if runs.isEmpty {
            Triple.sort(&buffer)
            defer { buffer = [] }
            return SortedTriples(storage: .memory(buffer), count: count, area: nil)
        }
        if !buffer.isEmpty { try spill() }
        buffer = []
        let area = try spillArea()
        do throws(CallerIDError) {
            let buffers = max((memoryLimit ?? (64 << 20)) / 2 / Self.fanIn, 1 << 16)
            while runs.count > 1 {
                let group = Array(runs.prefix(Self.fanIn))
                let path = area.newPath("reports")
                try Self.merge(group, into: path, bufferBytes: buffers)
                for p in group { area.remove(p) }
                runs = Array(runs.dropFirst(group.count)) + [path]
            }
        } catch {
            throw PipelineError(error)
        }
        return SortedTriples(storage: .file(runs[0]), count: count, area: area)
    }

    /// Merges sorted run files into one.
    private static func merge(_ paths: [String], into path: String, bufferBytes: Int) throws(CallerIDError) {
        var readers: [TripleCursor] = []
        for p in paths { readers.append(try TripleCursor(file: p, bufferBytes: bufferBytes)) }
        var heap = MinHeap<Head>(capacity: readers.count)
        for i in readers.indices {
            if let t = try readers[i].next() { heap.push(Head(t: t, source: i)) }
        }
        let out = try SpillWriter(path: path, bufferBytes: bufferBytes)
        var chunk: [Triple] = []
        chunk.reserveCapacity(4096)
        while let head = heap.popMin() {
            chunk.append(head.t)
            if chunk.count == 4096 {
                try put(chunk, out)
                chunk.removeAll(keepingCapacity: true)
            }
            if let t = try readers[head.source].next() { heap.push(Head(t: t, source: head.source)) }
        }
        try put(chunk, out)
        try out.finish()
    }

    /// Writes records as they lie in memory: three words with no padding, little-endian on every
    /// platform the package builds for (``TripleCursor`` reads them so).
    private static func put(_ records: [Triple], _ out: SpillWriter) throws(CallerIDError) {
        try records.withUnsafeBytes { raw in Result { () throws(CallerIDError) in try out.write(raw) } }.get()
    }

    private struct Head: Comparable {
        var t: Triple
        var source: Int
        static func < (x: Head, y: Head) -> Bool { x.t < y.t || (x.t == y.t && x.source < y.source) }
    }
}

/// Sorted records that can be read from the start as often as wanted.
struct SortedTriples {
    enum Storage {
        case memory([Triple])
        case file(String)
    }
    let storage: Storage
    /// How many records there are.
    let count: Int
    /// Keeps the spill folder (and the file in it) while the records are read.
    let area: SpillArea?

    var isSpilled: Bool { if case .file = storage { true } else { false } }

    /// A cursor at the first record.
    func open(bufferBytes: Int = 1 << 20) throws(PipelineError) -> TripleCursor {
        switch storage {
        case .memory(let records): return TripleCursor(records: records)
        case .file(let path):
            do { return try TripleCursor(file: path, bufferBytes: bufferBytes) } catch { throw PipelineError(error) }
        }
    }
}

/// Reads sorted records one by one, from memory or from a spilled file.
struct TripleCursor {
    private var records: [Triple] = []
    private var index = 0
    private var reader: SpillReader? = nil

    init(records: [Triple]) { self.records = records }

    init(file path: String, bufferBytes: Int) throws(CallerIDError) {
        reader = try SpillReader(path: path, bufferBytes: bufferBytes)
    }

    /// The next record; nil at the end.
    mutating func next() throws(CallerIDError) -> Triple? {
        if index < records.count {
            index += 1
            return records[index - 1]
        }
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
