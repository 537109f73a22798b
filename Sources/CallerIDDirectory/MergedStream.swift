package import CallerID
import Foundation

/// A set of database files opened for feeding (a build output directory or an installed
/// generation: a folder with `manifest.json`), and the ``FeedSettings`` that filter them.
///
/// **Precedence.** When several files hold a number in the same list, the entry of the file
/// with the highest `priority` in the manifest wins (a missing priority is 0); among equal
/// priorities, the file listed first in the manifest wins. The other files' entries for that
/// number are skipped. Each list is merged on its own: a number may be identified by one file
/// and blocked by another. ``FeedSettings/blockCategories`` is applied to the winning entry;
/// the allow list removes a number from the blocking list whatever blocks it, rules included.
public final class DirectorySnapshot: Sendable {
    /// The folder holding `manifest.json`.
    public let directory: String
    public let manifest: DirectoryManifest
    public let settings: FeedSettings
    /// Databases in precedence order (highest first) and the manifest index of each.
    let databases: [Database]
    let manifestIndex: [Int]
    let ruleRanges: [ClosedRange<UInt64>]
    /// Files of the manifest left out because they could not be opened (missing, cut short,
    /// damaged), with the reason: only when opened with `skippingUnreadable` (a generation
    /// composed of sources, whose other packs keep serving); empty otherwise.
    public let unreadable: [UnreadablePack]

    /// A file of a set that could not be opened.
    public struct UnreadablePack: Sendable, Equatable {
        /// The file name in the manifest.
        public var file: String
        /// The source it belongs to, in a store composed of sources.
        public var source: String?
        /// Why it could not be opened.
        public var message: String
    }

    /// Opens every file of `directory/manifest.json`.
    /// - Parameters:
    ///   - settings: the settings to apply; nil reads `directory/settings.json` when there is
    ///     one (an installed generation) and takes the defaults otherwise.
    ///   - verify: also run the full ``Database/verify()`` of each file (an install does it).
    ///   - skippingUnreadable: leave out a file that cannot be opened and name it in
    ///     ``unreadable`` instead of failing (a store's generation composed of sources: one
    ///     missing pack must not stop the others).
    public convenience init(directory: String, settings: FeedSettings? = nil, verify: Bool = false,
                            skippingUnreadable: Bool = false) throws(DirectoryError) {
        try self.init(directory: directory, manifest: try DirectoryManifest.read(directory: directory),
                      settings: settings, verify: verify, skippingUnreadable: skippingUnreadable)
    }

    /// Opens one database file as a set of one (`lookup diff old.cid new.cid`): the manifest is
    /// made up from the file (its name and size), the settings are `settings` or the defaults
    /// (a lone file has no `settings.json`).
    public convenience init(databaseFile path: String, settings: FeedSettings? = nil, verify: Bool = false) throws(DirectoryError) {
        let (folder, name) = OutputPath.split(path)
        guard !name.isEmpty else { throw DirectoryError(.fileNotFound, "\(path): not a database file path") }
        guard let bytes = FileSystem.fileSize(path) else { throw DirectoryError(.fileNotFound, "\(path): no such file") }
        let manifest = DirectoryManifest(files: [.init(file: name, bytes: bytes, xxh3: 0)])
        try self.init(directory: folder, manifest: manifest, settings: settings ?? FeedSettings(), verify: verify)
    }

    /// Databases already open, in precedence order (the first wins a number in each list), as a
    /// set with `settings` (a `lookup export` of files: the defaults). The manifest is made up
    /// from their paths.
    package init(databases: [Database], settings: FeedSettings = FeedSettings()) {
        directory = ""
        manifest = DirectoryManifest(files: databases.map { .init(file: $0.path, bytes: 0, xxh3: 0) })
        self.settings = settings
        self.databases = databases
        manifestIndex = Array(databases.indices)
        unreadable = []
        ruleRanges = settings.ruleRanges
    }

    private init(directory: String, manifest: DirectoryManifest, settings: FeedSettings?, verify: Bool,
                 skippingUnreadable: Bool = false) throws(DirectoryError) {
        self.directory = directory
        self.manifest = manifest
        if let settings {
            self.settings = settings
        } else if let stored = try FeedSettings.stored(in: directory) {
            self.settings = stored
        } else {
            self.settings = FeedSettings()
        }
        try self.settings.validate()
        let order = manifest.files.indices.sorted {
            let a = manifest.files[$0].priority ?? 0, b = manifest.files[$1].priority ?? 0
            return a != b ? a > b : $0 < $1
        }
        var databases: [Database] = [], opened: [Int] = [], unreadable: [UnreadablePack] = []
        for i in order {
            let f = manifest.files[i], path = directory + "/" + f.file
            do {
                if skippingUnreadable, FileSystem.fileSize(path) != f.bytes {
                    let size = FileSystem.fileSize(path)
                    unreadable.append(UnreadablePack(file: f.file, source: f.source, message: size.map { "\(path): \($0) bytes, the manifest says \(f.bytes)" } ?? "\(path): missing"))
                    continue
                }
                databases.append(try Database(path: path, verify: verify))
                opened.append(i)
            } catch {
                guard skippingUnreadable else { throw DirectoryError(error) }
                unreadable.append(UnreadablePack(file: f.file, source: f.source, message: error.message))
            }
        }
        self.databases = databases
        manifestIndex = opened
        self.unreadable = unreadable
        ruleRanges = self.settings.ruleRanges
    }

