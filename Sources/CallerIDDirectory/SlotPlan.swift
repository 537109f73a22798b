import CallerID

/// How the merged entries are split across the app's extensions ("slots"): each slot loads
/// both lists for one contiguous range of numbers, at most ``maxEntries`` entries (both lists
/// together). The ranges tile 0 … `UInt64.max` in order, so every entry is in exactly one slot.
///
/// Two ways to make one, both deterministic (same inputs, same plan):
/// - ``make(_:slots:maxEntries:)``: balanced, each slot about total ÷ slots entries (one more
///   at most, a number in both lists is never split), so every extension keeps head room for
///   updates. Reads the merged stream twice without labels.
/// - ``stable(_:generation:after:slots:maxEntries:)``: what an install uses: the previous
///   generation's boundaries, kept wherever the slots still fit, so a slot whose entries did not
///   change is not reloaded (``Split``); balanced for a store's first generation.
///
/// An install stores the plan in the generation (`plan.json`), with, per slot, the generations
/// since which its bounds and its entries are the same (``Slot/boundsSince``,
/// ``Slot/contentSince``): what an app reads to reload only the extensions that need it
/// (``isLoaded(slot:by:)``).
public struct SlotPlan: Sendable, Equatable, Codable {
    public struct Slot: Sendable, Equatable, Codable {
        /// Numbers `lowerBound ..< upperBound` belong to this slot.
        public var lowerBound: UInt64
        public var upperBound: UInt64
        public var identification: Int
        public var blocking: Int
        /// The first generation since which this slot (this index: extension *i*) has had these
        /// bounds, every generation since included; nil in a plan no install made
        /// (``make(_:slots:maxEntries:)``, a plan made anew for a feed) or written before this
        /// field existed.
        public var boundsSince: UInt64?
        /// The first generation since which this slot has had these bounds and the same entries
        /// (numbers, lists, labels), every generation since included: an extension that loaded
        /// this slot of any generation from `contentSince` on holds exactly its entries. Never
        /// before ``boundsSince``; nil as there.
        public var contentSince: UInt64?

        public init(lowerBound: UInt64, upperBound: UInt64, identification: Int, blocking: Int,
                    boundsSince: UInt64? = nil, contentSince: UInt64? = nil) {
            self.lowerBound = lowerBound
            self.upperBound = upperBound
            self.identification = identification
            self.blocking = blocking
            self.boundsSince = boundsSince
            self.contentSince = contentSince
        }

        public var range: Range<UInt64> { lowerBound..<upperBound }
        /// Entries of this slot, both lists.
        public var count: Int { identification + blocking }

        enum CodingKeys: String, CodingKey {
            case lowerBound = "lower_bound", upperBound = "upper_bound", identification = "identify", blocking = "block"
            case boundsSince = "bounds_since", contentSince = "content_since"
        }
    }

    /// How ``stable(_:generation:after:slots:maxEntries:)`` made a plan.
    public enum Split: String, Sendable, Codable {
        /// Balanced afresh: no previous plan (a store's first install, or a previous generation
        /// whose plan cannot be read).
        case balanced
        /// Every slot kept the previous generation's bounds.
        case kept
        /// Some boundaries moved (a slot overflowed: it and the fewest neighbours were split
        /// anew), or slots were added or removed at the fewest places; the others kept theirs.
        case adjusted
        /// Every boundary placed anew over the whole number line: nothing else fitted.
        case rebalanced
    }

    public var maxEntries: Int
    public var slots: [Slot]
    /// The generation this plan was made for; nil for a plan no install made.
    public var generation: UInt64?
    /// How the plan was made; nil for a plan no install made.
    public var split: Split?

    public init(maxEntries: Int, slots: [Slot], generation: UInt64? = nil, split: Split? = nil) {
        self.maxEntries = maxEntries
        self.slots = slots
        self.generation = generation
        self.split = split
    }

    enum CodingKeys: String, CodingKey {
        case maxEntries = "max_entries", slots, generation, split
    }

    /// Entries of all slots.
    public var count: Int { slots.reduce(0) { $0 + $1.count } }

    /// True when slot `i` has other bounds than in the previous generation (or a new index):
    /// its extension loads another range. True when unknown.
    public func boundsChanged(slot i: Int) -> Bool {
        guard let generation, let since = slots[i].boundsSince else { return true }
        return since >= generation
    }

    /// True when slot `i`'s entries or bounds differ from the previous generation's: its
    /// extension has something to load. True when unknown.
    public func contentChanged(slot i: Int) -> Bool {
        guard let generation, let since = slots[i].contentSince else { return true }
        return since >= generation
    }

