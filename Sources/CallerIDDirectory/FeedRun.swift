// `lookup feed`'s load of a slot: requests served until the load completes, through CallKit's
// simulator or through a checker of its rules that keeps nothing (a million entries checked
// in the memory of a few).
import CallerID
import Dispatch

/// CallKit's rules for a load from scratch, checked as the calls stream by, keeping nothing
/// (`lookup feed` without `--simulate`): numbers ascending and unique per list, at most
/// `maxEntries` in all, no removal. The first broken rule is kept as the error CallKit would
/// report; the heap's peak is sampled every 4,096 calls.
package final class CallKitRuleChecker: CallDirectorySink {
    package let maxEntries: Int
    package private(set) var isIncremental = false
    package private(set) var identification = 0
    package private(set) var blocking = 0
    private var lastIdentification: Int64 = 0
    private var lastBlocking: Int64 = 0
    package private(set) var error: CallDirectoryError?
    package private(set) var heapPeak = 0
    private var calls = 0

    package init(maxEntries: Int) { self.maxEntries = maxEntries }

    package func beginRequest(incremental: Bool) { isIncremental = incremental }

    private func tick() {
        calls &+= 1
        if calls & 4095 == 0 { heapPeak = max(heapPeak, currentHeapBytes()) }
    }

    private func fail(_ code: CallDirectoryError.Code, _ message: String) {
        if error == nil { error = CallDirectoryError(code, message) }
    }

    private func check(_ number: Int64, after last: Int64, _ name: String) {
        if number <= 0 || number == Int64.max { fail(.invalidNumber, "\(name) entry \(number) is not a phone number") }
        if number == last { fail(.duplicateEntries, "\(name) entry \(number) added twice") }
        if number < last { fail(.entriesOutOfOrder, "\(name) entry \(number) after \(last)") }
        if identification + blocking + 1 > maxEntries {
            fail(.maximumEntriesExceeded, "\(name) entry \(number) would be entry \(identification + blocking + 1) of at most \(maxEntries)")
        }
    }

    package func addIdentificationEntry(_ number: Int64, label: String) {
        tick()
        check(number, after: lastIdentification, "identification")
        lastIdentification = number
        identification += 1
    }

    package func addBlockingEntry(_ number: Int64) {
        tick()
        check(number, after: lastBlocking, "blocking")
        lastBlocking = number
        blocking += 1
    }

    // A load from scratch never removes; a removal is a loader bug worth reporting.
    package func removeIdentificationEntry(_ number: Int64) { removal() }
    package func removeBlockingEntry(_ number: Int64) { removal() }
    package func removeAllIdentificationEntries() { removal() }
    package func removeAllBlockingEntries() { removal() }

    private func removal() {
        tick()
        fail(.unexpectedIncrementalRemoval, "a load from scratch removed entries")
    }
}

/// What a feed loaded, request after request (``DirectoryFeeder/run(simulator:checker:from:chunk:)``).
package struct FeedTally {
    package var requests = 0
    package var failure: CallDirectoryError? = nil
    package var heapPeak = 0
    package var identification = 0, blocking = 0, removedIdentification = 0, removedBlocking = 0
    /// Sink calls, "remove all" included.
    package var calls = 0
    package var firstMode: FeedResult.Mode? = nil
    package var weighed: DeltaCounts? = nil
    package var seconds = 0.0

    package mutating func add(_ result: FeedResult) {
        requests += 1
        if firstMode == nil { firstMode = result.mode; weighed = result.weighed }
        identification += result.added[.identification] ?? 0
        blocking += result.added[.blocking] ?? 0
        removedIdentification += result.removed[.identification] ?? 0
        removedBlocking += result.removed[.blocking] ?? 0
        calls += result.calls
    }
}

