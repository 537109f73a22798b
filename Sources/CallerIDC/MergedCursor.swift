// A k-way merge over the cursors of several databases (cid_cursor_open_merged).
import CallerID

/// The union of several databases' entries in strictly ascending order without duplicates,
/// with the rules of the Swift merged stream (`MergedStream` in CallerIDDirectory), on the
/// same merge (`PrecedenceMerge` in the core):
///
/// - Precedence: when several sources hold a number, the entry of the earliest source wins
///   and the others are skipped.
/// - The action filter applies to each source before the merge (an entry of another action
///   does not take part: one database may identify a number that another blocks).
/// - The category-name filter applies to the winner: a winner whose category is not chosen is
///   dropped and still hides the later sources' entries for its number.
///
/// The label handed out last (which may live in its cursor's decode cache) stays valid until
/// the next call.
struct MergedCursor {
    private let cores: [Core]
    /// Per source, per category code: chosen by the filter (nil: every category).
    private let selected: [[Bool]]?
    private var merge: PrecedenceMerge

    init(cores: [Core], from: UInt64, selection: Selection) {
        let byAction = selection.action.map { CategoryFilter.action($0) }
        self.cores = cores
        selected = selection.names == nil ? nil : cores.map { selection.table(for: $0) }
        merge = PrecedenceMerge(cores.map { $0.db.cursor(from: from, filter: byAction) })
    }

    /// Fills `out` with the next entry; false at the end. After an error every call throws it.
    mutating func next(_ out: UnsafeMutablePointer<CEntry>) throws(CallerIDError) -> Bool {
        while try merge.next() {
            let source = merge.source, code = merge.category
            if let selected, !selected[source][code] { continue }
            cores[source].write(out, number: merge.number, label: merge.label, code: code, source: source)
            return true
        }
        return false
    }
}