    /// True when an extension whose last complete load left `cursor` holds exactly slot `i`'s
    /// entries of this plan's generation: the cursor's range is the slot's, and its generation
    /// is this one or one since ``Slot/contentSince``. Such an extension needs no reload
    /// (`CXCallDirectoryManager.reloadExtension`); a request to it would send nothing.
    public func isLoaded(slot i: Int, by cursor: LoadCursor) -> Bool {
        cursor.isComplete && holdsSameEntries(slot: i, as: cursor.target)
    }

    /// True when `version` (a generation's entries in a range) is slot `i` of this plan with the
    /// same entries.
    func holdsSameEntries(slot i: Int, as version: LoadCursor.Version) -> Bool {
        guard slots.indices.contains(i), let generation else { return false }
        let s = slots[i]
        guard version.lowerBound == s.lowerBound, version.upperBound == s.upperBound else { return false }
        if version.generation == generation { return true }
        guard let since = s.contentSince else { return false }
        return since <= version.generation && version.generation < generation
    }

    // MARK: Balanced

    /// Splits `snapshot`'s entries across `slots` extensions of at most `maxEntries` each,
    /// balanced.
    /// - Throws: ``DirectoryError/Code-swift.struct/budgetExceeded`` when they do not fit, with
    ///   the counts and the share of the blocking rules in the message.
    public static func make(_ snapshot: DirectorySnapshot, slots: Int, maxEntries: Int) throws(DirectoryError) -> SlotPlan {
        try checkArguments(slots: slots, maxEntries: maxEntries)
        // Pass 1: totals.
        var totals = Totals()
        var walk = NumberWalk(snapshot)
        while let step = try walk.next() { totals.add(step) }
        try totals.checkCapacity(snapshot, slots: slots, maxEntries: maxEntries)
        return SlotPlan(maxEntries: maxEntries, slots: try balanced(snapshot, totals, slots: slots, maxEntries: maxEntries))
    }

    /// The balanced slots: slot k closes before the number that would take the running total
    /// past ⌈(k+1)·total/slots⌉ or the slot past maxEntries. Should a number in both lists make
    /// that need one slot too many, greedy filling to maxEntries (the fewest slots possible)
    /// decides.
    private static func balanced(_ snapshot: DirectorySnapshot, _ totals: Totals, slots: Int, maxEntries: Int) throws(DirectoryError) -> [Slot] {
        let all = 0..<UInt64.max
        if let s = try split(snapshot, all, slots: slots, maxEntries: maxEntries, total: totals.total, balanced: true) { return s }
        if let s = try split(snapshot, all, slots: slots, maxEntries: maxEntries, total: totals.total, balanced: false) { return s }
        throw totals.refusal(snapshot, "do not split into \(slots) extensions of at most \(grouped(maxEntries)) (a number in both lists is never split)")
    }

    /// The entries of `range` (`total` of them) in `slots` contiguous slots that tile it, balanced
    /// or filled greedily; nil when they do not fit. Slots left over are empty, at the range's end.
    private static func split(_ snapshot: DirectorySnapshot, _ range: Range<UInt64>, slots: Int, maxEntries: Int, total: Int,
                              balanced: Bool) throws(DirectoryError) -> [Slot]? {
        var out: [Slot] = []
        var current = Slot(lowerBound: range.lowerBound, upperBound: range.lowerBound, identification: 0, blocking: 0)
        var before = 0   // entries in closed slots
        var walk = NumberWalk(snapshot, range: range)
        while let step = try walk.next() {
            let w = (step.identification ? 1 : 0) + (step.blocking ? 1 : 0)
            let k = out.count
            let target = balanced ? (total * (k + 1) + slots - 1) / slots : Int.max
            if current.count > 0 && (before + current.count + w > target || current.count + w > maxEntries) {
                guard k + 1 < slots else { return nil }
                current.upperBound = step.number
                out.append(current)
                before += current.count
                current = Slot(lowerBound: step.number, upperBound: step.number, identification: 0, blocking: 0)
            }
            if step.identification { current.identification += 1 }
            if step.blocking { current.blocking += 1 }
        }
        guard current.count <= maxEntries else { return nil }
        while out.count < slots {
            current.upperBound = range.upperBound
            out.append(current)
            current = Slot(lowerBound: range.upperBound, upperBound: range.upperBound, identification: 0, blocking: 0)
        }
        return out
    }

    // MARK: Stable