extension DirectoryFeeder {
    /// Serves requests until the load completes or CallKit fails one: through `simulator` (the
    /// lists kept and CallKit's rules enforced), else through `checker` (the rules checked as
    /// the calls stream by). Starts from `start` (a previous load's cursor, or nil: from
    /// scratch), `chunk` entries a request at most. Throws what serving throws (a file damaged).
    package func run(simulator: CallDirectorySimulator?, checker: CallKitRuleChecker?,
                     from start: LoadCursor?, chunk: Int?) throws -> FeedTally {
        var tally = FeedTally()
        let baseline = currentHeapBytes()
        tally.heapPeak = baseline
        let started = DispatchTime.now().uptimeNanoseconds
        var cursor = start
        while tally.failure == nil {
            let result: FeedResult
            if let simulator {
                do { try simulator.beginRequest() } catch { tally.failure = error; break }
                result = try serve(simulator, cursor: cursor, chunk: chunk)
                do { try simulator.complete() } catch { tally.failure = error }
            } else {
                checker!.beginRequest(incremental: tally.requests > 0)
                result = try serve(checker!, cursor: cursor, chunk: chunk)
                tally.failure = checker!.error
            }
            tally.heapPeak = max(tally.heapPeak, currentHeapBytes())
            tally.add(result)
            cursor = result.cursor
            if result.isComplete { break }
        }
        tally.seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        if let checker { tally.heapPeak = max(tally.heapPeak, checker.heapPeak) }
        tally.heapPeak -= baseline
        return tally
    }
}

/// What `lookup feed` asks of a store: which slot, under which plan, how, and from what.
package struct SlotFeedRequest {
    /// The slot (0-based) of how many; nil: the store's plan, slot 1.
    package var slot: (index: Int, count: Int)? = nil
    /// A budget per slot other than the store's (the plan is then made anew for this run).
    package var maxEntries: Int? = nil
    /// Entries a request at most; nil: all in one.
    package var chunk: Int? = nil
    /// The system's cap: CallKit's, unless the run models another OS version on purpose.
    package var systemCap = CallDirectorySimulator.callKitMaximumEntries
    /// Through CallKit's simulator (else through the streaming rule checker).
    package var simulate = false
    /// The previous generation loaded first, this one as its incremental update (simulated).
    package var fromPrevious = false

    package init() {}
}

/// What a feed of one slot did (``InstalledStore/feed(_:)``).
package struct SlotFeedReport {
    package var tally: FeedTally
    package var generation: UInt64
    /// 0-based, of `slots`.
    package var slot: Int
    package var slots: Int
    /// The budget the load was held to: the plan's, within the system's cap.
    package var cap: Int
    /// Entries the simulator holds after the load (0 without it).
    package var loadedNow: Int
    /// The generation loaded first (`fromPrevious`).
    package var previousID: UInt64?
    /// What the store's plan says of this slot (nil when fed whole or replanned for this run).
    package var plan: SlotPlan?
    /// What the run did differently from what a phone does, and why (nil: nothing).
    package var note: String?
    /// Packs of a store of sources that could not be opened, left out.
    package var missing: [String]
}

