import CallerID

/// What one request did.
public struct FeedResult: Sendable {
    public enum Mode: Sendable, Equatable, CustomStringConvertible {
        /// The complete set from the start (a request that is not incremental, or an
        /// incremental one that began with "remove all": the loaded state was unknown, or a
        /// delta would have cost more).
        case full
        /// Removals and additions from the previously loaded version.
        case delta
        /// The continuation of a chunked load or delta.
        case resumed
        /// Nothing to do: the loaded entries are the target's.
        case upToDate

        public var description: String {
            switch self {
            case .full: "full"
            case .delta: "delta"
            case .resumed: "resumed"
            case .upToDate: "up-to-date"
            }
        }
    }

    public var mode: Mode
    /// True when the request began with both "remove all" calls.
    public var removedAll = false
    public var added: [CallDirectoryList: Int] = [.identification: 0, .blocking: 0]
    public var removed: [CallDirectoryList: Int] = [.identification: 0, .blocking: 0]
    /// The cursor to save once the request completed successfully.
    public var cursor: LoadCursor
    /// When the request switched to a new version: the change counts it weighed (delta vs full).
    package var weighed: DeltaCounts?

    /// True when the system will hold the whole target once this request completes.
    public var isComplete: Bool { cursor.isComplete }
    /// Sink calls made (additions, removals, "remove all").
    public var calls: Int { added.values.reduce(0, +) + removed.values.reduce(0, +) + (removedAll ? 2 : 0) }
}

/// Loads one slot of an installed set into a Call Directory extension, request by request.
///
/// ```swift
/// // In the extension's beginRequest(with:):
/// let store = try InstalledStore(path: container + "/callerid")
/// let feeder = try DirectoryFeeder(try store.pin(), slot: 0)   // one generation for everything
/// let saved = defaults.data(forKey: "cursor").flatMap { try? LoadCursor(bytes: [UInt8]($0)) }
/// let result = try feeder.serve(CallKitSink(context), cursor: saved, chunk: 50_000)
/// defaults.set(Data(result.cursor.bytes), forKey: "cursor-pending")
/// context.completeRequest()
/// // In the app, when reloadExtension completes without error: pending → "cursor"; while the
/// // cursor is not complete, reloadExtension again (the next request is incremental).
/// ```
///
/// - A request that is not incremental gets the target from the start (the system holds
///   nothing: first load, or the extension was switched off and on).
/// - An incremental request with the cursor of the same target continues where it stopped.
///   So does one whose cursor names an earlier generation that had the same entries in the
///   same range (the slot plan's ``SlotPlan/Slot/contentSince``): an unchanged slot is up to
///   date, with no call.
/// - An incremental request after an install (a new target) sends the delta from what is
///   loaded — removals first, then ascending additions, per list — when the loaded version is
///   still on disk (or a generation with the same entries in its range, by the plans) and the
///   delta is cheaper than a full reload; otherwise it sends "remove all"
///   and the target from the start. A delta is chunked like a load.
/// - `chunk` bounds the additions and removals of one request (the two "remove all" calls are
///   extra); nil sends everything at once.
public struct DirectoryFeeder {
    public let target: DirectorySnapshot
    public let version: LoadCursor.Version
    private let open: (UInt64) -> DirectorySnapshot?
    /// A generation whose entries in a loaded version's range are that version's (nil: none
    /// known): the target, or a generation still on disk, by the plans' ``SlotPlan/Slot/contentSince``.
    private var sameAs: (LoadCursor.Version) -> UInt64? = { _ in nil }

    /// Feeds `slot` (0-based) of a pinned generation, split by its plan: everything fed
    /// (entries, settings, slot ranges) comes from that one generation. Earlier generations
    /// still on disk serve deltas.
    /// - Throws: ``DirectoryError`` `invalidArgument` when the plan has no such slot.
    public init(_ installed: InstalledGeneration, slot: Int) throws(DirectoryError) {
        let plan = installed.plan
        guard plan.slots.indices.contains(slot) else {
            throw DirectoryError(.invalidArgument, "slot \(slot + 1) of \(plan.slots.count): no such slot")
        }
        let snapshot = installed.snapshot, store = installed.store, id = installed.id, previous = installed.previous
        self.init(target: snapshot, generation: id, range: plan.slots[slot].range) { old in
            if old == id { return snapshot }
            return store.generation(old).flatMap { try? DirectorySnapshot(directory: $0.path) }
        }
        // An extension that was not reloaded while its slot did not change holds an earlier
        // generation's entries: the same as this one's, or, once its generation is removed, as
        // the previous generation's (a delta from there).
        sameAs = { v in
            if plan.holdsSameEntries(slot: slot, as: v) { return id }
            guard let previous, let p = try? InstalledStore.readPlan(previous),
                  p.slots.indices.contains(where: { p.holdsSameEntries(slot: $0, as: v) }) else { return nil }
            return previous.id
        }
    }

