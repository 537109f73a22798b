import CallerID

/// One list's old and new streams walked together: what must be removed and added to turn
/// the old entries into the new ones.
struct ListDiff {
    enum Event {
        /// In the old stream only: `old.number`, `old.label`.
        case removal
        /// In the new stream only: `new.number`, `new.label`.
        case addition
        /// In both with different labels (identification only): remove, then add the new label.
        case change
        /// In both, same label: nothing to do (reported only when asked).
        case same
    }

    private(set) var old: MergedStream?
    private(set) var new: MergedStream
    private var oldHas = false, newHas = false
    private var oldNeeds: Bool, newNeeds = true
    private let compareLabels: Bool

    init(old: MergedStream?, new: MergedStream) {
        self.old = old
        self.new = new
        oldNeeds = old != nil
        compareLabels = new.list == .identification
    }

    var oldNumber: UInt64 { old?.number ?? 0 }

    /// The next difference (or `.same` entry); the streams' current entries describe it and
    /// stay valid until the following call.
    mutating func next() throws(DirectoryError) -> Event? {
        if oldNeeds { oldHas = try old!.next(); oldNeeds = false }
        if newNeeds { newHas = try new.next(); newNeeds = false }
        switch (oldHas, newHas) {
        case (false, false):
            return nil
        case (true, false):
            oldNeeds = true
            return .removal
        case (false, true):
            newNeeds = true
            return .addition
        case (true, true):
            let a = old!.number, b = new.number
            if a < b { oldNeeds = true; return .removal }
            if b < a { newNeeds = true; return .addition }
            oldNeeds = true
            newNeeds = true
            if compareLabels && !old!.label.elementsEqual(new.label) { return .change }
            return .same
        }
    }
}

/// One change of a delta, in the order a Call Directory request takes them.
package struct DeltaChange: Sendable, Equatable, CustomStringConvertible {
    package enum Kind: Sendable, Equatable { case removal, addition }
    package var kind: Kind
    package var list: CallDirectoryList
    package var number: UInt64
    /// The new label of an addition; the old label of a removal (empty for blocking).
    package var label: String

    /// `+|-<TAB>identify|block<TAB>NUMBER<TAB>LABEL`, the line `lookup diff` prints.
    package var description: String { "\(kind == .removal ? "-" : "+")\t\(list)\t\(number)\t\(label)" }
}

/// How many changes a delta has, per list.
package struct DeltaCounts: Sendable, Equatable {
    package var removals: [CallDirectoryList: Int] = [.identification: 0, .blocking: 0]
    package var additions: [CallDirectoryList: Int] = [.identification: 0, .blocking: 0]
    /// Entries of the new set, per list.
    package var newEntries: [CallDirectoryList: Int] = [.identification: 0, .blocking: 0]

    /// Calls a delta request makes.
    package var changes: Int { removals.values.reduce(0, +) + additions.values.reduce(0, +) }
    /// Calls a full reload makes (two "remove all" calls and every new entry).
    package var fullReload: Int { 2 + newEntries.values.reduce(0, +) }
}

