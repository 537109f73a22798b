package import CallerID

/// The answers of a set of packs to numbers, as the phone gives them (``AnswerRule``): a
/// number the merged blocking list holds is answered blocked (the blocking entry's category,
/// the identifying label where an entry identifies it), one the identification list holds is
/// answered with its label; a number in neither is answered by a range (the earlier pack
/// first) when one holds it. Only the packs whose manifest bounds can hold a number are asked
/// (``PackSet``): the answer is the one asking every pack gives.
///
/// Numbers are answered together (the lines of one read of a batch, or a query's one number):
/// pack by pack, each pack's numbers in ascending order, so that a pack's tables and blocks are
/// used while they are in the caches — asked line by line, 217 packs' decode tables take turns
/// in the caches and a batch costs 2.4× one file's (BENCHMARKS.md, "Queries over many packs").
/// The answers are rendered as they are found and written in input order by ``write(_:of:to:)``.
package struct QueryAnswers {
    package let packs: PackSet
    package let format: AnswerFormat

    package init(packs: PackSet, format: AnswerFormat) {
        self.packs = packs
        self.format = format
    }

    /// The answers to some numbers: `spans[k]`, the bytes of number `k`'s answer in `text`
    /// (nil: not found). Kept from one batch of lines to the next (its memory is reused).
    package struct Answers {
        fileprivate(set) var text: Output
        fileprivate(set) var spans: [Range<Int>?] = []

        /// - Parameter capacity: bytes of answers reserved at first (one answer takes a few hundred).
        package init(capacity: Int = 1 << 16) { text = Output(capturing: true, capacity: capacity) }
    }

    /// How many numbers ``answer(_:into:)`` takes at once.
    package static let maxNumbers = 1 << 14

    /// Answers `numbers` (at most ``maxNumbers``) into `answers`. Throws the first error met
    /// (a pack that cannot be opened, damage, a file changed in place), which need not be that
    /// of the earliest number: a caller that must write the answers before a failing number
    /// answers one number at a time.
    package func answer(_ numbers: [UInt64], into answers: inout Answers) throws(QueryError) {
        precondition(numbers.count <= Self.maxNumbers)
        answers.text.removeAll()
        answers.spans.removeAll(keepingCapacity: true)
        answers.spans.append(contentsOf: repeatElement(nil, count: numbers.count))
        var batch = Batch(numbers)
        let all = Array(batch.numbers.indices)
        if packs.count == 1 && packs.rule.isDefault {
            // One database: its own precedence (a numbering plan answers from its ranges
            // without an entry lookup where no entry lies inside them); one entry a number.
            try ask(pack: 0, all[...], .answer, &batch, into: &answers)
            return
        }
        try ask(all, &batch, packs.entryIndex, ranges: false, into: &answers)
        var rest: [Int] = []
        batch.labels.withUnsafeBytes { labels in
            for j in all where !decide(j, batch, labels, into: &answers) { rest.append(j) }
        }
        try ask(rest, &batch, packs.rangeIndex, ranges: true, into: &answers)
    }

    /// An entry that takes part in a number's answer: its pack, category and label (a copy,
    /// `Batch.labels[label]`).
    private struct Pick {
        package var pack: Int
        package var category: Category
        package var label: Range<Int>
    }

    /// The numbers in ascending order, worked on by their place `j` in that order (the arrays
    /// indexed by it are read in order: fewer cache misses than by line).
    private struct Batch {
        /// Ascending.
        package var numbers: [UInt64]
        /// The line (index in the numbers given) of each.
        package var lines: [Int]
        /// Answered yet (a range, or one pack's answer).
        package var found: [Bool]
        /// The first identifying and the first blocking entry of each number, in precedence
        /// order among the packs whose sets feed that list.
        package var identifying: [Pick?]
        package var blocking: [Pick?]
        /// The picks' labels.
        package var labels: [UInt8] = []

        /// A sort of the numbers with their lines in the low 14 bits (E.164 numbers have at
        /// most 15 digits, under 2^50), or of the lines by number for larger ones.
        package init(_ given: [UInt64]) {
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
            identifying = Array(repeating: nil, count: given.count)
            blocking = identifying
        }

        /// Whether pack `p` may still add to number `j`'s answer under `rule`.
        package func wants(_ j: Int, _ p: Int, _ rule: AnswerRule) -> Bool {
            (identifying[j] == nil && rule.identifies(p)) || (blocking[j] == nil && rule.blocks(p))
        }

        /// Keeps `view` as number `j`'s identifying or blocking entry of pack `p`, when it is
        /// the first of its list.
        package mutating func take(_ view: borrowing EntryView, _ j: Int, pack p: Int, _ rule: AnswerRule) {
            let category = view.category
            let isBlock = category.action == .block
            guard isBlock ? blocking[j] == nil && rule.blocks(p) : identifying[j] == nil && rule.identifies(p) else { return }
            let start = labels.count
            labels.append(contentsOf: view.labelBytes)
            let pick = Pick(pack: p, category: category, label: start..<labels.count)
            if isBlock { blocking[j] = pick } else { identifying[j] = pick }
        }
    }

    /// Renders number `j`'s answer from its picks when the phone blocks or identifies it;
    /// false when it does neither (a range may answer).
    private func decide(_ j: Int, _ batch: Batch, _ labels: UnsafeRawBufferPointer, into answers: inout Answers) -> Bool {
        let rule = packs.rule, n = batch.numbers[j]
        let identifying = batch.identifying[j], blocking = batch.blocking[j]
        var category: Category, match: AnswerMatch = .entry
        if !rule.allows(n), let b = blocking, rule.blocks(b.pack, category: b.category) {
            category = b.category
        } else if !rule.allows(n), let r = rule.rule(holding: n) {
            category = .block
            match = .rule(r.lowerBound, r.upperBound)
        } else if let i = identifying {
            category = i.category
        } else {
            return false
        }
        // The label the phone shows: the identifying entry's, else the blocking entry's.
        var label = 0..<0
        if let i = identifying {
            label = i.label
        } else if let b = blocking, category.action == .block, case .entry = match {
            label = b.label
        }
        let start = answers.text.count
        writeAnswer(number: n, label: UnsafeRawBufferPointer(rebasing: labels[label]), category: category, match: match,
                    format: format, to: &answers.text)
        answers.spans[batch.lines[j]] = start..<answers.text.count
        return true
    }

    /// Renders a pack's own answer (one pack, or a range) as number `j`'s.
    private func render(_ view: borrowing EntryView, _ j: Int, _ batch: inout Batch, into answers: inout Answers) {
        let start = answers.text.count
        writeAnswer(view, format: format, to: &answers.text)
        answers.spans[batch.lines[j]] = start..<answers.text.count
        batch.found[j] = true
    }

    /// Asks the numbers at places `order` (ascending) of their candidates in `index`, in
    /// precedence order: each round asks every number not yet settled its next candidate that
    /// may add to its answer, grouped by pack (a stable counting sort keeps each group
    /// ascending). Entries (`ranges` false): every candidate is asked until the number has an
    /// identifying and a blocking entry (or its candidates run out). Ranges: the first range
    /// that holds the number answers.
    private func ask(_ order: [Int], _ batch: inout Batch, _ index: PackIndex, ranges: Bool, into answers: inout Answers) throws(QueryError) {
        let rule = packs.rule
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
            for j in waiting {
                if !ranges {
                    while first[j] < end[j] && !batch.wants(j, index.members[first[j]], rule) { first[j] += 1 }
                }
                guard first[j] < end[j] else { continue }  // none left: settled as it is
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
                try ask(pack: p, grouped[start[p]..<start[p + 1]], ranges ? .range : .entry, &batch, into: &answers)
            }
            waiting.removeAll(keepingCapacity: true)
            for j in still where !batch.found[j] && (ranges || batch.identifying[j] == nil || batch.blocking[j] == nil) {
                waiting.append(j)
            }
        }
    }

    /// What a pack is asked for.
    private enum Question {
        /// Its own answer (one pack's precedence: an entry, else a range), rendered.
        case answer
        /// An entry, kept as an identifying or blocking pick.
        case entry
        /// A range, rendered.
        case range
    }

    /// Asks pack `p` the `question` for the numbers at places `group`.
    private func ask(pack p: Int, _ group: ArraySlice<Int>, _ question: Question, _ batch: inout Batch,
                     into answers: inout Answers) throws(QueryError) {
        let rule = packs.rule
        var from = group.startIndex
        while from < group.endIndex {
            let to = min(from + PackSet.checkEvery, group.endIndex)
            let db = try packs.database(p, lookups: to - from)
            do {
                for j in group[from..<to] {
                    let n = batch.numbers[j]
                    switch question {
                    case .answer:
                        _ = try db.withAnswer(n) { view in render(view, j, &batch, into: &answers) }
                    case .entry:
                        _ = try db.withEntry(n) { view in batch.take(view, j, pack: p, rule) }
                    case .range:
                        guard db.rangeCount > 0 else { continue }
                        _ = try db.withRange(n) { view in render(view, j, &batch, into: &answers) }
                    }
                }
            } catch {
                // A read that faulted past the end of a cut-short file is why, if one did.
                try packs.confirm(p, db)
                throw QueryError(passingOn: error)
            }
            // What was read is kept only when every read of the pack read its file.
            try packs.confirm(p, db)
            from = to
        }
    }

    /// Writes the answer of a number that could not be answered because a database file it
    /// needs changed (`error`): `{"number":…,"found":false,"error":…}`, or in text the line of a
    /// number not found (`NUMBER<TAB>-`; the caller says why on stderr).
    package func writeUnanswered(_ number: UInt64, _ error: QueryError, to out: inout Output) {
        switch format {
        case .json: out.write("{\"number\":\(number),\"found\":false,\"error\":\(jsonQuote(error.message))}\n")
        case .text: out.write("\(number)\t-\n")
        case .callerName: break
        }
    }

    /// Writes the answer to `numbers[k]` of `answers`; true when found.
    package func write(_ k: Int, of numbers: [UInt64], from answers: Answers, to out: inout Output) -> Bool {
        if let span = answers.spans[k] {
            out.write(from: answers.text, span)
            return true
        }
        switch format {
        case .json: out.write("{\"number\":\(numbers[k]),\"found\":false}\n")
        case .text: out.write("\(numbers[k])\t-\n")
        case .callerName: break
        }
        return false
    }
}
