import Foundation
import Testing
@testable import CallerID
@testable import CallerIDDirectory

/// Slot plans made from the previous generation's: boundaries kept where the slots still fit,
/// moved at the fewest places where they do not, and slots whose entries did not change left
/// alone (no calls, no reload) — checked against the oracle and the CallKit simulator.
@Suite struct StableSlotPlanTests {
    static let spam = try! Category("spam", action: .block)

    /// The first number of region `r`'s stretch: regions never share numbers, as countries or
    /// prefixes do not.
    static func base(_ r: Int) -> UInt64 { 79_000_000_000 + UInt64(r) * 10_000_000 }

    /// Region `r` with `count` entries: numbers base + 0, 10, 20, … (`offset` shifts them).
    static func region(_ r: Int, _ count: Int, offset: UInt64 = 0, label: String = "Shop") -> DirectoryTestFile {
        DirectoryTestFile(name: "r\(r)-1.cid", region: "r\(r)", entries: (0..<count).map {
            Entry(number: base(r) + offset + UInt64($0) * 10, label: "\(label) \(r).\($0)", category: $0 % 7 == 3 ? spam : .identify)
        })
    }

    /// Six regions of 100 entries: 3 balanced slots of 200 hold regions 0–1, 2–3 and 4–5.
    static func six() -> [DirectoryTestFile] { (0..<6).map { region($0, 100) } }

    static func settings(slots: Int, maxEntries: Int) -> FeedSettings {
        FeedSettings(slots: slots, maxEntries: maxEntries)
    }

    /// A store with `files` installed as generation 1 and each slot loaded into a simulator.
    struct Loaded {
        let dir = TempDir()
        let store: InstalledStore
        var sims: [CallDirectorySimulator] = []
        var cursors: [LoadCursor?] = []
        var versions = 0

        init(_ files: [DirectoryTestFile], _ settings: FeedSettings) throws {
            store = try InstalledStore(path: dir.path("store"))
            try install(files, settings)
            try reloadAll()
        }

        @discardableResult
        mutating func install(_ files: [DirectoryTestFile], _ settings: FeedSettings) throws -> InstalledStore.InstallReport {
            versions += 1
            let build = dir.path("v\(versions)")
            try writeBuildDirectory(build, files)
            return try store.install(from: build, settings: settings)
        }

        /// One incremental request to slot `i` (after a first full load), then the rest of the
        /// load; returns the first request's result.
        @discardableResult
        mutating func reload(_ i: Int) throws -> FeedResult {
            while sims.count <= i {
                sims.append(CallDirectorySimulator())
                cursors.append(nil)
            }
            let feeder = try DirectoryFeeder(store: store, slot: i)
            try sims[i].beginRequest()
            let first = try feeder.serve(sims[i], cursor: cursors[i])
            try sims[i].complete()
            cursors[i] = first.cursor
            if !first.isComplete { try feedUntilComplete(feeder, sims[i], cursor: &cursors[i]) }
            return first
        }

        mutating func reloadAll() throws {
            for i in try store.plan().slots.indices { try reload(i) }
        }
    }

    // MARK: Regression

    /// Before: every install split the entries anew, balanced, so a change anywhere moved the
    /// boundaries and a slot whose entries had not changed still got calls on its next
    /// incremental request (4,105 of them on a 4M-number directory after 3 regions changed).
    @Test func anInstallThatChangesOneRegionSendsNothingToTheOtherSlots() throws {
        var files = Self.six()
        var loaded = try Loaded(files, Self.settings(slots: 3, maxEntries: 1_000))
        files[0] = Self.region(0, 160)   // 60 more entries in the first slot's first region
        files[1].entries[5].label = "Renamed"
        try loaded.install(files, Self.settings(slots: 3, maxEntries: 1_000))
        let first = try loaded.reload(0)
        #expect(first.calls == 62)   // 60 additions, a label changed: removed and added
        for i in [1, 2] {
            let r = try loaded.reload(i)
            #expect(r.calls == 0, "slot \(i + 1): \(r.mode), \(r.calls) calls")
        }
        let plan = try loaded.store.plan()
        for (i, sim) in loaded.sims.enumerated() {
            #expect(sameLists(simulatorLists(sim), expectedLists(files, range: plan.slots[i].range)))
        }
    }