/// The change set from one snapshot to another: removals then ascending additions, per list,
/// a changed label being a removal and an addition (the order CallKit accepts in one
/// incremental request). `old == nil` means nothing loaded: every entry is an addition.
package enum DirectoryDiff {
    /// Calls `body` with every change: identification removals, blocking removals,
    /// identification additions, blocking additions, each ascending.
    package static func forEach(old: DirectorySnapshot?, new: DirectorySnapshot, in range: Range<UInt64> = 0..<UInt64.max,
                               _ body: (DeltaChange) -> Void) throws(DirectoryError) {
        for removals in [true, false] {
            for list in CallDirectoryList.allCases {
                var diff = ListDiff(old: old?.stream(list, in: range), new: new.stream(list, in: range))
                while let event = try diff.next() {
                    switch event {
                    case .removal where removals:
                        body(DeltaChange(kind: .removal, list: list, number: diff.old!.number, label: diff.old!.labelString))
                    case .change where removals:
                        body(DeltaChange(kind: .removal, list: list, number: diff.old!.number, label: diff.old!.labelString))
                    case .addition where !removals, .change where !removals:
                        body(DeltaChange(kind: .addition, list: list, number: diff.new.number, label: diff.new.labelString))
                    default:
                        break
                    }
                }
            }
        }
    }

    /// True when `old` and `new` give the same entries in `range` (both lists, labels
    /// included): no delta. Per list, without reading entries when the same files (by size and
    /// XXH3, in the same precedence order) may hold entries of that list there and the settings
    /// treat the list alike in the range; otherwise the two merged streams of the list are
    /// walked to the first difference.
    static func sameEntries(old: DirectorySnapshot, new: DirectorySnapshot, in range: Range<UInt64>) throws(DirectoryError) -> Bool {
        guard !range.isEmpty else { return true }
        for list in CallDirectoryList.allCases where try !sameSources(old, new, list, in: range) {
            var diff = ListDiff(old: old.stream(list, in: range), new: new.stream(list, in: range))
            while let event = try diff.next() {
                if event != .same { return false }
            }
        }
        return true
    }

    /// True when the merges of `list` over `range` read the same in `a` and `b`: the same
    /// settings for the list in the range (fed or not; for blocking, the categories, and the
    /// allow-list and rule numbers in it), and the same files, in precedence order, among those
    /// the list's merge reads that hold a number in the range.
    private static func sameSources(_ a: DirectorySnapshot, _ b: DirectorySnapshot, _ list: CallDirectoryList,
                                    in range: Range<UInt64>) throws(DirectoryError) -> Bool {
        let sa = a.settings, sb = b.settings
        switch list {
        case .identification:
            guard sa.identification == sb.identification else { return false }
        case .blocking:
            func allowed(_ s: FeedSettings) -> ArraySlice<UInt64> {
                s.allowList[s.allowList.lowerBound(range.lowerBound)..<s.allowList.lowerBound(range.upperBound)]
            }
            func ruled(_ snapshot: DirectorySnapshot) -> [ClosedRange<UInt64>] {
                snapshot.ruleRanges.compactMap { r in
                    let lo = max(r.lowerBound, range.lowerBound), hi = min(r.upperBound, range.upperBound - 1)
                    return lo <= hi ? lo...hi : nil
                }
            }
            func chosen(_ s: FeedSettings) -> Set<String>? { s.blockCategories.map { Set($0.map { $0.lowercased() }) } }
            guard sa.blocking == sb.blocking, chosen(sa) == chosen(sb), allowed(sa) == allowed(sb), ruled(a) == ruled(b) else {
                return false
            }
        }
        // The files the merge reads that hold a number in the range, in precedence order, by
        // size and hash; nil when a file has no hash to tell it by (a lone file's made-up manifest).
        func sources(_ s: DirectorySnapshot) throws(DirectoryError) -> [[UInt64]]? {
            var out: [[UInt64]] = []
            for (i, db) in s.databases.enumerated() where s.mayHold(i, list) {
                var cursor = db.cursor(from: range.lowerBound)
                let first: UInt64?
                do { first = try cursor.next { $0.number } } catch { throw DirectoryError(error) }
                guard let first, first < range.upperBound else { continue }
                let f = s.manifest.files[s.manifestIndex[i]]
                guard f.xxh3 != 0 else { return nil }
                out.append([UInt64(f.bytes), f.xxh3])
            }
            return out
        }
        guard let fromA = try sources(a) else { return false }
        return try fromA == sources(b)
    }

    /// Counts the changes (one pass per list, no label strings made).
    package static func count(old: DirectorySnapshot?, new: DirectorySnapshot, in range: Range<UInt64> = 0..<UInt64.max) throws(DirectoryError) -> DeltaCounts {
        var counts = DeltaCounts()
        for list in CallDirectoryList.allCases {
            try count(&counts, list: list, old: old?.stream(list, in: range), new: new.stream(list, in: range))
        }
        return counts
    }

    static func count(_ counts: inout DeltaCounts, list: CallDirectoryList, old: MergedStream?, new: MergedStream) throws(DirectoryError) {
        var diff = ListDiff(old: old, new: new)
        var removals = 0, additions = 0, entries = 0
        while let event = try diff.next() {
            switch event {
            case .removal: removals += 1
            case .addition: additions += 1; entries += 1
            case .change: removals += 1; additions += 1; entries += 1
            case .same: entries += 1
            }
        }
        counts.removals[list, default: 0] += removals
        counts.additions[list, default: 0] += additions
        counts.newEntries[list, default: 0] += entries
    }
}
