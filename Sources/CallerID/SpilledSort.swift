// An external sort of (key, payload) rows on the machinery of the bounded-memory build's runs
// (``SpilledRuns``, ``RunMerge``): what the streamed writer's label dictionary sorts when its
// distinct labels do not fit its share of the memory limit.

/// Rows of a `UInt64` key and a payload, given in any order and read back by key — stable:
/// rows of one key in the order they were added. Up to `bufferBytes` are kept in memory; each
/// time they reach it they are sorted and written as a run to the scratch area, and reading
/// merges the runs.
final class SpilledSort {
    private var keys: [UInt64] = []
    private var ends: [UInt32] = []
    private var arena: [UInt8] = []
    private let runs: SpilledRuns
    private let bufferBytes: Int
    /// Rows added.
    private(set) var count = 0

    /// A sort spilling to `area`, keeping about `bufferBytes` in memory (and reading its runs
    /// back with buffers of a quarter of that between them).
    init(in area: SpillArea, bufferBytes: Int) {
        self.bufferBytes = max(bufferBytes, 1)
        runs = SpilledRuns(in: area, memoryLimit: bufferBytes)
    }

    deinit { runs.removeAll() }

    /// Bytes the rows in memory take, sorting included (24 bytes a key at the sort's peak).
    var memoryBytes: Int { keys.capacity &* 24 &+ ends.capacity &* 4 &+ arena.capacity }

    /// Adds a row whose payload `fill` appends to the bytes it is given.
    func add(_ key: UInt64, _ fill: (inout [UInt8]) -> Void) throws(CallerIDError) {
        fill(&arena)
        guard arena.count <= Int(UInt32.max) else { throw CallerIDError(.limitExceeded, "a sorted row exceeds 4 GiB") }
        keys.append(key)
        ends.append(UInt32(arena.count))
        count += 1
        if memoryBytes >= bufferBytes { try spill() }
    }

    /// Sorts the rows in memory and writes them as a run; memory starts over.
    private func spill() throws(CallerIDError) {
        guard !keys.isEmpty else { return }
        var sorted = keys
        var order = Array(0..<UInt32(keys.count))
        radixSortPairs(keys: &sorted, values: &order)
        let rowEnds = self.ends, runs = self.runs
        try arena.withUnsafeBytes { arena in
            Result { () throws(CallerIDError) in
                try runs.write(count: sorted.count) { i, payload in
                    let row = Int(order[i])
                    let start = row == 0 ? 0 : Int(rowEnds[row - 1])
                    payload.append(contentsOf: UnsafeRawBufferPointer(rebasing: arena[start..<Int(rowEnds[row])]))
                    return sorted[i]
                }
            }
        }.get()
        keys = []
        ends = []
        arena = []
    }

    /// The rows, by key (rows of one key in the order added), after the last row was added:
    /// a reader of the runs, which stay until the sort goes.
    func sorted() throws(CallerIDError) -> SortedRows {
        try spill()
        return try SortedRows(merge: RunMerge(runs: runs.paths, bufferBytes: runs.mergeBuffer(files: runs.paths.count)))
    }

    /// Reads the rows of a ``SpilledSort`` in order, one at a time.
    struct SortedRows {
        fileprivate var merge: RunMerge

        /// Calls `body` with the next row's key and payload (valid during the call); false
        /// after the last.
        mutating func next(_ body: (UInt64, UnsafeRawBufferPointer) throws(CallerIDError) -> Void) throws(CallerIDError) -> Bool {
            try merge.next { (key, payload, _) throws(CallerIDError) in try body(key, payload) }
        }
    }
}

/// Counts distinct 64-bit hashes within a memory budget: a set while it fits, then sorted runs
/// on disk (``SpilledSort``) counted in one merge. The pipeline counts a bounded build's
/// distinct labels this way.
package final class DistinctHashes {
    private var inMemory = Set<UInt64>()
    private var sort: SpilledSort? = nil
    private let budget: Int
    private let scratch: SpillArea

    /// A counter keeping to about `memoryBytes`, spilling to `scratch` beyond it.
    package init(memoryBytes: Int, scratch: SpillArea) {
        budget = max(memoryBytes, 1)
        self.scratch = scratch
    }

    /// Bytes the set takes (its buckets and their metadata).
    private var inMemoryBytes: Int { inMemory.capacity &* 9 }

    package func insert(_ hash: UInt64) throws(CallerIDError) {
        inMemory.insert(hash)
        if inMemoryBytes >= budget / 2 { try spillInMemory() }
    }

    private func spillInMemory() throws(CallerIDError) {
        let sort = self.sort ?? SpilledSort(in: scratch, bufferBytes: budget / 2)
        self.sort = sort
        for h in inMemory { try sort.add(h) { _ in } }
        inMemory = []
    }

    /// The number of distinct hashes inserted.
    package func count() throws(CallerIDError) -> Int {
        guard sort != nil else { return inMemory.count }
        try spillInMemory()
        var rows = try sort!.sorted()
        var distinct = 0
        var last: UInt64? = nil
        while try rows.next({ (key, _) throws(CallerIDError) in
            if key != last { distinct += 1 }
            last = key
        }) {}
        return distinct
    }
}