    /// The generation a new plan follows: its plan and, to tell which slots' entries changed,
    /// its databases.
    public struct Previous: Sendable {
        public var generation: UInt64
        public var plan: SlotPlan
        /// The previous generation's databases with its settings; nil when they cannot be read
        /// (every slot then counts as changed).
        public var snapshot: DirectorySnapshot?

        public init(generation: UInt64, plan: SlotPlan, snapshot: DirectorySnapshot?) {
            self.generation = generation
            self.plan = plan
            self.snapshot = snapshot
        }

        /// Generation `g` of a store as a plan's predecessor: nil when there is none or its
        /// plan cannot be read; its databases nil when they cannot be opened (a file lost).
        static func read(_ g: InstalledStore.Generation?) -> Previous? {
            guard let g, let plan = try? InstalledStore.readPlan(g) else { return nil }
            return Previous(generation: g.id, plan: plan, snapshot: try? DirectorySnapshot(directory: g.path))
        }
    }

    /// The plan of generation `generation` (entries: `snapshot`), made from the previous
    /// generation's plan so that the slots change only where they must. Every install makes
    /// its plan here.
    ///
    /// - Every slot that still fits keeps its bounds (``Split/kept``).
    /// - Where a slot overflows, or the number of slots changed, the fewest slots are split
    ///   anew (balanced among themselves), preferring the ones with fewest entries: a slot that
    ///   overflows shares with the neighbour that has room; an added slot splits the last one
    ///   (slots keep their index: extension *i* feeds slot *i*, so a slot added or removed in
    ///   the middle would move every slot after it); a removed slot merges the last ones that
    ///   fit together (``Split/adjusted``).
    /// - Everything is split anew only when nothing else fits (``Split/rebalanced``); without a
    ///   previous plan, balanced as ``make(_:slots:maxEntries:)`` (``Split/balanced``).
    ///
    /// Each slot records since when its bounds and its entries are the same
    /// (``Slot/boundsSince``, ``Slot/contentSince``): a slot that kept its bounds is compared
    /// with the previous generation's entries in that range, list by list (without reading a
    /// list when the same files, by hash, and the same settings make it there). Deterministic: the same previous
    /// plan and the same entries give the same plan. Reads the merged stream once without
    /// labels, plus the ranges split anew.
    /// - Throws: ``DirectoryError/Code-swift.struct/budgetExceeded`` when the entries do not
    ///   fit (as ``make(_:slots:maxEntries:)``), `invalidArgument` for `slots` outside 1…64 or
    ///   `maxEntries` below 1.
    public static func stable(_ snapshot: DirectorySnapshot, generation: UInt64, after previous: Previous?,
                              slots: Int, maxEntries: Int) throws(DirectoryError) -> SlotPlan {
        try checkArguments(slots: slots, maxEntries: maxEntries)
        guard let previous, previous.generation < generation, previous.plan.tiles else {
            var plan = try make(snapshot, slots: slots, maxEntries: maxEntries)
            plan.generation = generation
            plan.split = .balanced
            for i in plan.slots.indices {
                plan.slots[i].boundsSince = generation
                plan.slots[i].contentSince = generation
            }
            return plan
        }
        let old = previous.plan.slots
        // Pass 1: the totals, and the new entries in each slot of the previous plan.
        var totals = Totals()
        var counted = old.map { Slot(lowerBound: $0.lowerBound, upperBound: $0.upperBound, identification: 0, blocking: 0) }
        var j = 0
        var walk = NumberWalk(snapshot)
        while let step = try walk.next() {
            totals.add(step)
            while step.number >= counted[j].upperBound { j += 1 }
            if step.identification { counted[j].identification += 1 }
            if step.blocking { counted[j].blocking += 1 }
        }
        try totals.checkCapacity(snapshot, slots: slots, maxEntries: maxEntries)

        var plan = SlotPlan(maxEntries: maxEntries, slots: [], generation: generation)
        let pieces = repair(counted.map(\.count), slots: slots, maxEntries: maxEntries)
        pieces: for piece in pieces ?? [] {
            switch piece {
            case .keep(let j):
                plan.slots.append(counted[j])
            case .resplit(let js, let n):
                let range = old[js.lowerBound].lowerBound..<old[js.upperBound - 1].upperBound
                let total = counted[js].reduce(0) { $0 + $1.count }
                var part = try split(snapshot, range, slots: n, maxEntries: maxEntries, total: total, balanced: true)
                if part == nil { part = try split(snapshot, range, slots: n, maxEntries: maxEntries, total: total, balanced: false) }
                guard let part else {
                    // A number in both lists tipped the piece over: the whole line, as make does.
                    plan.slots = []
                    break pieces
                }
                plan.slots += part
            }
        }
        if plan.slots.count != slots {
            plan.slots = try balanced(snapshot, totals, slots: slots, maxEntries: maxEntries)
            plan.split = .rebalanced
        } else if let pieces, pieces.allSatisfy({ if case .keep = $0 { true } else { false } }) {
            plan.split = .kept
        } else {
            plan.split = pieces?.count == 1 && old.count > 1 ? .rebalanced : .adjusted
        }
        // Since when each slot has its bounds and its entries.
        for i in plan.slots.indices {
            let s = plan.slots[i]
            guard i < old.count, old[i].range == s.range else {
                plan.slots[i].boundsSince = generation
                plan.slots[i].contentSince = generation
                continue
            }
            plan.slots[i].boundsSince = old[i].boundsSince ?? previous.generation
            // Entries of the previous generation that cannot be read count as changed.
            let same = previous.snapshot.map { (try? DirectoryDiff.sameEntries(old: $0, new: snapshot, in: s.range)) ?? false } ?? false
            plan.slots[i].contentSince = same ? max(old[i].contentSince ?? previous.generation, plan.slots[i].boundsSince!) : generation
        }
        return plan
    }