    /// Feeds `slot` (0-based) of the store's current generation, pinned once
    /// (``InstalledStore/pin()``), split by the plan stored with it.
    /// - Throws: ``DirectoryError`` `fileNotFound` when nothing is installed (complete the
    ///   request with no entries).
    public init(store: InstalledStore, slot: Int) throws(DirectoryError) {
        try self.init(try store.pin(), slot: slot)
    }

    /// Feeds `range` of `target`, known as `generation`; `previous` opens earlier generations
    /// by id (nil when gone) to compute deltas.
    public init(target: DirectorySnapshot, generation: UInt64, range: Range<UInt64> = 0..<UInt64.max,
                previous: @escaping (UInt64) -> DirectorySnapshot?) {
        self.target = target
        version = LoadCursor.Version(generation: generation, range: range)
        open = previous
    }

    /// Serves one request: see the type's documentation.
    /// - Parameters:
    ///   - cursor: the cursor saved after the last successful request (nil: unknown).
    ///   - chunk: at most this many additions and removals in this request (nil: no limit).
    public func serve<S: CallDirectorySink>(_ sink: S, cursor: LoadCursor?, chunk: Int? = nil) throws(DirectoryError) -> FeedResult {
        if let chunk, chunk < 1 { throw DirectoryError(.invalidArgument, "chunk: \(chunk); give at least 1") }
        var saved = cursor
        // The cursor of an earlier generation whose entries in this range are the target's:
        // what it loaded is the target (nothing to send when it is complete).
        if var s = saved, s.target != version, sameAs(s.target) == version.generation {
            s.target = version
            saved = s
        }
        var budget = chunk ?? Int.max
        let fresh = LoadCursor(target: version, base: nil, phase: .addIdentification, position: version.lowerBound)
        var result = FeedResult(mode: .full, cursor: fresh)
        var base: DirectorySnapshot? = nil
        var reset = false

        if !sink.isIncremental {
            result.mode = .full
        } else if let saved, saved.target == version {
            result.cursor = saved
            result.mode = saved.isComplete ? .upToDate : .resumed
            if let b = saved.base {
                if let found = resolve(b) {
                    base = found.1
                    result.cursor.base = found.0
                } else {
                    reset = true
                }
            }
        } else if let saved, let found = saved.loadedVersion.flatMap(resolve) {
            let (loaded, old) = found
            var counts = DeltaCounts()
            for list in CallDirectoryList.allCases {
                try DirectoryDiff.count(&counts, list: list,
                                        old: old.stream(list, in: Self.span(loaded.lowerBound, loaded.end(list))),
                                        new: target.stream(list, in: Self.span(version.lowerBound, version.upperBound)))
            }
            result.weighed = counts
            if counts.changes < counts.fullReload {
                result.mode = .delta
                base = old
                result.cursor = LoadCursor(target: version, base: loaded, phase: .removeIdentification,
                                           position: min(loaded.lowerBound, version.lowerBound))
            } else {
                reset = true
            }
        } else {
            reset = true
        }
        if reset {
            sink.removeAllIdentificationEntries()
            sink.removeAllBlockingEntries()
            result.removedAll = true
            result.mode = .full
            result.cursor = fresh
            base = nil
        }

        var c = result.cursor
        var counts = Counts()
        try run(&c, budget: &budget, base: base, sink, &counts)
        if c.phase != .complete {
            // The chunk ran out: when nothing is left to send, this request completes the load
            // (no extra, empty request, which costs an extension reload on a phone). One call
            // into a sink that discards it tells.
            var probe = c, one = 1, none = Counts()
            try run(&probe, budget: &one, base: base, Discard(), &none)
            if none.calls == 0 && probe.phase == .complete { c = probe }
        }
        result.added = [.identification: counts.addedIdentification, .blocking: counts.addedBlocking]
        result.removed = [.identification: counts.removedIdentification, .blocking: counts.removedBlocking]
        if c.phase == .complete {
            c.base = nil
            c.position = 0
        }
        result.cursor = c
        return result
    }

