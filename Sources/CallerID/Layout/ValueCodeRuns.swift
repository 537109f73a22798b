// The value code's lengths from a histogram of the frequencies, for a writer that never holds
// one frequency per value (the bounded-memory build with more distinct labels than fit in its
// memory). The same counts as `valueCodeLengthCounts(frequencies:)`, which builds the Huffman
// tree one value at a time.
//
// The two-queue method takes the leaves in ascending weight and the nodes it made in the order
// it made them (their weights never decrease), a leaf first on a tie. Equal weights come in
// runs, and a run of leaves (or of nodes made alike) is paired in one step: 2k picks from one
// run make k equal nodes, appended as one run. A node run keeps, instead of a tree, how many
// leaves lie at each depth below one of its nodes; the root's is the leaves' depths. Where the
// queues' heads break a run (an odd item left, a leaf and a node paired) one pair is made alone,
// as the element-wise method would. Memory and time grow with the number of distinct
// frequencies (at most √(2 × entries)), times the tree's depth, not with the values.

/// `counts[len]` of ``valueCodeLengthCounts(frequencies:)`` for the values whose frequencies
/// `histogram` gives as (frequency, how many values have it), in any order: the same counts,
/// without one entry per value. Frequencies below 1 count as 1, as there.
func valueCodeLengthCounts(histogram: [(frequency: Int, values: Int)]) -> [Int] {
    let limit = Format.maxCodeLength
    var counts = [Int](repeating: 0, count: limit + 1)
    var leaves: [(weight: Int, count: Int)] = []
    for (f, m) in histogram.sorted(by: { $0.frequency < $1.frequency }) where m > 0 {
        let w = max(f, 1)
        if let last = leaves.last, last.weight == w { leaves[leaves.count - 1].count += m } else { leaves.append((w, m)) }
    }
    let n = leaves.reduce(0) { $0 + $1.count }
    if n <= 1 { return counts }  // zero or one symbol: a zero-bit code
    precondition(n <= 1 << limit, "too many values for the code length limit")

    /// Nodes of one weight and one shape: `depths[d]` leaves at depth d below each.
    struct NodeRun {
        var weight: Int
        var count: Int
        var depths: [Int]
    }
    var queue: [NodeRun] = []
    var head = 0  // the queue's first run (runs before it are used up)
    var leaf = 0  // the first leaf run with leaves left
    var nodesLeft = 0
    var leavesLeft = n

    /// One node above items of `a` and `b`'s shapes, `count` times, at the queue's end.
    func push(weight: Int, count: Int, _ a: [Int], _ b: [Int]) {
        var depths = [Int](repeating: 0, count: max(a.count, b.count) + 1)
        for (d, k) in a.enumerated() { depths[d + 1] += k }
        for (d, k) in b.enumerated() { depths[d + 1] += k }
        if let last = queue.last, queue.count > head, last.weight == weight, last.depths == depths {
            queue[queue.count - 1].count += count
        } else {
            queue.append(NodeRun(weight: weight, count: count, depths: depths))
        }
        nodesLeft += count
    }
    /// True when the next pick is a leaf (the element-wise rule: a leaf on a tie).
    func leafNext() -> Bool {
        leavesLeft > 0 && (nodesLeft == 0 || leaves[leaf].weight <= queue[head].weight)
    }
    /// Takes one item: its weight and shape.
    func pick() -> (weight: Int, depths: [Int]) {
        if leafNext() {
            let w = leaves[leaf].weight
            leaves[leaf].count -= 1
            leavesLeft -= 1
            if leaves[leaf].count == 0 { leaf += 1 }
            return (w, [1])
        }
        let run = queue[head]
        queue[head].count -= 1
        nodesLeft -= 1
        if queue[head].count == 0 { head += 1 }
        return (run.weight, run.depths)
    }

    while leavesLeft + nodesLeft > 1 {
        if leafNext() && leaves[leaf].count >= 2 {
            // Leaves of one weight x, the node at the head (if any) ≥ x: each pick is a leaf of
            // this run, and the nodes made (2x) go behind every node there is.
            let k = leaves[leaf].count / 2
            let w = leaves[leaf].weight
            leaves[leaf].count -= 2 * k
            leavesLeft -= 2 * k
            if leaves[leaf].count == 0 { leaf += 1 }
            push(weight: 2 * w, count: k, [1], [1])
        } else if !leafNext() && queue[head].count >= 2 {
            // Nodes of one run lighter than the next leaf: each pick is a node of this run.
            let run = queue[head]
            let k = run.count / 2
            queue[head].count -= 2 * k
            nodesLeft -= 2 * k
            if queue[head].count == 0 { head += 1 }
            push(weight: 2 * run.weight, count: k, run.depths, run.depths)
        } else {
            let a = pick(), b = pick()
            push(weight: a.weight + b.weight, count: 1, a.depths, b.depths)
        }
        // Used-up runs are dropped now and then (the queue is read from `head`).
        if head > 1024 && head * 2 > queue.count {
            queue.removeFirst(head)
            head = 0
        }
    }
    for (d, k) in queue[head].depths.enumerated() { counts[min(d, limit)] += k }
    repayKraftDebt(&counts, limit: limit)
    return counts
}

/// The canonical code of ids whose code lengths never decrease with the id (the value code),
/// from the counts per length alone: id → (code, length) by arithmetic, without a table per id.
struct CanonicalValueCode {
    /// The first id and the first code of each length (index = length).
    private var firstId: [Int] = []
    private var firstCode: [UInt32] = []
    /// The ids of each length end here (exclusive).
    private var endId: [Int] = []
    /// More than one value: the entries carry codes (one value: a zero-bit code).
    let coded: Bool

    init(counts: [Int]) {
        var code: UInt32 = 0
        var id = 0
        for len in 0..<counts.count {
            if len > 0 { code <<= 1 }
            firstId.append(id)
            firstCode.append(code)
            id += len == 0 ? 0 : counts[len]
            code &+= len == 0 ? 0 : UInt32(truncatingIfNeeded: counts[len])
            endId.append(id)
        }
        coded = id > 1
    }

    /// Id `id`'s code and its length in bits.
    @inline(__always)
    func code(_ id: Int) -> (code: UInt32, length: Int) {
        var len = 1
        while id >= endId[len] { len &+= 1 }
        return (firstCode[len] &+ UInt32(truncatingIfNeeded: id &- firstId[len]), len)
    }
}