    /// How a new plan is made of the previous plan's slots, in order: a slot kept as it is, or
    /// consecutive slots split anew into some number of slots.
    enum Piece: Equatable {
        case keep(Int)
        case resplit(Range<Int>, slots: Int)
    }

    /// The cheapest way to turn slots holding `counts` entries (the new entries in the previous
    /// bounds) into `slots` slots of at most `maxEntries`: the most slots kept at their index,
    /// then the fewest entries in slots that change (split anew or moved to another index),
    /// then the most boundaries kept. A piece split anew needs ⌈entries ÷ maxEntries⌉ slots at
    /// least (one more may be needed when a number in both lists falls on a boundary: the
    /// caller then balances everything). Dynamic programming over (previous slots covered,
    /// new slots used); nil when the entries do not fit at all. Deterministic: ties go to the
    /// first solution in a fixed order.
    static func repair(_ counts: [Int], slots: Int, maxEntries cap: Int) -> [Piece]? {
        let m = counts.count, target = slots
        guard m > 0, target > 0, cap > 0 else { return nil }
        var prefix = [0]
        for c in counts { prefix.append(prefix[prefix.count - 1] + c) }
        func need(_ total: Int) -> Int { max(1, (total + cap - 1) / cap) }
        // The fewest new slots the previous slots j..<m can take (0 when none is left).
        let suffixNeed = (0...m).map { j in j == m ? 0 : need(prefix[m] - prefix[j]) }

        struct Score {
            var kept = 0, changedEntries = 0, pieces = 0
            func beats(_ other: Score?) -> Bool {
                guard let other else { return true }
                if kept != other.kept { return kept > other.kept }
                if changedEntries != other.changedEntries { return changedEntries < other.changedEntries }
                return pieces > other.pieces
            }
        }
        var best = [[Score?]](repeating: [Score?](repeating: nil, count: target + 1), count: m + 1)
        var step = [[(j: Int, c: Int, piece: Piece)?]](repeating: [(j: Int, c: Int, piece: Piece)?](repeating: nil, count: target + 1), count: m + 1)
        best[0][0] = Score()
        for j in 0..<m {
            for c in 0..<target {
                guard let here = best[j][c] else { continue }
                func offer(_ k: Int, _ c2: Int, _ score: Score, _ piece: Piece) {
                    if score.beats(best[k][c2]) {
                        best[k][c2] = score
                        step[k][c2] = (j, c, piece)
                    }
                }
                if counts[j] <= cap && c + 1 + suffixNeed[j + 1] <= target {
                    let atIndex = j == c
                    offer(j + 1, c + 1, Score(kept: here.kept + (atIndex ? 1 : 0), changedEntries: here.changedEntries + (atIndex ? 0 : counts[j]),
                                              pieces: here.pieces + 1), .keep(j))
                }
                for k in (j + 1)...m {
                    let total = prefix[k] - prefix[j]
                    // At most what the slots after the piece leave (more as k grows).
                    let most = target - c - suffixNeed[k]
                    if need(total) > most { continue }
                    for n in need(total)...most {
                        offer(k, c + n, Score(kept: here.kept, changedEntries: here.changedEntries + total, pieces: here.pieces + 1),
                              .resplit(j..<k, slots: n))
                    }
                }
            }
        }
        guard best[m][target] != nil else { return nil }
        var pieces: [Piece] = []
        var (j, c) = (m, target)
        while j > 0, let s = step[j][c] {
            pieces.append(s.piece)
            (j, c) = (s.j, s.c)
        }
        return pieces.reversed()
    }

