import CallerID

/// Every entry of several databases in ascending order, one per number: when several
/// databases hold a number, the first one (in the order given) answers, as `lookup NUMBER`
/// does across the databases of `--db` (see `DatabasePaths` in the tool). Unlike
/// ``MergedStream``, which merges one Call Directory list at a time (a number may be
/// identified by one file and blocked by another), the winner here is decided over all
/// categories: the Live Caller ID datasets give one answer per number.
///
/// Heap use is fixed when the merge starts: one cursor per database. k is small (a few
/// databases): the minimum is found by a linear scan. The label handed out stays valid until
/// the following ``next()`` (the winner's cursor is only advanced then).
struct PrecedenceMerge {
    private struct Head {
        var cursor: EntryCursor
        var number: UInt64 = 0
        var label = UnsafeRawBufferPointer(start: nil, count: 0)
        var category = 0
        var live = true
    }

    private var heads: [Head]
    private var winner = -1
    private var started = false

    /// Number, label and category index (into the winning database's `categories`) of the
    /// current entry, and which database it comes from (index in the order given).
    private(set) var number: UInt64 = 0
    private(set) var label = UnsafeRawBufferPointer(start: nil, count: 0)
    private(set) var category = 0
    private(set) var source = 0

    init(_ databases: [Database]) {
        heads = databases.map { Head(cursor: $0.cursor(from: 0, filter: nil)) }
    }

    private mutating func advance(_ i: Int) throws(CallerIDError) {
        var found = false
        var number: UInt64 = 0
        var label = UnsafeRawBufferPointer(start: nil, count: 0)
        var category = 0
        try heads[i].cursor.forEach { view in
            found = true
            number = view.number
            label = view.labelBytes
            category = view.categoryIndex
            return false
        }
        heads[i].live = found
        heads[i].number = number
        heads[i].label = label
        heads[i].category = category
    }

    /// Moves to the next number; false at the end. Throws when a database is damaged.
    mutating func next() throws(CallerIDError) -> Bool {
        if !started {
            started = true
            for i in heads.indices { try advance(i) }
        } else if winner >= 0 {
            try advance(winner)
        }
        var best = -1
        for i in heads.indices where heads[i].live {
            if best < 0 || heads[i].number < heads[best].number { best = i }
        }
        guard best >= 0 else {
            winner = -1
            return false
        }
        let n = heads[best].number
        // The later databases' entries for the same number are hidden by the winner.
        for i in heads.indices where i != best && heads[i].live && heads[i].number == n {
            try advance(i)
        }
        winner = best
        number = n
        label = heads[best].label
        category = heads[best].category
        source = best
        return true
    }
}
