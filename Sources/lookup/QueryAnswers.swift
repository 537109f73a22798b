import CallerID

/// The answers of a set of packs to numbers: for each number an entry in any pack first (the
/// earlier pack first), then a range (the earlier first), written as TSV or JSON. Only the packs
/// whose manifest bounds can hold a number are asked (``PackSet``): the answer is the one
/// asking every pack gives.
///
/// Numbers are answered together (the lines of one read of a batch, or a query's one number):
/// pack by pack, each pack's numbers in ascending order, so that a pack's tables and blocks are
/// used while they are in the caches — asked line by line, 217 packs' decode tables take turns
/// in the caches and a batch costs 2.5× one file's (BENCHMARKS.md, "Queries over many packs").
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
        let order = ascending(numbers)
        if packs.count == 1 {
            // One database: its own precedence (a numbering plan answers from its ranges
            // without an entry lookup where no entry lies inside them).
            try ask(pack: 0, order[...], numbers, into: &answers) { (db, n, body) throws(CallerIDError) in try db.withAnswer(n, body) }
            return
        }
        try ask(order, numbers, packs.entryIndex, ranges: false, into: &answers)
        try ask(order.filter { answers.spans[$0] == nil }, numbers, packs.rangeIndex, ranges: true, into: &answers)
    }

    /// The indices of `numbers` in ascending order of the numbers (a sort of the numbers with
    /// their indices in the low 14 bits: E.164 numbers have at most 15 digits, under 2^50).
    private func ascending(_ numbers: [UInt64]) -> [Int] {
        guard numbers.count > 1 else { return Array(numbers.indices) }
        guard numbers.allSatisfy({ $0 < 1 << 50 }) else { return numbers.indices.sorted { numbers[$0] < numbers[$1] } }
        var keys = numbers.indices.map { numbers[$0] << 14 | UInt64($0) }
        keys.sort()
        return keys.map { Int($0 & 0x3FFF) }
    }

    /// Asks the numbers `order` (indices into `numbers`, ascending by number) of their
    /// candidates in `index`, in precedence order: each round asks every number not yet
    /// answered its next candidate, grouped by pack (a stable counting sort keeps each group
    /// ascending).
    private func ask(_ order: [Int], _ numbers: [UInt64], _ index: PackIndex, ranges: Bool, into answers: inout Answers) throws(ToolError) {
        // Each number's candidates (`index.members[first[k] ..< end[k]]`), found once; `first[k]`
        // moves past each candidate asked.
        var first = [Int](repeating: 0, count: numbers.count), end = first
        for k in order {
            let c = index.candidates(numbers[k])
            first[k] = c.startIndex
            end[k] = c.endIndex
        }
        var waiting = order, still: [Int] = [], next: [Int] = []
        var start = [Int](repeating: 0, count: packs.count + 1), fill = start
        var grouped = [Int](repeating: 0, count: order.count)
        while !waiting.isEmpty {
            still.removeAll(keepingCapacity: true)
            next.removeAll(keepingCapacity: true)
            for i in start.indices { start[i] = 0 }
            for k in waiting where first[k] < end[k] {  // none left: not found here
                let p = index.members[first[k]]
                first[k] += 1
                still.append(k)
                next.append(p)
                start[p + 1] += 1
            }
            for p in 0..<packs.count { start[p + 1] += start[p] }
            for i in start.indices { fill[i] = start[i] }
            for (k, p) in zip(still, next) {
                grouped[fill[p]] = k
                fill[p] += 1
            }
            for p in 0..<packs.count where start[p] < start[p + 1] {
                if ranges {
                    try ask(pack: p, grouped[start[p]..<start[p + 1]], numbers, into: &answers) { (db, n, body) throws(CallerIDError) in
                        db.rangeCount > 0 ? try db.withRange(n, body) : nil
                    }
                } else {
                    try ask(pack: p, grouped[start[p]..<start[p + 1]], numbers, into: &answers) { (db, n, body) throws(CallerIDError) in
                        try db.withEntry(n, body)
                    }
                }
            }
            waiting.removeAll(keepingCapacity: true)
            for k in still where answers.spans[k] == nil { waiting.append(k) }
        }
    }

    /// Asks pack `p` for the numbers `group` (`find`: `withEntry`, `withRange` or
    /// `withAnswer`); a found answer is rendered as that number's.
    private func ask(pack p: Int, _ group: ArraySlice<Int>, _ numbers: [UInt64], into answers: inout Answers,
                     _ find: (Database, UInt64, (EntryView) -> Void) throws(CallerIDError) -> Void?) throws(ToolError) {
        var from = group.startIndex
        while from < group.endIndex {
            let to = min(from + PackSet.checkEvery, group.endIndex)
            let db = try packs.database(p, lookups: to - from)
            do {
                for k in group[from..<to] {
                    _ = try find(db, numbers[k]) { view in
                        let start = answers.text.count
                        writeAnswer(view, json: json, to: &answers.text)
                        answers.spans[k] = start..<answers.text.count
                    }
                }
            } catch {
                throw ToolError(code: exitCode(for: error), message: error.message)
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