    /// Plain counters in the loop (a dictionary update per entry costs a hash).
    private struct Counts {
        var addedIdentification = 0, addedBlocking = 0, removedIdentification = 0, removedBlocking = 0
        var calls: Int { addedIdentification + addedBlocking + removedIdentification + removedBlocking }
    }

    /// A sink that drops every call.
    private final class Discard: CallDirectorySink {
        var isIncremental: Bool { true }
        func addIdentificationEntry(_ number: Int64, label: String) {}
        func addBlockingEntry(_ number: Int64) {}
        func removeIdentificationEntry(_ number: Int64) {}
        func removeBlockingEntry(_ number: Int64) {}
        func removeAllIdentificationEntries() {}
        func removeAllBlockingEntries() {}
    }

    /// Sends from cursor `c` until the load is complete or `budget` calls were made.
    private func run<S: CallDirectorySink>(_ c: inout LoadCursor, budget: inout Int, base: DirectorySnapshot?, _ sink: S,
                                           _ k: inout Counts) throws(DirectoryError) {
        while c.phase != .complete && budget > 0 {
            let list: CallDirectoryList = (c.phase == .removeIdentification || c.phase == .addIdentification) ? .identification : .blocking
            let removing = c.phase == .removeIdentification || c.phase == .removeBlocking
            let targetSpan = Self.span(max(c.position, version.lowerBound), version.upperBound)
            var stoppedAt: UInt64? = nil
            if let b = c.base, let base {
                var diff = ListDiff(old: base.stream(list, in: Self.span(max(c.position, b.lowerBound), b.end(list))),
                                    new: target.stream(list, in: targetSpan))
                while let event = try diff.next() {
                    let n: UInt64
                    switch (event, removing) {
                    case (.removal, true), (.change, true):
                        n = diff.oldNumber
                        if list == .identification {
                            sink.removeIdentificationEntry(Int64(n))
                            k.removedIdentification += 1
                        } else {
                            sink.removeBlockingEntry(Int64(n))
                            k.removedBlocking += 1
                        }
                    case (.addition, false), (.change, false):
                        n = diff.new.number
                        if list == .identification {
                            sink.addIdentificationEntry(Int64(n), label: diff.new.labelString)
                            k.addedIdentification += 1
                        } else {
                            sink.addBlockingEntry(Int64(n))
                            k.addedBlocking += 1
                        }
                    default:
                        continue
                    }
                    budget -= 1
                    if budget == 0 { stoppedAt = n; break }
                }
            } else if !removing {
                var s = target.stream(list, in: targetSpan)
                while try s.next() {
                    if list == .identification {
                        sink.addIdentificationEntry(Int64(s.number), label: s.labelString)
                        k.addedIdentification += 1
                    } else {
                        sink.addBlockingEntry(Int64(s.number))
                        k.addedBlocking += 1
                    }
                    budget -= 1
                    if budget == 0 { stoppedAt = s.number; break }
                }
            }
            if let stoppedAt {
                c.position = stoppedAt + 1
            } else {
                c.phase = LoadCursor.Phase(rawValue: c.phase.rawValue + 1)!
                c.position = min(c.base?.lowerBound ?? version.lowerBound, version.lowerBound)
            }
        }
    }

    /// The entries of a loaded version: its generation's, or when that is gone, those of a
    /// generation with the same entries in its range (the version renamed to it); nil when
    /// neither is on disk.
    private func resolve(_ v: LoadCursor.Version) -> (LoadCursor.Version, DirectorySnapshot)? {
        if let snapshot = open(v.generation) { return (v, snapshot) }
        guard let g = sameAs(v), g != v.generation, let snapshot = open(g) else { return nil }
        var renamed = v
        renamed.generation = g
        return (renamed, snapshot)
    }

    static func span(_ from: UInt64, _ to: UInt64) -> Range<UInt64> { from..<max(from, to) }
}