    // MARK: Property

    /// Random region sets and random edits (rows changed, regions added and removed, a region
    /// doubled, a blocking pack added, allow list and rules): the plan tiles the number line, no
    /// slot holds more than its cap, the same inputs give the same plan, every boundary stays
    /// when no slot overflows, a slot is reported changed exactly when its bounds or its
    /// entries changed, and a slot reported unchanged gets no call at all.
    /// Seeds chosen to cover plans kept, adjusted and rebalanced and sets refused (each install
    /// costs its fsyncs: a few seeds).
    @Test(arguments: [UInt64(1), 2, 4, 8, 16, 20])
    func stablePlansOverRandomEdits(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed &* 0x9E37_79B9)
        var used = Set<Int>()
        var files: [DirectoryTestFile] = []
        for _ in 0..<6 {
            var r = Int.random(in: 0..<40, using: &rng)
            while used.contains(r) { r = Int.random(in: 0..<40, using: &rng) }
            used.insert(r)
            files.append(Self.region(r, Int.random(in: 30...150, using: &rng)))
        }
        files.sort { $0.name < $1.name }
        let slots = [2, 3, 4][Int(seed % 3)]
        let total = files.reduce(0) { $0 + $1.entries.count }
        // Tight caps overflow after a few edits; loose ones never do.
        let cap = seed % 2 == 0 ? total / slots + total / (3 * slots) : total
        var settings = Self.settings(slots: slots, maxEntries: cap)
        var loaded = try Loaded(files, settings)
        var refusals = 0, kept = 0, unchangedSlots = 0
        var splits = Set<SlotPlan.Split>()

