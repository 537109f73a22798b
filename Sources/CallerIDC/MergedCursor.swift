// A k-way merge over the cursors of several databases (cid_cursor_open_merged).
import CallerID

/// The union of several databases' entries in strictly ascending order without duplicates,
/// with the rules of the Swift merged stream (`MergedStream` in CallerIDDirectory):
///
/// - Precedence: when several sources hold a number, the entry of the earliest source wins
///   and the others are skipped.
/// - The action filter applies to each source before the merge (an entry of another action
///   does not take part: one database may identify a number that another blocks).
/// - The category-name filter applies to the winner: a winner whose category is not chosen is
///   dropped and still hides the later sources' entries for its number.
///
/// Each source's head stays in place until it is consumed; a consumed head is replaced
/// at the start of the following `next`, so the label handed out last (which may live in
/// its cursor's decode cache) stays valid until the next call. k is small (a few
/// databases): the minimum is found by a linear scan.
struct MergedCursor {
    struct Source {
        let core: Core
        var cursor: EntryCursor
        /// Selected category codes of this source (nil: every category).
        let selected: [Bool]?
        var headNumber: UInt64 = 0
        var headLabel = UnsafeRawBufferPointer(start: nil, count: 0)
        var headCategory = 0
        var hasHead = false
        var needsAdvance = true
    }

    private var sources: [Source]
    private var failure: CallerIDError?

    init(cores: [Core], from: UInt64, selection: Selection) {
        let byAction = selection.action.map { CategoryFilter.action($0) }
        sources = cores.map { core in
            Source(core: core, cursor: core.db.cursor(from: from, filter: byAction),
                   selected: selection.names == nil ? nil : selection.table(for: core))
        }
    }

    /// Fills `out` with the next entry; false at the end. After an error every call throws it.
    mutating func next(_ out: UnsafeMutablePointer<CEntry>) throws(CallerIDError) -> Bool {
        if let failure { throw failure }
        do throws(CallerIDError) {
            while true {
                for i in sources.indices where sources[i].needsAdvance {
                    sources[i].needsAdvance = false
                    let head: (UInt64, UnsafeRawBufferPointer, Int)? = try sources[i].cursor.next { view in
                        (view.number, view.labelBytes, view.categoryIndex)
                    }
                    if let head {
                        (sources[i].headNumber, sources[i].headLabel, sources[i].headCategory) = head
                        sources[i].hasHead = true
                    } else {
                        sources[i].hasHead = false
                    }
                }
                var best = -1
                for i in sources.indices where sources[i].hasHead {
                    if best < 0 || sources[i].headNumber < sources[best].headNumber { best = i }
                }
                guard best >= 0 else { return false }
                let number = sources[best].headNumber
                for i in best..<sources.count where sources[i].hasHead && sources[i].headNumber == number {
                    sources[i].needsAdvance = true
                }
                let core = sources[best].core
                let code = sources[best].headCategory
                if let selected = sources[best].selected, !selected[code] { continue }
                let label = sources[best].headLabel
                out.pointee = CEntry(
                    number: number,
                    label: label.baseAddress.map { $0.assumingMemoryBound(to: CChar.self) } ?? core.empty,
                    labelLength: label.count,
                    category: core.table[code].name,
                    categoryIndex: UInt32(truncatingIfNeeded: code),
                    action: core.table[code].action,
                    source: UInt32(truncatingIfNeeded: best),
                    reserved: 0)
                return true
            }
        } catch {
            failure = error
            throw error
        }
    }
}
