/// The k-way merge every multi-database reader shares: the entries of several cursors in
/// strictly ascending order, one per number, the earliest cursor winning a number that several
/// hold (its entry hides the others').
///
/// Used by the Call Directory feed (`MergedStream`, one list at a time, cursors filtered by
/// action), the Live Caller ID export (all categories) and the C ABI's merged cursor. Filters
/// that apply to the *winner* (a category choice: a dropped winner still hides the later
/// cursors' entries for its number) are the caller's: it skips the entry and calls ``next()``.
///
/// A binary min-heap on (head number, cursor index) holds one head per live cursor, so equal
/// numbers pop in precedence order. Heap use is fixed when the merge starts (one cursor and one
/// head per source). The winner's label stays valid until the following ``next()``: its cursor
/// is advanced only then (the losers' at once; their labels are never handed out).
package struct PrecedenceMerge {
    private struct Source {
        var cursor: EntryCursor
        var number: UInt64 = 0
        var label = UnsafeRawBufferPointer(start: nil, count: 0)
        var category = 0
    }

    private var sources: [Source]
    /// Indices into `sources` with a head, a min-heap on (number, index).
    private var heap: [Int32] = []
    /// The source whose head was handed out last (advanced by the next call), or -1.
    private var winner: Int32 = -1
    private var started = false
    private var failure: CallerIDError?

    /// The current entry: its number, label bytes (valid until the next ``next()``), category
    /// index in the winning cursor's database, and which cursor it comes from (index in the
    /// order given).
    package private(set) var number: UInt64 = 0
    package private(set) var label = UnsafeRawBufferPointer(start: nil, count: 0)
    package private(set) var category = 0
    package private(set) var source = -1

    /// Merges `cursors`; on a number several hold, the first in this order wins.
    package init(_ cursors: [EntryCursor]) {
        sources = cursors.map { Source(cursor: $0) }
        heap.reserveCapacity(sources.count)
    }

    /// Moves to the next number; false at the end. Throws when a database is damaged; after
    /// that every call throws the same error.
    package mutating func next() throws(CallerIDError) -> Bool {
        if let failure { throw failure }
        do throws(CallerIDError) {
            if !started {
                started = true
                for i in sources.indices { try advance(Int32(i)) }
            } else if winner >= 0 {
                try advance(winner)
            }
            guard !heap.isEmpty else {
                winner = -1
                return false
            }
            let best = popMin()
            let n = sources[Int(best)].number
            // The later cursors' entries for the same number are hidden by the winner.
            while let top = heap.first, sources[Int(top)].number == n {
                try advance(popMin())
            }
            winner = best
            let s = sources[Int(best)]
            number = n
            label = s.label
            category = s.category
            source = Int(best)
            return true
        } catch {
            failure = error
            throw error
        }
    }

    /// Reads cursor `i`'s next entry into its head and pushes it; a finished cursor leaves the heap.
    private mutating func advance(_ i: Int32) throws(CallerIDError) {
        var found = false
        var number: UInt64 = 0
        var label = UnsafeRawBufferPointer(start: nil, count: 0)
        var category = 0
        // forEach, not the generic next(_:): no generic metadata lookup per entry.
        try sources[Int(i)].cursor.forEach { view in
            found = true
            number = view.number
            label = view.labelBytes
            category = view.categoryIndex
            return false
        }
        guard found else { return }
        sources[Int(i)].number = number
        sources[Int(i)].label = label
        sources[Int(i)].category = category
        push(i)
    }

    @inline(__always)
    private func less(_ a: Int32, _ b: Int32) -> Bool {
        let x = sources[Int(a)].number, y = sources[Int(b)].number
        return x < y || (x == y && a < b)
    }

    private mutating func push(_ s: Int32) {
        heap.append(s)
        var i = heap.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard less(heap[i], heap[parent]) else { break }
            heap.swapAt(i, parent)
            i = parent
        }
    }

    private mutating func popMin() -> Int32 {
        let top = heap[0]
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            var i = 0
            let n = heap.count
            while true {
                let l = 2 * i + 1
                guard l < n else { break }
                var c = l
                if l + 1 < n && less(heap[l + 1], heap[l]) { c = l + 1 }
                guard less(heap[c], heap[i]) else { break }
                heap.swapAt(i, c)
                i = c
            }
        }
        return top
    }
}