extension InstalledStore {
    /// Loads one slot of the current generation (read once) as a Call Directory extension
    /// would: through CallKit's simulator or its rule checker, from scratch or as the update of
    /// the previous generation. A budget the system's cap refuses, a plan made anew and packs
    /// left out are said in the report's note; a failed CallKit request is the tally's failure.
    package func feed(_ request: SlotFeedRequest) throws -> SlotFeedReport {
        // One generation for everything this feed reads: CURRENT is read once, here.
        let pinned = try pin()
        var note: String? = nil
        func add(_ text: String) { note = note.map { "\($0); \(text)" } ?? text }
        let index = request.slot?.index ?? 0
        // Earlier generations (the delta base) by id, the pinned one as pinned.
        let open: (UInt64) -> DirectorySnapshot? = { id in
            if id == pinned.id { return pinned.snapshot }
            return self.generation(id).flatMap { try? self.pin($0).snapshot }
        }
        let (feeder, plan) = try Self.feeder(request, pinned, slot: index, note: add, previous: open)
        // The app's budget may not exceed what the system grants: CallKit enforces its cap.
        let cap = min(plan.maxEntries, request.systemCap)
        if plan.maxEntries > request.systemCap {
            let why = "--max-entries \(plan.maxEntries) is above the system's cap of \(request.systemCap) entries per extension"
            note = note.map { "\(why); \($0)" } ?? why
        }
        let simulator = request.simulate || request.fromPrevious ? CallDirectorySimulator(maxEntries: cap, systemCap: request.systemCap) : nil
        var cursor: LoadCursor? = nil
        var previousID: UInt64? = nil
        if request.fromPrevious, let simulator {
            // The previous generation as named by the same read of CURRENT, loaded first.
            guard let previous = pinned.previous, let old = try? pin(previous) else {
                throw DirectoryError(.fileNotFound, "\(path): no previous generation is kept (install twice first)")
            }
            let (oldFeeder, _) = try Self.feeder(request, old, slot: index, note: add) { _ in nil }
            do {
                try simulator.beginRequest()
                cursor = try oldFeeder.serve(simulator, cursor: nil).cursor
                try simulator.complete()
            } catch let e as CallDirectoryError {
                throw DirectoryError(.invalidArgument, "loading the previous generation failed: \(e)")
            }
            previousID = previous.id
        }
        let tally = try feeder.run(simulator: simulator, checker: simulator == nil ? CallKitRuleChecker(maxEntries: cap) : nil,
                                   from: cursor, chunk: request.chunk)
        let missing = pinned.snapshot.unreadable
        if !missing.isEmpty {
            // A store of sources serves the packs it can open; say which it could not.
            add(missing.map { "pack \($0.file) of source \($0.source ?? "?") left out (\($0.message)); the next fetch or install of source \($0.source ?? "?") brings it back" }
                .joined(separator: "; "))
        }
        return SlotFeedReport(tally: tally, generation: pinned.generation.id, slot: index, slots: plan.slots.count, cap: cap,
                              loadedNow: simulator?.count ?? 0, previousID: previousID,
                              plan: plan.generation == pinned.id && plan.slots.indices.contains(index) ? plan : nil,
                              note: note, missing: missing.map(\.file))
    }

    /// The feeder of slot `index` of `g` (replanned when the request's slot count or budget
    /// differ from the stored plan; fed whole, to show the error CallKit would report, when one
    /// slot cannot hold it).
    private static func feeder(_ request: SlotFeedRequest, _ g: InstalledGeneration, slot index: Int, note: (String) -> Void,
                               previous: @escaping (UInt64) -> DirectorySnapshot?) throws(DirectoryError) -> (DirectoryFeeder, SlotPlan) {
        let overridden = (request.slot != nil && request.slot!.count != g.plan.slots.count)
            || (request.maxEntries != nil && request.maxEntries != g.plan.maxEntries)
        var planned: InstalledGeneration? = g
        if overridden {
            let slots = request.slot?.count ?? g.plan.slots.count, cap = request.maxEntries ?? g.plan.maxEntries
            note("the store's plan has \(g.plan.slots.count) slot\(g.plan.slots.count == 1 ? "" : "s") of at most \(g.plan.maxEntries); "
                 + "this run split the entries anew into \(slots) of at most \(cap) (a phone loads the installed plan's bounds)")
            do {
                planned = try g.replanned(slots: slots, maxEntries: cap)
            } catch {
                guard error.code == .budgetExceeded && slots == 1 else { throw error }
                note(error.message)
                planned = nil
            }
        }
        guard let p = planned else {
            let whole = SlotPlan(maxEntries: request.maxEntries ?? g.plan.maxEntries,
                                 slots: [SlotPlan.Slot(lowerBound: 0, upperBound: UInt64.max, identification: 0, blocking: 0)])
            return (DirectoryFeeder(target: g.snapshot, generation: g.id, previous: previous), whole)
        }
        guard p.plan.slots.indices.contains(index) else {
            throw DirectoryError(.invalidArgument, "slot \(index + 1) of \(p.plan.slots.count): no such slot")
        }
        // The generation's own feeder: earlier generations from the store, and an extension that
        // holds entries its slot still has (an unchanged slot) is up to date.
        return (try DirectoryFeeder(p, slot: index), p.plan)
    }
}
