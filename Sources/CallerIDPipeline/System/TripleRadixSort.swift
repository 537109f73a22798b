import CallerID

// The in-place radix sort of the report records (Reports/TripleSort.swift): pointer code, so
// it lives in the module's system layer.

extension Triple {
    /// Sorts records in place: a most-significant-digit radix sort, 8 bits of a word at a time
    /// (American flag sort: the records are permuted into their buckets without a second
    /// array), the bits a word has in common across the slice skipped, and a word the slice
    /// agrees on passed over to the next; insertion sort below 32 records. The order is
    /// ``<``'s, so the bytes written are those of any other sort. Against the standard
    /// library's merge sort on 10,000,000 report records: see BENCHMARKS.md, "Reports".
    ///
    /// From ``parallelThreshold`` records on, the first level's buckets are sorted on two
    /// threads (``runConcurrently(_:_:)``), split where their records are about half and half.
    static func sort(_ records: inout [Triple]) {
        records.withUnsafeMutableBufferPointer { buf in
            guard let base = buf.baseAddress, buf.count > 1 else { return }
            let counts = UnsafeMutablePointer<Int>.allocate(capacity: 256 * 2 * 24)
            defer { counts.deallocate() }
            guard buf.count >= parallelThreshold else {
                radixSort(base, count: buf.count, word: 0, depth: 0, counts: counts)
                return
            }
            guard let (w, bounds) = partition(base, count: buf.count, word: 0, counts: counts) else { return }
            var k = 0
            while k < 256 && bounds[k + 1] <= buf.count / 2 { k += 1 }
            let other = UnsafeMutablePointer<Int>.allocate(capacity: 256 * 2 * 24)
            defer { other.deallocate() }
            _ = runConcurrently({ sortBuckets(base, bounds, 0..<k, word: w, counts: counts) },
                                { sortBuckets(base, bounds, k..<256, word: w, counts: other) })
        }
    }

    /// Records sorted on two threads from this many on (below it a thread costs more than it saves).
    static let parallelThreshold = 1 << 16

    private static func sortBuckets(_ p: UnsafeMutablePointer<Triple>, _ bounds: Bounds, _ buckets: Range<Int>, word w: Int,
                                    counts: UnsafeMutablePointer<Int>) {
        for b in buckets where bounds[b + 1] - bounds[b] > 1 {
            radixSort(p + bounds[b], count: bounds[b + 1] - bounds[b], word: w, depth: 1, counts: counts)
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
        guard let (w, bounds) = partition(p, count: n, word: w0, counts: counts + depth * 512) else { return }
        for b in 0..<256 where bounds[b + 1] - bounds[b] > 1 {
            radixSort(p + bounds[b], count: bounds[b + 1] - bounds[b], word: w, depth: depth + 1, counts: counts)
        }
    }

    /// Permutes the records into 256 buckets by the next 8 bits that differ among them (from
    /// word `w0` on), using 512 words of `scratch`; returns the word the buckets split on and
    /// the buckets' bounds (257: bucket `b` is `bounds[b]..<bounds[b + 1]`), nil when every
    /// record is the same.
    private static func partition(_ p: UnsafeMutablePointer<Triple>, count n: Int, word w0: Int,
                                  counts scratch: UnsafeMutablePointer<Int>) -> (Int, Bounds)? {
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
            if w == 3 { return nil }   // every record the same
        }
        let bits = 64 - (hi &- lo).leadingZeroBitCount
        let shift = UInt64(Swift.max(bits - 8, 0))
        let start = scratch
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
        return (w, Bounds(start, count: n))
    }

    /// The 257 bounds of a partition's buckets, without an allocation.
    struct Bounds {
        private let start: UnsafeMutablePointer<Int>
        private let count: Int
        init(_ start: UnsafeMutablePointer<Int>, count: Int) {
            self.start = start
            self.count = count
        }
        @inline(__always)
        subscript(_ b: Int) -> Int { b == 256 ? count : start[b] }
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
