import CallerID

/// The answers of a set of packs to numbers: for each number an entry in any pack first (the
/// earlier pack first), then a range (the earlier first), written as TSV or JSON. Only the packs
/// whose manifest bounds can hold a number are asked (``PackSet``): the answer is the one
/// asking every pack gives.
///
/// Numbers are answered together (the lines of one read of a batch, or a query's one number):
/// pack by pack, each pack's numbers in ascending order, so that a pack's tables and blocks are
/// used while they are in the caches — asked line by line, 217 packs' decode tables take turns
/// in the caches and a batch costs 2.4× one file's (BENCHMARKS.md, "Queries over many packs").
/// The answers are rendered as they are found and written in input order by ``write(_:of:to:)``.
struct QueryAnswers {
    let packs: PackSet
    let json: Bool

    /// The answers to some numbers: `spans[k]`, the bytes of number `k`'s answer in `text`
    /// (nil: not found). Kept from one batch of lines to the next (its memory is reused).
    struct Answers {
        fileprivate(set) var text = Output(capturing: true)
        fileprivate(set) var spans: [Range<Int>?] = []
    }

    /// How many numbers ``answer(_:into:)`` takes at once.
    static let maxNumbers = 1 << 14

    /// Answers `numbers` (at most ``maxNumbers``) into `answers`. Throws the first error met
    /// (a pack that cannot be opened, damage, a file changed in place), which need not be that
    /// of the earliest number: a caller that must write the answers before a failing number
    /// answers one number at a time.
    func answer(_ numbers: [UInt64], into answers: inout Answers) throws(ToolError) {
        precondition(numbers.count <= Self.maxNumbers)
        answers.text.removeAll()
        answers.spans.removeAll(keepingCapacity: true)
        answers.spans.append(contentsOf: repeatElement(nil, count: numbers.count))
        var batch = Batch(numbers)
        let all = Array(batch.numbers.indices)
        if packs.count == 1 {
            // One database: its own precedence (a numbering plan answers from its ranges
            // without an entry lookup where no entry lies inside them).
            try ask(pack: 0, all[...], &batch, into: &answers) { (db, n, body) throws(CallerIDError) in try db.withAnswer(n, body) }
            return
        }
        try ask(all, &batch, packs.entryIndex, ranges: false, into: &answers)
        try ask(all.filter { !batch.found[$0] }, &batch, packs.rangeIndex, ranges: true, into: &answers)
    }

    /// The numbers in ascending order, worked on by their place `j` in that order (the arrays
    /// indexed by it are read in order: fewer cache misses than by line).
    private struct Batch {
        /// Ascending.
        var numbers: [UInt64]
        /// The line (index in the numbers given) of each.
        var lines: [Int]
        /// Answered yet.
        var found: [Bool]

        /// A sort of the numbers with their lines in the low 14 bits (E.164 numbers have at
        /// most 15 digits, under 2^50), or of the lines by number for larger ones.
        init(_ given: [UInt64]) {
            if given.allSatisfy({ $0 < 1 << 50 }) {
                var keys = given.indices.map { given[$0] << 14 | UInt64($0) }
                keys.sort()
                numbers = keys.map { $0 >> 14 }
                lines = keys.map { Int($0 & 0x3FFF) }
            } else {
                lines = given.indices.sorted { given[$0] < given[$1] }
                numbers = lines.map { given[$0] }
            }
            found = Array(repeating: false, count: given.count)
        }
    }

    /// Asks the numbers at places `order` (ascending) of their candidates in `index`, in
    /// precedence order: each round asks every number not yet answered its next candidate,
    /// grouped by pack (a stable counting sort keeps each group ascending).
    private func ask(_ order: [Int], _ batch: inout Batch, _ index: PackIndex, ranges: Bool, into answers: inout Answers) throws(ToolError) {
        // Each number's candidates (`index.members[first[j] ..< end[j]]`), found once; `first[j]`
        // moves past each candidate asked.
        var first = [Int](repeating: 0, count: batch.numbers.count), end = first
        for j in order {
            let c = index.candidates(batch.numbers[j])
            first[j] = c.startIndex
            end[j] = c.endIndex
        }
        var waiting = order, still: [Int] = [], next: [Int] = []
        var start = [Int](repeating: 0, count: packs.count + 1), fill = start
        var grouped = [Int](repeating: 0, count: order.count)
        while !waiting.isEmpty {
            still.removeAll(keepingCapacity: true)
            next.removeAll(keepingCapacity: true)
            for i in start.indices { start[i] = 0 }
            for j in waiting where first[j] < end[j] {  // none left: not found here
                let p = index.members[first[j]]
                first[j] += 1
                still.append(j)
                next.append(p)
                start[p + 1] += 1
            }
            for p in 0..<packs.count { start[p + 1] += start[p] }
            for i in start.indices { fill[i] = start[i] }
            for (j, p) in zip(still, next) {
                grouped[fill[p]] = j
                fill[p] += 1
            }
            for p in 0..<packs.count where start[p] < start[p + 1] {
                if ranges {
                    try ask(pack: p, grouped[start[p]..<start[p + 1]], &batch, into: &answers) { (db, n, body) throws(CallerIDError) in
                        db.rangeCount > 0 ? try db.withRange(n, body) : nil
                    }
                } else {
                    try ask(pack: p, grouped[start[p]..<start[p + 1]], &batch, into: &answers) { (db, n, body) throws(CallerIDError) in
                        try db.withEntry(n, body)
                    }
                }
            }
            waiting.removeAll(keepingCapacity: true)
            for j in still where !batch.found[j] { waiting.append(j) }
        }
    }

    /// Asks pack `p` for the numbers at places `group` (`find`: `withEntry`, `withRange` or
    /// `withAnswer`); a found answer is rendered as its line's.
    private func ask(pack p: Int, _ group: ArraySlice<Int>, _ batch: inout Batch, into answers: inout Answers,
                     _ find: (Database, UInt64, (EntryView) -> Void) throws(CallerIDError) -> Void?) throws(ToolError) {
        var from = group.startIndex
        while from < group.endIndex {
            let to = min(from + PackSet.checkEvery, group.endIndex)
            let db = try packs.database(p, lookups: to - from)
            do {
                for j in group[from..<to] {
                    _ = try find(db, batch.numbers[j]) { view in
                        let start = answers.text.count
                        writeAnswer(view, json: json, to: &answers.text)
                        answers.spans[batch.lines[j]] = start..<answers.text.count
                        batch.found[j] = true
                    }
                }
            } catch {
                throw toolError(error)
            }
            from = to
        }
    }

    /// Writes the answer to `numbers[k]` of `answers`; true when found.
    func write(_ k: Int, of numbers: [UInt64], from answers: Answers, to out: inout Output) -> Bool {
        if let span = answers.spans[k] {
            out.write(from: answers.text, span)
            return true
        }
        out.write(json ? "{\"number\":\(numbers[k]),\"found\":false}\n" : "\(numbers[k])\t-\n")
        return false
    }
}
