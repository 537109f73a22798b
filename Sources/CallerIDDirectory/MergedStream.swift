import CallerID
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
public final class DirectorySnapshot: @unchecked Sendable {
    // @unchecked: immutable after init; `Database` is itself safe to share.
    /// The folder holding `manifest.json`.
    public let directory: String
    public let manifest: DirectoryManifest
    public let settings: FeedSettings
    /// Databases in precedence order (highest first) and the manifest index of each.
    let databases: [Database]
    let manifestIndex: [Int]
    let ruleRanges: [ClosedRange<UInt64>]

    /// Opens every file of `directory/manifest.json`.
    /// - Parameters:
    ///   - settings: the settings to apply; nil reads `directory/settings.json` when there is
    ///     one (an installed generation) and takes the defaults otherwise.
    ///   - verify: also run the full ``Database/verify()`` of each file (an install does it).
    public convenience init(directory: String, settings: FeedSettings? = nil, verify: Bool = false) throws(DirectoryError) {
        try self.init(directory: directory, manifest: try DirectoryManifest.read(directory: directory),
                      settings: settings, verify: verify)
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

    private init(directory: String, manifest: DirectoryManifest, settings: FeedSettings?, verify: Bool) throws(DirectoryError) {
        self.directory = directory
        self.manifest = manifest
        if let settings {
            self.settings = settings
        } else if let data = FileManager.default.contents(atPath: directory + "/settings.json") {
            self.settings = try FeedSettings.decode(data, path: directory + "/settings.json")
        } else {
            self.settings = FeedSettings()
        }
        try self.settings.validate()
        let order = manifest.files.indices.sorted {
            let a = manifest.files[$0].priority ?? 0, b = manifest.files[$1].priority ?? 0
            return a != b ? a > b : $0 < $1
        }
        var databases: [Database] = []
        for i in order {
            do {
                databases.append(try Database(path: directory + "/" + manifest.files[i].file, verify: verify))
            } catch {
                throw DirectoryError(error)
            }
        }
        self.databases = databases
        manifestIndex = order
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
/// ``DirectorySnapshot``: a k-way merge with a binary heap over one cursor per file, a number
/// present in several files given once (see the precedence in ``DirectorySnapshot``), the
/// allow list and category choice applied, and prefix/range rules expanded lazily into the
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
    struct Source {
        var cursor: EntryCursor
        var head: UInt64 = 0
        var label = UnsafeRawBufferPointer(start: nil, count: 0)
        var chosen = true
        let file: Int
    }

    public let list: CallDirectoryList
    /// Numbers ≥ this end the stream.
    let upper: UInt64
    private var sources: [Source]
    /// Indices into `sources`, a binary min-heap on (head, index): equal heads pop in precedence order.
    private var heap: [Int32]
    /// Sources whose head was consumed by the last call; advanced at the start of the next one,
    /// so that the label handed out stays valid until then.
    private var pending: [Int32]
    private let rules: [ClosedRange<UInt64>]
    private var ruleIndex = 0
    private var ruleNext: UInt64 = 0
    private let allow: [UInt64]
    private var allowIndex = 0
    private let chosen: Set<String>?
    private var finished = false
    private var failure: DirectoryError?

    /// The current entry's number (valid after ``next()`` returned true).
    public private(set) var number: UInt64 = 0
    /// The current entry's label bytes (UTF-8), valid until the following ``next()``.
    /// Empty for blocking entries that come from a rule.
    public private(set) var label = UnsafeRawBufferPointer(start: nil, count: 0)
    /// True when the current blocking entry comes from a prefix or range rule.
    public private(set) var fromRule = false
    /// The file the current entry comes from (index in manifest order), -1 for a rule.
    public private(set) var file = -1

    init(_ snapshot: DirectorySnapshot, list: CallDirectoryList, range: Range<UInt64>) {
        self.list = list
        upper = range.upperBound
        let enabled = list == .identification ? snapshot.settings.identification : snapshot.settings.blocking
        let filter = CategoryFilter.action(list == .identification ? .identify : .block)
        var sources: [Source] = []
        if enabled {
            for (i, db) in snapshot.databases.enumerated() where snapshot.mayHold(i, list) {
                sources.append(Source(cursor: db.cursor(from: range.lowerBound, filter: filter),
                                      file: snapshot.manifestIndex[i]))
            }
        }
        self.sources = sources
        heap = []
        heap.reserveCapacity(sources.count)
        pending = Array(0..<Int32(sources.count))   // every source is advanced by the first next()
        pending.reserveCapacity(sources.count)
        if list == .blocking && enabled {
            rules = snapshot.ruleRanges.filter { $0.upperBound >= range.lowerBound && $0.lowerBound < range.upperBound }
            allow = snapshot.settings.allowList
            allowIndex = allow.lowerBound(range.lowerBound)
            chosen = snapshot.settings.blockCategories.map { Set($0.map { $0.lowercased() }) }
        } else {
            rules = []
            allow = []
            chosen = nil
        }
        ruleNext = rules.first.map { max($0.lowerBound, range.lowerBound) } ?? 0
    }

    /// The current label as a `String`.
    public var labelString: String { String(decoding: label, as: UTF8.self) }

    /// Moves to the next entry; false at the end. Throws when a file is damaged; after that
    /// every call throws the same error.
    public mutating func next() throws(DirectoryError) -> Bool {
        if let failure { throw failure }
        if finished { return false }
        do {
            try advancePending()
            while true {
                let dbHead = heap.isEmpty ? UInt64.max : sources[Int(heap[0])].head
                let ruleHead = ruleIndex < rules.count ? ruleNext : UInt64.max
                let n = min(dbHead, ruleHead)
                if n == UInt64.max || n >= upper {
                    finished = true
                    return false
                }
                var winner = -1
                if dbHead == n {
                    winner = Int(popMin())
                    pending.append(Int32(winner))
                    while !heap.isEmpty && sources[Int(heap[0])].head == n {
                        pending.append(popMin())
                    }
                }
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
                    if (allowIndex < allow.count && allow[allowIndex] == n) || (!isRule && !sources[winner].chosen) {
                        try advancePending()
                        continue
                    }
                }
                number = n
                fromRule = isRule
                if isRule {
                    label = UnsafeRawBufferPointer(start: nil, count: 0)
                    file = -1
                } else {
                    label = sources[winner].label
                    file = sources[winner].file
                }
                return true
            }
        } catch {
            failure = error
            throw error
        }
    }

    private mutating func advancePending() throws(DirectoryError) {
        guard !pending.isEmpty else { return }
        let chosen = self.chosen
        for s in pending {
            let i = Int(s)
            var found = false
            var number: UInt64 = 0
            var label = UnsafeRawBufferPointer(start: nil, count: 0)
            var isChosen = true
            do {
                // forEach, not the generic next(_:): no generic metadata lookup per entry.
                try sources[i].cursor.forEach { view in
                    found = true
                    number = view.number
                    label = view.labelBytes
                    if let chosen { isChosen = chosen.contains(view.category.name) }
                    return false
                }
            } catch {
                throw DirectoryError(error)
            }
            if found && number < upper {
                sources[i].head = number
                sources[i].label = label
                sources[i].chosen = isChosen
                push(s)
            }
        }
        pending.removeAll(keepingCapacity: true)
    }

    // MARK: Binary heap on (head, index)

    @inline(__always)
    private func less(_ a: Int32, _ b: Int32) -> Bool {
        let x = sources[Int(a)].head, y = sources[Int(b)].head
        return x < y || (x == y && a < b)
    }

    private mutating func push(_ s: Int32) {
        heap.append(s)
        var i = heap.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            guard less(heap[i], heap[parent]) else { break }
            heap.swapAt(i, parent)
            i = parent
        }
    }

    private mutating func popMin() -> Int32 {
        let top = heap[0]
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            var i = 0
            let n = heap.count
            while true {
                let l = 2 * i + 1
                guard l < n else { break }
                var c = l
                if l + 1 < n && less(heap[l + 1], heap[l]) { c = l + 1 }
                guard less(heap[c], heap[i]) else { break }
                heap.swapAt(i, c)
                i = c
            }
        }
        return top
    }
}
