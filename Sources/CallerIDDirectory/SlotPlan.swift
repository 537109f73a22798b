import CallerID

/// How the merged entries are split across the app's extensions ("slots"): each slot loads
/// both lists for one contiguous range of numbers, at most ``maxEntries`` entries (both lists
/// together). The ranges tile 0 … `UInt64.max` in order, so every entry is in exactly one slot.
///
/// The split is deterministic (same data and settings, same plan) and balanced: each slot gets
/// about total ÷ slots entries (one more at most, a number in both lists is never split), so
/// every extension keeps head room for updates. Computing a plan reads the merged stream twice
/// without labels' use; an install stores it in the generation (`plan.json`).
public struct SlotPlan: Sendable, Equatable, Codable {
    public struct Slot: Sendable, Equatable, Codable {
        /// Numbers `lowerBound ..< upperBound` belong to this slot.
        public var lowerBound: UInt64
        public var upperBound: UInt64
        public var identification: Int
        public var blocking: Int

        public init(lowerBound: UInt64, upperBound: UInt64, identification: Int, blocking: Int) {
            self.lowerBound = lowerBound
            self.upperBound = upperBound
            self.identification = identification
            self.blocking = blocking
        }

        public var range: Range<UInt64> { lowerBound..<upperBound }
        /// Entries of this slot, both lists.
        public var count: Int { identification + blocking }

        enum CodingKeys: String, CodingKey {
            case lowerBound = "lower_bound", upperBound = "upper_bound", identification = "identify", blocking = "block"
        }
    }

    public var maxEntries: Int
    public var slots: [Slot]

    public init(maxEntries: Int, slots: [Slot]) {
        self.maxEntries = maxEntries
        self.slots = slots
    }

    enum CodingKeys: String, CodingKey {
        case maxEntries = "max_entries", slots
    }

    /// Entries of all slots.
    public var count: Int { slots.reduce(0) { $0 + $1.count } }

    /// Splits `snapshot`'s entries across `slots` extensions of at most `maxEntries` each.
    /// - Throws: ``DirectoryError/Code-swift.struct/budgetExceeded`` when they do not fit, with
    ///   the counts and the share of the blocking rules in the message.
    public static func make(_ snapshot: DirectorySnapshot, slots: Int, maxEntries: Int) throws(DirectoryError) -> SlotPlan {
        guard (1...64).contains(slots) else { throw DirectoryError(.invalidArgument, "slots: \(slots); give 1 to 64 extensions") }
        guard maxEntries >= 1 else { throw DirectoryError(.invalidArgument, "max entries: \(maxEntries); give at least 1") }
        // Pass 1: totals.
        var identification = 0, blocking = 0, fromRules = 0
        var walk = NumberWalk(snapshot)
        while let step = try walk.next() {
            if step.identification { identification += 1 }
            if step.blocking { blocking += 1 }
            if step.fromRule { fromRules += 1 }
        }
        let total = identification + blocking
        func refuse(_ why: String) -> DirectoryError {
            var m = "\(grouped(total)) entries (\(grouped(identification)) identification + \(grouped(blocking)) blocking) \(why)"
            if fromRules > 0 {
                let rules = snapshot.settings.rules.map { "'\($0.text)' (\(grouped($0.count)))" }.joined(separator: ", ")
                m += "; \(grouped(fromRules)) of the blocking entries come from rules \(rules): remove or narrow a rule"
            }
            return DirectoryError(.budgetExceeded, m)
        }
        let capacity = slots.multipliedReportingOverflow(by: maxEntries)
        guard capacity.overflow || total <= capacity.partialValue else {
            throw refuse("do not fit in \(slots) extension\(slots == 1 ? "" : "s") of at most \(grouped(maxEntries)): \((total + maxEntries - 1) / maxEntries) needed")
        }
        // Balanced: slot k closes before the number that would take the running total past
        // ⌈(k+1)·total/slots⌉ or the slot past maxEntries. Should a number in both lists make that
        // need one slot too many, greedy filling to maxEntries (the fewest slots possible) decides.
        if let plan = try split(snapshot, slots: slots, maxEntries: maxEntries, total: total, balanced: true) { return plan }
        if let plan = try split(snapshot, slots: slots, maxEntries: maxEntries, total: total, balanced: false) { return plan }
        throw refuse("do not split into \(slots) extensions of at most \(grouped(maxEntries)) (a number in both lists is never split)")
    }

    private static func split(_ snapshot: DirectorySnapshot, slots: Int, maxEntries: Int, total: Int, balanced: Bool) throws(DirectoryError) -> SlotPlan? {
        var plan = SlotPlan(maxEntries: maxEntries, slots: [])
        var current = Slot(lowerBound: 0, upperBound: 0, identification: 0, blocking: 0)
        var before = 0   // entries in closed slots
        var walk = NumberWalk(snapshot)
        while let step = try walk.next() {
            let w = (step.identification ? 1 : 0) + (step.blocking ? 1 : 0)
            let k = plan.slots.count
            let target = balanced ? (total * (k + 1) + slots - 1) / slots : Int.max
            if current.count > 0 && (before + current.count + w > target || current.count + w > maxEntries) {
                guard k + 1 < slots else { return nil }
                current.upperBound = step.number
                plan.slots.append(current)
                before += current.count
                current = Slot(lowerBound: step.number, upperBound: 0, identification: 0, blocking: 0)
            }
            if step.identification { current.identification += 1 }
            if step.blocking { current.blocking += 1 }
        }
        guard current.count <= maxEntries else { return nil }
        while plan.slots.count < slots {
            current.upperBound = UInt64.max
            plan.slots.append(current)
            current = Slot(lowerBound: UInt64.max, upperBound: UInt64.max, identification: 0, blocking: 0)
        }
        return plan
    }

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