    /// The file names in precedence order (highest first).
    public var filesByPrecedence: [String] { manifestIndex.map { manifest.files[$0].file } }

    /// The ascending, duplicate-free entries of `list` whose numbers lie in `range`.
    public func stream(_ list: CallDirectoryList, in range: Range<UInt64> = 0..<UInt64.max) -> MergedStream {
        MergedStream(self, list: list, range: range)
    }

    /// Whether file `i` (precedence order) may hold entries of `list`, from the manifest's counts.
    func mayHold(_ i: Int, _ list: CallDirectoryList) -> Bool {
        guard let actions = manifest.files[manifestIndex[i]].actions else { return true }
        return (actions[list == .identification ? "identify" : "block"] ?? 0) > 0
    }
}

/// The merged, ascending stream of one list (identification or blocking) over every file of a
/// ``DirectorySnapshot``: the core's k-way merge over one cursor per file (`PrecedenceMerge`: a
/// number present in several files given once, see the precedence in ``DirectorySnapshot``),
/// the allow list and category choice applied, and prefix/range rules expanded lazily into the
/// blocking list.
///
/// Heap use is bounded when the stream starts: one cursor per file (see
/// ``Database/cursor(from:filter:)``: the keys and value ids of one block plus a buffer for
/// the longest cold label it decodes) plus a few bytes per file for the heap; it does not grow
/// with the number of entries streamed. A file whose
/// manifest `actions` counts no entry of the list is not opened for that list.
///
/// ```swift
/// var s = snapshot.stream(.identification)
/// while try s.next() { sink.addIdentificationEntry(Int64(s.number), label: s.labelString) }
/// ```
public struct MergedStream {
    public let list: CallDirectoryList
    /// Numbers ≥ this end the stream.
    let upper: UInt64
    private var merge: PrecedenceMerge
    /// Manifest index of each merged source.
    private let files: [Int]
    /// The database of each merged source.
    private let databases: [Database]
    /// Per source, per category index: whether the blocking list takes it (nil: all).
    private let chosen: [[Bool]]?
    /// The merge's current entry has not been handed out yet (a rule came first).
    private var held = false
    private var mergeDone = false
    private let rules: [ClosedRange<UInt64>]
    private var ruleIndex = 0
    private var ruleNext: UInt64 = 0
    private let allow: [UInt64]
    private var allowIndex = 0
    private var finished = false
    private var failure: DirectoryError?

    /// The current entry's number (valid after ``next()`` returned true).
    public private(set) var number: UInt64 = 0
    /// The current entry's label bytes (UTF-8), valid until the following ``next()``; empty for
    /// blocking entries that come from a rule. Lent as ``labelSpan`` only (and to the tool).
    package private(set) var label = UnsafeRawBufferPointer(start: nil, count: 0)
    /// True when the current blocking entry comes from a prefix or range rule.
    public private(set) var fromRule = false
    /// The file the current entry comes from (index in manifest order), -1 for a rule.
    public private(set) var file = -1

    init(_ snapshot: DirectorySnapshot, list: CallDirectoryList, range: Range<UInt64>) {
        self.list = list
        upper = range.upperBound
        let enabled = list == .identification ? snapshot.settings.identification : snapshot.settings.blocking
        let filter = CategoryFilter.action(list == .identification ? .identify : .block)
        var cursors: [EntryCursor] = []
        var files: [Int] = []
        var databases: [Database] = []
        if enabled {
            for (i, db) in snapshot.databases.enumerated() where snapshot.mayHold(i, list) {
                cursors.append(db.cursor(from: range.lowerBound, filter: filter))
                files.append(snapshot.manifestIndex[i])
                databases.append(db)
            }
        }
        merge = PrecedenceMerge(cursors)
        self.files = files
        self.databases = databases
        if list == .blocking && enabled {
            rules = snapshot.ruleRanges.filter { $0.upperBound >= range.lowerBound && $0.lowerBound < range.upperBound }
            allow = snapshot.settings.allowList
            allowIndex = allow.lowerBound(range.lowerBound)
            let settings = snapshot.settings
            chosen = settings.blockCategories == nil ? nil : databases.map { db in db.categories.map { settings.blocks(category: $0) } }
        } else {
            rules = []
            allow = []
            chosen = nil
        }
        ruleNext = rules.first.map { max($0.lowerBound, range.lowerBound) } ?? 0
    }

    /// The current label as a `String` for a screen (CallKit): as stored when it passes the
    /// label rule (every label of a verified file), otherwise without its control and hidden
    /// characters (``LabelText/shownString(_:)``), so a file installed before the rule cannot
    /// reorder what a phone shows.
    public var labelString: String { LabelText.shownString(label) }

