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
    /// One head per cursor that has one, least (number, cursor index) on top.
    private var heap: MinHeap<MergeHead>
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
        heap = MinHeap(capacity: sources.count)
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
            let best = heap.popMin()!.source
            let n = sources[Int(best)].number
            // The later cursors' entries for the same number are hidden by the winner.
            while let top = heap.min, top.number == n {
                try advance(heap.popMin()!.source)
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
        heap.push(MergeHead(number: number, source: i))
    }
}
