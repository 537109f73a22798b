package import CallerID
package import CallerIDDirectory

/// The database files (packs) behind every `--db` of a query, in precedence order, each opened
/// when a number first needs it and kept open. A manifest says where each file's entries lie
/// (`first_number`…`last_number`) and whether it holds ranges; a number is asked only of the
/// files that can hold it (``entryIndex``, ``rangeIndex``), so a query over 200 packs opens
/// one to three of them. A database file given as `--db` itself is opened at once.
///
/// A file never opened is never checked: a damaged pack outside a number's bounds does not
/// stop its query (`lookup verify` checks every file). After each lazy open the manifest is
/// checked to be the one read at the start (``DatabaseSet/isUnchanged()``): a build directory
/// replaced by a later build, or a store generation removed by later installs, ends the query
/// with exit 74 instead of mixing files of two builds.
///
/// In a batch (``watchFiles()``) each open file is checked for an in-place change (one `stat`,
/// ``Database/checkFile()``) before its first lookup after input arrived (``inputArrived()``)
/// and after every ``checkEvery`` lookups of it: a file is never read unchecked for longer, and
/// files a batch does not use cost nothing.
///
/// A file seen changed (an in-place change found by a check, or a read of its mapping that
/// faulted past the end of the cut-short file: ``Database/mappingFaulted``) is withdrawn: its
/// mapping is not read again, and every question for it throws the error that withdrew it (a
/// ``QueryError`` with ``QueryError/changedFile``). ``confirm(_:_:)`` after a pack answered
/// throws the same when a read faulted during the answers, which are then discarded.
///
/// Safe to share between threads (`lookup serve` asks one set from all of its threads, every
/// pack opened first with ``openAll()``): what opening and watching change is behind a lock.
package final class PackSet: Sendable {
    private struct Pack: Sendable {
        package let path: String
        /// Index of the set (one `--db`) it belongs to.
        package let source: Int
        package var database: Database?
        /// The input epoch of its last in-place check, and its lookups since.
        package var checkedEpoch = 0
        package var lookupsSinceCheck = 0
        /// Why it is withdrawn (its file changed), nil while it answers.
        package var withdrawn: QueryError? = nil
    }

    /// What opening and checking change: the packs, and the batch's watch of their files.
    private struct State: Sendable {
        package var packs: [Pack]
        package var watching = false
        package var epoch = 0
    }

    private let sources: [DatabaseSet]
    /// Shared by the threads of `lookup serve`; a query takes the lock once per pack it asks
    /// (not per number).
    private let state: Locked<State>
    /// Packs whose entries may hold a number, and packs whose ranges may answer for it.
    package let entryIndex: PackIndex
    package let rangeIndex: PackIndex
    /// How many packs there are.
    package let count: Int
    /// What the phone does with a number, from every set's feed settings.
    package let rule: AnswerRule
    /// Lookups of one file between two in-place checks of it.
    package static let checkEvery = 1024

    package init(_ sets: [DatabasePaths]) throws(QueryError) {
        sources = sets.map(\.resolved)
        var packs: [Pack] = []
        var coverage: [PackCoverage] = []
        for (s, set) in sets.enumerated() {
            for (file, cover) in zip(set.files, set.coverage) {
                packs.append(Pack(path: file, source: s, database: nil))
                coverage.append(cover)
            }
        }
        count = packs.count
        var settings: [FeedSettings] = []
        for set in sets {
            do { settings.append(try set.resolved.feedSettings()) } catch { throw QueryError(passingOn: error) }
        }
        rule = AnswerRule(packSet: packs.map(\.source), settings: settings)
        state = Locked(State(packs: packs))
        entryIndex = PackIndex(coverage.map(\.entries))
        rangeIndex = PackIndex(coverage.map(\.ranges))
        // A file named by --db is opened (and its damage reported) whatever the number.
        for i in packs.indices where sets[packs[i].source].kind == .file { _ = try database(i) }
    }

    /// From now on, check files for in-place changes (a batch).
    package func watchFiles() { state.withLock { $0.watching = true } }

    /// Input arrived: every file is checked again before its next lookup.
    package func inputArrived() { state.withLock { $0.epoch &+= 1 } }

    /// Opens every pack not open yet (a server, before it answers from the set).
    package func openAll() throws(QueryError) {
        for i in 0..<count { _ = try database(i, lookups: 0) }
    }

    /// The packs opened so far, in precedence order.
    package var opened: [Database] { state.withLock { $0.packs.compactMap(\.database) } }

    /// Why packs are withdrawn (their files changed: ``withdraw(_:because:)``), in pack order.
    package var withdrawn: [String] { state.withLock { $0.packs.compactMap(\.withdrawn?.message) } }

    /// Withdraws the packs of file `path`: from now on their mappings are not read and every
    /// question for them throws an I/O error saying `reason`.
    package func withdraw(_ path: String, because reason: String) {
        state.withLock { s in
            for i in s.packs.indices where s.packs[i].path == path && s.packs[i].withdrawn == nil {
                s.packs[i].withdrawn = QueryError(code: .fileChanged, message: reason, changedFile: path)
            }
        }
    }

    /// After pack `i` (`db`) answered: throws when a read of its mapping faulted meanwhile (the
    /// file was cut short under it), so that the answers are discarded; the pack is withdrawn.
    package func confirm(_ i: Int, _ db: Database) throws(QueryError) {
        guard db.mappingFaulted else { return }
        throw state.withLock { s in Self.withdrawFaulted(&s.packs[i], db) }
    }

    /// Withdraws a pack whose mapping faulted; the error it is withdrawn with.
    private static func withdrawFaulted(_ pack: inout Pack, _ db: Database) -> QueryError {
        if let known = pack.withdrawn { return known }
        let error = QueryError(code: .fileChanged, message: "\(db.path): the database file was cut short while open (a read past its new end faulted); its answers are discarded until it is opened again; replace database files with rename, never by writing over them",
                              changedFile: db.path)
        pack.withdrawn = error
        return error
    }

    /// Pack `i`, opened now if it was not yet, for `lookups` lookups (at most ``checkEvery``).
    package func database(_ i: Int, lookups: Int = 1) throws(QueryError) -> Database {
        let open = try state.withLock { (s) throws(QueryError) -> Database? in
            guard let db = s.packs[i].database else { return nil }
            if let withdrawn = s.packs[i].withdrawn { throw withdrawn }
            if db.mappingFaulted { throw Self.withdrawFaulted(&s.packs[i], db) }
            if s.watching {
                if s.packs[i].checkedEpoch != s.epoch || s.packs[i].lookupsSinceCheck + lookups > Self.checkEvery {
                    do throws(CallerIDError) {
                        try db.checkFile()
                    } catch {
                        let withdrawn = QueryError(code: .fileChanged, message: error.message, changedFile: db.path)
                        s.packs[i].withdrawn = withdrawn
                        throw withdrawn
                    }
                    s.packs[i].checkedEpoch = s.epoch
                    s.packs[i].lookupsSinceCheck = 0
                }
                s.packs[i].lookupsSinceCheck += lookups
            }
            return db
        }
        if let open { return open }
        // Opened without the lock held (a mapping and its checks); a thread that opened the
        // same pack meanwhile wins, this copy is dropped.
        let (path, source) = state.withLock { ($0.packs[i].path, $0.packs[i].source) }
        var opening: Result<Database, CallerIDError>
        do { opening = .success(try Database(path: path)) } catch { opening = .failure(error) }
        let set = sources[source]
        guard set.isUnchanged() else {
            let what = set.kind == .store
                ? "generation \(set.generation.map(String.init) ?? "?") of the store was removed by later installs"
                : "the build directory was replaced by another build"
            throw QueryError(.io, "\(set.path): \(what) while this lookup read it (\(path) was not open yet); run the lookup again")
        }
        switch opening {
        case .failure(let error):
            throw QueryError(passingOn: error)
        case .success(let db):
            return state.withLock { s in
                if let first = s.packs[i].database { return first }
                s.packs[i].database = db
                s.packs[i].checkedEpoch = s.epoch
                s.packs[i].lookupsSinceCheck = lookups
                return db
            }
        }
    }
}