    /// The current entry's category; nil for a blocking entry that comes from a rule.
    package var category: Category? { fromRule ? nil : databases[merge.source].categories[merge.category] }

    /// The current label's length in UTF-8 bytes.
    public var labelByteCount: Int { label.count }

    /// Moves to the next entry; false at the end. Throws when a file is damaged; after that
    /// every call throws the same error.
    public mutating func next() throws(DirectoryError) -> Bool {
        if let failure { throw failure }
        if finished { return false }
        do throws(DirectoryError) {
            while true {
                if !held && !mergeDone {
                    do throws(CallerIDError) {
                        held = try merge.next()
                    } catch {
                        throw DirectoryError(error)
                    }
                    mergeDone = !held
                }
                let dbHead = held ? merge.number : UInt64.max
                let ruleHead = ruleIndex < rules.count ? ruleNext : UInt64.max
                let n = min(dbHead, ruleHead)
                if n == UInt64.max || n >= upper {
                    finished = true
                    return false
                }
                let fromFile = dbHead == n
                if fromFile { held = false }   // consumed: the next call advances the merge
                let isRule = ruleHead == n
                if isRule {
                    if ruleNext == rules[ruleIndex].upperBound {
                        ruleIndex += 1
                        if ruleIndex < rules.count { ruleNext = rules[ruleIndex].lowerBound }
                    } else {
                        ruleNext += 1
                    }
                }
                if list == .blocking {
                    while allowIndex < allow.count && allow[allowIndex] < n { allowIndex += 1 }
                    if allowIndex < allow.count && allow[allowIndex] == n { continue }
                    // A file's entry of a category not chosen is dropped (a rule still blocks it).
                    if !isRule, let chosen, !chosen[merge.source][merge.category] { continue }
                }
                number = n
                fromRule = isRule
                if isRule {
                    label = UnsafeRawBufferPointer(start: nil, count: 0)
                    file = -1
                } else {
                    label = merge.label
                    file = files[merge.source]
                }
                return true
            }
        } catch {
            failure = error
            throw error
        }
    }
}

/// Both lists of a ``DirectorySnapshot`` as one ascending stream, each number once, as the
/// phone treats it (docs/CALL-DIRECTORY.md, "One answer for a number"): blocked when the
/// blocking list holds it, identified when only the identification list does. Numbers in
/// neither list (an allow-listed number that only a blocking entry holds, say) do not appear.
/// What `lookup dump` of a store prints and what `lookup export` writes.
package struct AnswerStream {
    private var identified: MergedStream
    private var blocked: MergedStream
    private var hasIdentified = false, hasBlocked = false
    /// The streams whose entry was handed out, advanced by the next call.
    private var advanceIdentified = true, advanceBlocked = true

    /// The current number (valid after ``next()`` returned true).
    package private(set) var number: UInt64 = 0
    /// The identification list holds it: ``identifiedLabel`` and ``identifiedCategory`` are its entry's.
    package private(set) var isIdentified = false
    /// The blocking list holds it: ``blockingCategory`` is its winning entry's (nil for a rule).
    package private(set) var isBlocked = false

    package init(_ snapshot: DirectorySnapshot, from: UInt64 = 0) {
        identified = snapshot.stream(.identification, in: from..<UInt64.max)
        blocked = snapshot.stream(.blocking, in: from..<UInt64.max)
    }

    /// The identifying entry's label (empty when not identified), valid until the next call.
    package var identifiedLabel: UnsafeRawBufferPointer { isIdentified ? identified.label : UnsafeRawBufferPointer(start: nil, count: 0) }
    package var identifiedCategory: Category? { isIdentified ? identified.category : nil }
    package var blockingCategory: Category? { isBlocked ? blocked.category : nil }

    /// The label the phone shows: the identifying entry's, else the blocking entry's (empty
    /// for a rule). Valid until the next call.
    package var label: UnsafeRawBufferPointer { isIdentified ? identified.label : blocked.label }

    /// The answer's category: the blocking entry's (``Category/block`` for a rule) when
    /// blocked, the identifying entry's otherwise.
    package var category: Category {
        isBlocked ? blocked.category ?? .block : identified.category ?? .identify
    }

    /// The file (manifest index) the shown label comes from; -1 for a rule's empty label.
    package var labelFile: Int { isIdentified ? identified.file : blocked.file }

    /// Moves to the next number; false at the end. Throws when a file is damaged.
    package mutating func next() throws(DirectoryError) -> Bool {
        if advanceIdentified { hasIdentified = try identified.next() }
        if advanceBlocked { hasBlocked = try blocked.next() }
        guard hasIdentified || hasBlocked else {
            advanceIdentified = false
            advanceBlocked = false
            return false
        }
        number = min(hasIdentified ? identified.number : UInt64.max, hasBlocked ? blocked.number : UInt64.max)
        isIdentified = hasIdentified && identified.number == number
        isBlocked = hasBlocked && blocked.number == number
        advanceIdentified = isIdentified
        advanceBlocked = isBlocked
        return true
    }
}
