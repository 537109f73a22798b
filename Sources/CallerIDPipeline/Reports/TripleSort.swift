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

extension Triple {
    /// Sorts records in place: a most-significant-digit radix sort, 8 bits of a word at a time
    /// (American flag sort: the records are permuted into their buckets without a second
    /// array), the bits a word has in common across the slice skipped, and a word the slice
    /// agrees on passed over to the next; insertion sort below 32 records. The order is
    /// ``<``'s, so the bytes written are those of any other sort. Against the standard
    /// library's merge sort on 10,000,000 report records: see BENCHMARKS.md, "Reports".
    static func sort(_ records: inout [Triple]) {
        records.withUnsafeMutableBufferPointer { buf in
            guard let base = buf.baseAddress, buf.count > 1 else { return }
            let counts = UnsafeMutablePointer<Int>.allocate(capacity: 256 * 2 * 24)
            defer { counts.deallocate() }
            radixSort(base, count: buf.count, word: 0, depth: 0, counts: counts)
        }
    }

    @inline(__always)
    private static func word(_ t: Triple, _ w: Int) -> UInt64 { w == 0 ? t.a : w == 1 ? t.b : t.c }

    /// `counts`: 512 words a level of recursion (at most 24: 3 words of 8 digits).
    private static func radixSort(_ p: UnsafeMutablePointer<Triple>, count n: Int, word w0: Int, depth: Int,
                                  counts: UnsafeMutablePointer<Int>) {
        if n <= 32 {
            insertionSort(p, count: n)
            return
        }
        var w = w0
        var lo = UInt64.max
        var hi: UInt64 = 0
        while true {
            lo = .max
            hi = 0
            for i in 0..<n {
                let v = word(p[i], w)
                lo = Swift.min(lo, v)
                hi = Swift.max(hi, v)
            }
            if lo != hi { break }
            w += 1
            if w == 3 { return }   // every record the same
        }
        let bits = 64 - (hi &- lo).leadingZeroBitCount
        let shift = UInt64(Swift.max(bits - 8, 0))
        let start = counts + depth * 512
        let next = start + 256
        start.initialize(repeating: 0, count: 256)
        for i in 0..<n { start[Int((word(p[i], w) &- lo) &>> shift)] &+= 1 }
        var sum = 0
        for b in 0..<256 {
            let c = start[b]
            start[b] = sum
            next[b] = sum
            sum &+= c
        }
        // Each record is moved to the next free place of its bucket; the one it displaces moves on.
        for b in 0..<256 {
            let end = b == 255 ? n : start[b + 1]
            while next[b] < end {
                var v = p[next[b]]
                var d = Int((word(v, w) &- lo) &>> shift)
                while d != b {
                    let j = next[d]
                    next[d] = j &+ 1
                    swap(&v, &p[j])
                    d = Int((word(v, w) &- lo) &>> shift)
                }
                p[next[b]] = v
                next[b] &+= 1
            }
        }
        for b in 0..<256 {
            let s = start[b]
            let e = b == 255 ? n : start[b + 1]
            if e - s > 1 { radixSort(p + s, count: e - s, word: w, depth: depth + 1, counts: counts) }
        }
    }

    private static func insertionSort(_ p: UnsafeMutablePointer<Triple>, count n: Int) {
        guard n > 1 else { return }
        for i in 1..<n {
            let v = p[i]
            var j = i
            while j > 0 && v < p[j - 1] {
                p[j] = p[j - 1]
                j -= 1
            }
            p[j] = v
        }
    }
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
            return SortedTriples(storage: .memory(buffer), area: nil)
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
        return SortedTriples(storage: .file(runs[0]), area: area)
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