        for step in 0..<5 {
            let oldFiles = files, oldSettings = settings
            let oldPlan = try loaded.store.plan()
            for _ in 0..<Int.random(in: 1...2, using: &rng) {
                switch Int.random(in: 0..<7, using: &rng) {
                case 0, 1:   // a few rows of one region dropped, relabelled, added
                    let i = Int.random(in: 0..<files.count, using: &rng)
                    var e = files[i].entries
                    if e.count > 3 { e.remove(at: Int.random(in: 0..<e.count, using: &rng)) }
                    if !e.isEmpty { e[Int.random(in: 0..<e.count, using: &rng)].label += " new" }
                    let n = (e.last?.number ?? Self.base(i)) + 3
                    e.append(Entry(number: n, label: "added \(step)", category: .identify))
                    files[i].entries = e
                case 2:      // a region added
                    var r = Int.random(in: 0..<40, using: &rng)
                    while used.contains(r) { r = Int.random(in: 0..<40, using: &rng) }
                    used.insert(r)
                    files.append(Self.region(r, Int.random(in: 20...80, using: &rng)))
                    files.sort { $0.name < $1.name }
                case 3:      // a region removed
                    if files.count > 2 { files.remove(at: Int.random(in: 0..<files.count, using: &rng)) }
                case 4:      // a region doubled
                    let i = Int.random(in: 0..<files.count, using: &rng)
                    if let r = Int(files[i].region.dropFirst()) {
                        files[i] = Self.region(r, files[i].entries.count * 2, label: "Grown")
                    }
                case 5:      // a blocking pack over a few regions
                    let picked = files.shuffled(using: &rng).prefix(2)
                    let numbers = Set(picked.flatMap { $0.entries.prefix(8).map { $0.number + 1 } }).sorted()
                    files.removeAll { $0.region == "blocks" }
                    files.append(DirectoryTestFile(name: "blocks-\(step).cid", region: "blocks",
                                                   entries: numbers.map { Entry(number: $0, label: "", category: Self.spam) }))
                default:     // settings: an allow-listed number, a rule inside one region
                    let f = files[Int.random(in: 0..<files.count, using: &rng)]
                    if let e = f.entries.first(where: { $0.category.action == .block }) { settings.allowList = [e.number] }
                    let start = (f.entries.first?.number ?? 79_000_000_000) + 5
                    settings.rules = [try BlockingRule(first: start, last: start + 4)]
                }
            }
            let report: InstalledStore.InstallReport
            do {
                report = try loaded.install(files, settings)
            } catch let error as DirectoryError {
                // More than the slots hold: refused, the installed set stays.
                #expect(error.code == .budgetExceeded, "seed \(seed) step \(step): \(error)")
                #expect(try loaded.store.plan() == oldPlan)
                (files, settings) = (oldFiles, oldSettings)
                refusals += 1
                continue
            }
            let plan = report.plan
            if let split = plan.split { splits.insert(split) }
            let context = "seed \(seed) step \(step) split \(plan.split.map(\.rawValue) ?? "?")"
            try plan.validate(path: "plan")
            #expect(plan.slots.count == slots && plan.generation == report.generation.id, "\(context)")
            for (i, s) in plan.slots.enumerated() {
                let lists = expectedLists(files, settings: settings, range: s.range)
                #expect(s.count <= cap && s.count == lists.identification.count + lists.blocking.count, "\(context) slot \(i)")
            }
            // Deterministic: made again from the same previous plan and entries, the same plan.
            let pinned = try loaded.store.pin()
            let previous = try #require(pinned.previous)
            let again = try SlotPlan.stable(pinned.snapshot, generation: pinned.id,
                                            after: .init(generation: previous.id, plan: try loaded.store.plan(previous),
                                                         snapshot: try loaded.store.snapshot(previous)),
                                            slots: slots, maxEntries: cap)
            #expect(again == plan, "\(context)")
            // No slot overflows: every boundary stays.
            let overflows = oldPlan.slots.contains { s in
                let l = expectedLists(files, settings: settings, range: s.range)
                return l.identification.count + l.blocking.count > cap
            }
            if !overflows {
                #expect(plan.split == .kept && plan.slots.map(\.range) == oldPlan.slots.map(\.range), "\(context)")
                kept += 1
            }
            // Changed exactly when the bounds or the entries differ.
            for i in plan.slots.indices {
                let sameBounds = oldPlan.slots[i].range == plan.slots[i].range
                let sameEntries = sameBounds && sameLists(expectedLists(oldFiles, settings: oldSettings, range: oldPlan.slots[i].range),
                                                          expectedLists(files, settings: settings, range: plan.slots[i].range))
                #expect(plan.boundsChanged(slot: i) == !sameBounds, "\(context) slot \(i)")
                #expect(plan.contentChanged(slot: i) == !sameEntries, "\(context) slot \(i)")
            }
            // Every slot's next request: nothing for an unchanged slot; the new entries everywhere.
            for i in plan.slots.indices {
                let first = try loaded.reload(i)
                #expect(loaded.sims[i].absentRemovals == 0, "\(context) slot \(i)")
                #expect(sameLists(simulatorLists(loaded.sims[i]), expectedLists(files, settings: settings, range: plan.slots[i].range)),
                        "\(context) slot \(i)")
                if !plan.contentChanged(slot: i) {
                    #expect(first.calls == 0 && first.mode == .upToDate, "\(context) slot \(i): \(first.mode), \(first.calls) calls")
                    unchangedSlots += 1
                }
            }
        }
        // The seeds exercise what they are meant to.
        #expect(kept > 0 && unchangedSlots > 0, "seed \(seed): \(kept) plans kept, \(unchangedSlots) slots unchanged")
        if seed % 2 == 0 { #expect(splits.contains(.adjusted) || splits.contains(.rebalanced) || refusals > 0, "seed \(seed): \(splits)") }
    }

    // MARK: Edge cases

    /// A plan made by a store's first install, then the given next version installed.
    func replan(_ v1: [DirectoryTestFile], _ s1: FeedSettings, _ v2: [DirectoryTestFile], _ s2: FeedSettings) throws
        -> (old: SlotPlan, new: SlotPlan, loaded: Loaded)
    {
        var loaded = try Loaded(v1, s1)
        let old = try loaded.store.plan()
        #expect(old.split == .balanced && old.slots.map(\.count) == [200, 200, 200])
        try loaded.install(v2, s2)
        return (old, try loaded.store.plan(), loaded)
    }

    /// Slots `kept` keep their bounds (same index); the others do not.
    func expectKept(_ old: SlotPlan, _ new: SlotPlan, _ kept: Set<Int>, sourceLocation: SourceLocation = #_sourceLocation) {
        for i in new.slots.indices {
            let same = i < old.slots.count && old.slots[i].range == new.slots[i].range
            #expect(same == kept.contains(i), "slot \(i + 1)", sourceLocation: sourceLocation)
            #expect(new.boundsChanged(slot: i) == !kept.contains(i), "slot \(i + 1)", sourceLocation: sourceLocation)
        }
    }

    @Test func aSlotOverflowingInTheMiddleSharesWithTheNeighbourThatHasRoom() throws {
        var v2 = Self.six()
        v2[2] = Self.region(2, 200)    // slot 2: 300 of 250
        v2[5] = Self.region(5, 50)     // slot 3: 150, more room than slot 1's 200
        let (old, new, loaded) = try replan(Self.six(), Self.settings(slots: 3, maxEntries: 250), v2, Self.settings(slots: 3, maxEntries: 250))
        #expect(new.split == .adjusted)
        expectKept(old, new, [0])
        #expect(new.slots.map(\.count) == [200, 225, 225] && !new.contentChanged(slot: 0))
        #expect(new.slots[1].lowerBound == old.slots[1].lowerBound)
        var l = loaded
        #expect(try l.reload(0).calls == 0)
    }

    @Test func theFirstOrTheLastSlotOverflowing() throws {
        for (grown, kept) in [(0, 2), (5, 0)] {
            var v2 = Self.six()
            v2[grown] = Self.region(grown, 200)
            let (old, new, _) = try replan(Self.six(), Self.settings(slots: 3, maxEntries: 250), v2, Self.settings(slots: 3, maxEntries: 250))
            #expect(new.split == .adjusted)
            expectKept(old, new, [kept])
            #expect(new.slots.map(\.count).allSatisfy { $0 <= 250 } && new.count == 700)
            #expect(!new.contentChanged(slot: kept))
        }
    }

    @Test func aLowerCapMovesOnlyTheSlotsOverIt() throws {
        var v2 = Self.six()
        v2[0] = Self.region(0, 110)    // slot 1: 210
        let (old, new, _) = try replan(Self.six(), Self.settings(slots: 3, maxEntries: 250), Self.six(), Self.settings(slots: 3, maxEntries: 220))
        #expect(new.split == .kept && new.slots.map(\.range) == old.slots.map(\.range) && new.maxEntries == 220)
        #expect((0..<3).allSatisfy { !new.contentChanged(slot: $0) })
        var loaded = try Loaded(Self.six(), Self.settings(slots: 3, maxEntries: 250))
        try loaded.install(v2, Self.settings(slots: 3, maxEntries: 205))
        let lowered = try loaded.store.plan()
        #expect(lowered.split == .adjusted && lowered.slots.map(\.count) == [205, 205, 200])
        expectKept(old, lowered, [2])
    }

    @Test func addedSlotsSplitTheLastAndRemovedOnesMergeTheLast() throws {
        let (old, more, _) = try replan(Self.six(), Self.settings(slots: 3, maxEntries: 1_000), Self.six(), Self.settings(slots: 4, maxEntries: 1_000))
        #expect(more.split == .adjusted && more.slots.map(\.count) == [200, 200, 100, 100])
        expectKept(old, more, [0, 1])
        #expect(!more.contentChanged(slot: 0) && !more.contentChanged(slot: 1) && more.contentChanged(slot: 2) && more.contentChanged(slot: 3))

        let (old3, fewer, loaded) = try replan(Self.six(), Self.settings(slots: 3, maxEntries: 1_000), Self.six(), Self.settings(slots: 2, maxEntries: 1_000))
        #expect(fewer.split == .adjusted && fewer.slots.map(\.count) == [200, 400])
        expectKept(old3, fewer, [0])
        #expect(fewer.slots[1].lowerBound == old3.slots[1].lowerBound && fewer.slots[1].upperBound == UInt64.max)
        var l = loaded
        #expect(try l.reload(0).calls == 0)
        #expect(try l.reload(1).calls == 200)   // slot 2 takes slot 3's entries
    }

    @Test func everythingDeletedKeepsTheBoundsAndEmptiesEverySlot() throws {
        let empty = [DirectoryTestFile(name: "r0-1.cid", region: "r0", entries: [])]
        let (old, new, loaded) = try replan(Self.six(), Self.settings(slots: 3, maxEntries: 250), empty, Self.settings(slots: 3, maxEntries: 250))
        #expect(new.split == .kept && new.count == 0 && new.slots.map(\.range) == old.slots.map(\.range))
        #expect((0..<3).allSatisfy { new.contentChanged(slot: $0) && !new.boundsChanged(slot: $0) })
        var l = loaded
        for i in 0..<3 {
            let r = try l.reload(i)   // "remove all" is cheaper than 200 removals
            #expect(r.removedAll && r.calls == 2 && l.sims[i].count == 0)
        }
    }

    @Test func aSetThatNoLongerFitsIsRefusedAsBefore() throws {
        var v2 = Self.six()
        v2[3] = Self.region(3, 160)    // 660 > 3 × 215
        var loaded = try Loaded(Self.six(), Self.settings(slots: 3, maxEntries: 215))
        let before = try loaded.store.plan()
        var thrown: DirectoryError? = nil
        do { try loaded.install(v2, Self.settings(slots: 3, maxEntries: 215)) } catch let e as DirectoryError { thrown = e }
        let error = try #require(thrown)
        // The balanced plan's error, word for word.
        var balanced: DirectoryError? = nil
        do { _ = try SlotPlan.make(try DirectorySnapshot(directory: loaded.dir.path("v2")), slots: 3, maxEntries: 215) } catch { balanced = error }
        #expect(error.code == .budgetExceeded && error.message == balanced?.message)
        #expect(error.message.contains("660 entries") && error.message.contains("4 needed"))
        #expect(try loaded.store.plan() == before && (try loaded.store.current())?.id == 1)
    }

    @Test func everythingIsSplitAnewOnlyWhenNothingElseFits() throws {
        var v2 = Self.six()
        v2[0] = Self.region(0, 125)    // slot 1: 225 of 210; slots 1 and 2 together: 425 > 420
        let (old, new, _) = try replan(Self.six(), Self.settings(slots: 3, maxEntries: 210), v2, Self.settings(slots: 3, maxEntries: 210))
        #expect(new.split == .rebalanced)
        expectKept(old, new, [])
        #expect(new.slots.allSatisfy { $0.count <= 210 } && new.count == 625)
    }

    @Test func theRepairKeepsTheMostSlotsAtTheirIndex() {
        typealias P = SlotPlan.Piece
        // Fits: everything kept.
        #expect(SlotPlan.repair([5, 9, 3], slots: 3, maxEntries: 10) == [P.keep(0), .keep(1), .keep(2)])
        // The middle overflows: shared with the neighbour holding fewer entries.
        #expect(SlotPlan.repair([5, 12, 3], slots: 3, maxEntries: 10) == [P.keep(0), .resplit(1..<3, slots: 2)])
        #expect(SlotPlan.repair([3, 12, 5], slots: 3, maxEntries: 10) == [P.resplit(0..<2, slots: 2), .keep(2)])
        // A slot added: the last one split; one removed: the last two merged.
        #expect(SlotPlan.repair([5, 5, 8], slots: 4, maxEntries: 10) == [P.keep(0), .keep(1), .resplit(2..<3, slots: 2)])
        #expect(SlotPlan.repair([5, 5, 4], slots: 2, maxEntries: 10) == [P.keep(0), .resplit(1..<3, slots: 1)])
        // The two slots at the end cannot take the overflow: three are split anew.
        #expect(SlotPlan.repair([2, 9, 10, 11], slots: 4, maxEntries: 10) == [P.keep(0), .resplit(1..<4, slots: 3)])
        // Nothing else fits: everything.
        #expect(SlotPlan.repair([11, 10, 9], slots: 3, maxEntries: 10) == [P.resplit(0..<3, slots: 3)])
        // Too many entries: none.
        #expect(SlotPlan.repair([11, 10, 10], slots: 3, maxEntries: 10) == nil)
    }

    // MARK: Skipped reloads

    /// An app reloads only the extensions whose slot changed. An extension left alone keeps a
    /// cursor of an old generation; once that generation is removed from the store, its next
    /// request is still a delta (from the previous generation, whose entries in its range are
    /// the same), not a full reload.
    @Test func anExtensionNotReloadedWhileItsSlotWasUnchangedGetsADeltaLater() throws {
        var files = Self.six()
        var loaded = try Loaded(files, Self.settings(slots: 3, maxEntries: 1_000))
        let firstCursor = try #require(loaded.cursors[2])
        for step in 0..<3 {   // three installs that change only slot 1; only it is reloaded
            files[0].entries[step].label = "Changed \(step)"
            let report = try loaded.install(files, Self.settings(slots: 3, maxEntries: 1_000))
            #expect(report.plan.contentChanged(slot: 0) && !report.plan.contentChanged(slot: 1) && !report.plan.contentChanged(slot: 2))
            #expect(report.plan.slots[2].contentSince == 1 && report.plan.isLoaded(slot: 2, by: firstCursor))
            #expect(!report.plan.isLoaded(slot: 0, by: try #require(loaded.cursors[0])))
            try loaded.reload(0)
        }
        #expect(loaded.store.generation(1) == nil)   // the generation slot 3 loaded is gone
        files[5].entries[0].label = "Changed"
        let report = try loaded.install(files, Self.settings(slots: 3, maxEntries: 1_000))
        #expect(report.plan.contentChanged(slot: 2) && !report.plan.isLoaded(slot: 2, by: firstCursor))
        let r = try loaded.reload(2)
        #expect(r.mode == .delta && r.calls == 2 && !r.removedAll)
        #expect(sameLists(simulatorLists(loaded.sims[2]), expectedLists(files, range: report.plan.slots[2].range)))
        // Slot 2 was never reloaded: its first load is still what it holds.
        #expect(report.plan.isLoaded(slot: 1, by: try #require(loaded.cursors[1])))
        #expect(try loaded.reload(1).calls == 0)
    }

    // MARK: CLI

    /// `lookup install --json` says per slot whether its bounds and entries changed, and
    /// `lookup feed --from-previous --json` counts the calls: none for an unchanged slot.
    @Test func installAndFeedReportWhichSlotsChanged() throws {
        let dir = TempDir()
        var files = Self.six()
        try writeBuildDirectory(dir.path("v1"), files)
        files[5] = Self.region(5, 120)
        try writeBuildDirectory(dir.path("v2"), files)
        let store = dir.path("store")
        let i1 = try lookup(["install", "--store", store, dir.path("v1"), "--slots", "3", "--json"])
        #expect(i1.status == 0, "\(i1.stderr)")
        #expect(try #require(try jsonObjects(i1.stdout).first)["split"] as? String == "balanced")
        let i2 = try lookup(["install", "--store", store, dir.path("v2"), "--json"])
        let r2 = try #require(try jsonObjects(i2.stdout).first)
        #expect(r2["split"] as? String == "kept")
        let slots = try #require(r2["slots"] as? [[String: Any]])
        #expect(slots.map { $0["content_changed"] as? Bool } == [false, false, true])
        #expect(slots.map { $0["bounds_changed"] as? Bool } == [false, false, false])
        #expect(slots.map { $0["content_since"] as? Int } == [1, 1, 2] && slots.map { $0["bounds_since"] as? Int } == [1, 1, 1])

        for (slot, calls, changed) in [(1, 0, false), (3, 20, true)] {
            let f = try lookup(["feed", "--store", store, "--slot", "\(slot)/3", "--from-previous", "--simulate", "--json"])
            #expect(f.status == 0, "\(f.stderr)")
            let j = try #require(try jsonObjects(f.stdout).first)
            #expect(j["calls"] as? Int == calls && j["mode"] as? String == (changed ? "delta" : "up-to-date"), "slot \(slot)")
            let plan = try #require(j["slot_plan"] as? [String: Any])
            #expect(plan["content_changed"] as? Bool == changed)
        }
        let text = try lookup(["install", "--store", store])
        #expect(text.status == 0 && text.stdout.contains("slot plan: every boundary kept"))
        #expect(text.stdout.contains("slot 1/3: ") && text.stdout.contains("no reload needed"))
    }
}