/// Which packs may answer for a number: the number line cut at every pack's bounds into
/// segments, each listing the packs that cover all of it in precedence order (the packs'
/// indices, ascending). A number's segment is found by binary search; a pack covering
/// ``NumberSpan/all`` is in every segment, one covering ``NumberSpan/none`` in none.
package struct PackIndex {
    /// Segment `k` holds the numbers `starts[k] ..< starts[k + 1]` (the last: to `UInt64.max`).
    private let starts: [UInt64]
    /// Segment `k`'s packs: `members[offsets[k] ..< offsets[k + 1]]`.
    private let offsets: [Int]
    package let members: [Int]

    package init(_ spans: [NumberSpan]) {
        var cuts: [UInt64] = [0]
        for case .within(let first, let last) in spans {
            cuts.append(first)
            if last < UInt64.max { cuts.append(last + 1) }
        }
        cuts.sort()
        var starts: [UInt64] = []
        for c in cuts where starts.last != c { starts.append(c) }
        // The segments each pack covers (`low[p] ... high[p]`, empty for none); then how many
        // packs each segment has, and the packs put in place in pack order.
        var low = [Int](repeating: 0, count: spans.count), high = [Int](repeating: -1, count: spans.count)
        for (p, span) in spans.enumerated() {
            switch span {
            case .none: break
            case .all: high[p] = starts.count - 1
            case .within(let first, let last):
                low[p] = Self.segment(of: first, in: starts)
                high[p] = Self.segment(of: last, in: starts)
            }
        }
        var offsets = [Int](repeating: 0, count: starts.count + 1)
        for p in spans.indices where low[p] <= high[p] {
            for k in low[p]...high[p] { offsets[k + 1] += 1 }
        }
        for k in 0..<starts.count { offsets[k + 1] += offsets[k] }
        var members = [Int](repeating: 0, count: offsets[starts.count])
        var next = offsets
        for p in spans.indices where low[p] <= high[p] {
            for k in low[p]...high[p] {
                members[next[k]] = p
                next[k] += 1
            }
        }
        self.starts = starts
        self.offsets = offsets
        self.members = members
    }

    /// The packs that may answer for `number`, in precedence order.
    package func candidates(_ number: UInt64) -> ArraySlice<Int> {
        let k = Self.segment(of: number, in: starts)
        return members[offsets[k]..<offsets[k + 1]]
    }

    /// The last `k` with `starts[k] <= number` (`starts[0]` is 0).
    private static func segment(of number: UInt64, in starts: [UInt64]) -> Int {
        var lo = 0, hi = starts.count  // starts[lo] <= number < starts[hi] (hi = count: past the end)
        while hi - lo > 1 {
            let mid = (lo + hi) / 2
            if starts[mid] <= number { lo = mid } else { hi = mid }
        }
        return lo
    }
}