    // MARK: Checks

    private static func checkArguments(slots: Int, maxEntries: Int) throws(DirectoryError) {
        guard (1...64).contains(slots) else { throw DirectoryError(.invalidArgument, "slots: \(slots); give 1 to 64 extensions") }
        guard maxEntries >= 1 else { throw DirectoryError(.invalidArgument, "max entries: \(maxEntries); give at least 1") }
    }

    /// The entries of a snapshot counted by list, and those that come from rules.
    private struct Totals {
        var identification = 0, blocking = 0, fromRules = 0
        var total: Int { identification + blocking }

        mutating func add(_ step: NumberWalk.Step) {
            if step.identification { identification += 1 }
            if step.blocking { blocking += 1 }
            if step.fromRule { fromRules += 1 }
        }

        /// The budget error: the counts, `why`, and the rules' share.
        func refusal(_ snapshot: DirectorySnapshot, _ why: String) -> DirectoryError {
            var m = "\(grouped(total)) entries (\(grouped(identification)) identification + \(grouped(blocking)) blocking) \(why)"
            if fromRules > 0 {
                let rules = snapshot.settings.rules.map { "'\($0.text)' (\(grouped($0.count)))" }.joined(separator: ", ")
                m += "; \(grouped(fromRules)) of the blocking entries come from rules \(rules): remove or narrow a rule"
            }
            return DirectoryError(.budgetExceeded, m)
        }

        func checkCapacity(_ snapshot: DirectorySnapshot, slots: Int, maxEntries: Int) throws(DirectoryError) {
            let capacity = slots.multipliedReportingOverflow(by: maxEntries)
            guard capacity.overflow || total <= capacity.partialValue else {
                throw refusal(snapshot, "do not fit in \(slots) extension\(slots == 1 ? "" : "s") of at most \(grouped(maxEntries)): \((total + maxEntries - 1) / maxEntries) needed")
            }
        }
    }

    /// True when the slots tile 0 ..< `UInt64.max` in order.
    var tiles: Bool { (try? validate(path: "")) != nil }

    /// Checks that the slots tile 0 ..< `UInt64.max` in order.
    func validate(path: String) throws(DirectoryError) {
        var next: UInt64 = 0
        for s in slots {
            guard s.lowerBound == next, s.upperBound >= s.lowerBound else {
                throw DirectoryError(.badManifest, "\(path): slot ranges do not tile the number line")
            }
            next = s.upperBound
        }
        guard next == UInt64.max, !slots.isEmpty else { throw DirectoryError(.badManifest, "\(path): slot ranges do not tile the number line") }
    }
}

/// Both lists walked together by number, without labels: (number, in identification, in blocking).
struct NumberWalk {
    struct Step {
        var number: UInt64
        var identification: Bool
        var blocking: Bool
        var fromRule: Bool
    }

    private var a: MergedStream
    private var b: MergedStream
    private var aHas = false, bHas = false
    private var aNeeds = true, bNeeds = true

    init(_ snapshot: DirectorySnapshot, range: Range<UInt64> = 0..<UInt64.max) {
        a = snapshot.stream(.identification, in: range)
        b = snapshot.stream(.blocking, in: range)
    }

    mutating func next() throws(DirectoryError) -> Step? {
        if aNeeds { aHas = try a.next(); aNeeds = false }
        if bNeeds { bHas = try b.next(); bNeeds = false }
        switch (aHas, bHas) {
        case (false, false):
            return nil
        case (true, false):
            aNeeds = true
            return Step(number: a.number, identification: true, blocking: false, fromRule: false)
        case (false, true):
            bNeeds = true
            return Step(number: b.number, identification: false, blocking: true, fromRule: b.fromRule)
        case (true, true):
            if a.number < b.number {
                aNeeds = true
                return Step(number: a.number, identification: true, blocking: false, fromRule: false)
            } else if b.number < a.number {
                bNeeds = true
                return Step(number: b.number, identification: false, blocking: true, fromRule: b.fromRule)
            }
            aNeeds = true
            bNeeds = true
            return Step(number: a.number, identification: true, blocking: true, fromRule: b.fromRule)
        }
    }
}
