import Foundation
import Testing
@testable import CallerID
@testable import CallerIDDirectory

/// Slots, chunked and incremental loading, rules against the budget: everything checked
/// against the oracle and the CallKit simulator.
@Suite struct DirectoryLoadTests {
    /// A random next version: entries dropped, added, relabelled and recategorized; sometimes a
    /// file removed, added or given another priority.
    static func mutate(_ files: [DirectoryTestFile], seed: UInt64, rate: Double) -> [DirectoryTestFile] {
        var rng = SeededGenerator(seed: seed)
        var out: [DirectoryTestFile] = []
        for var f in files {
            if out.count > 0, Double.random(in: 0..<1, using: &rng) < 0.1 { continue }   // region dropped
            var numbers = Set(f.entries.map(\.number))
            var entries: [Entry] = []
            for var e in f.entries {
                let r = Double.random(in: 0..<1, using: &rng)
                if r < rate { numbers.remove(e.number); continue }
                if r < 2 * rate { e.label += " new" }
                if r >= 2 * rate && r < 3 * rate { e.category = testCategories.randomElement(using: &rng)! }
                entries.append(e)
            }
            let base = f.entries.first?.number ?? 79_000_000_000
            for _ in 0..<Int(Double(f.entries.count) * rate) {
                let n = base + UInt64.random(in: 0..<20_000, using: &rng)
                if numbers.insert(n).inserted {
                    entries.append(Entry(number: n, label: "added", category: testCategories.randomElement(using: &rng)!))
                }
            }
            f.entries = entries
            if Double.random(in: 0..<1, using: &rng) < 0.2 { f.priority = Int.random(in: -1...2, using: &rng) }
            out.append(f)
        }
        if Double.random(in: 0..<1, using: &rng) < 0.3 {
            out += randomDirectoryFiles(seed: seed &+ 99, count: 1, entries: 500, span: 20_000).map {
                var f = $0
                f.name = "extra-\(seed).cid"
                f.region = "extra"
                return f
            }
        }
        return out
    }

    static func randomSettings(seed: UInt64) throws -> FeedSettings {
        var rng = SeededGenerator(seed: seed)
        var s = FeedSettings()
        if Bool.random(using: &rng) { s.allowList = (0..<200).map { _ in 79_000_000_000 + UInt64.random(in: 0..<20_000, using: &rng) } }
        if Bool.random(using: &rng) { s.blockCategories = ["spam", "block", "collector"].filter { _ in Bool.random(using: &rng) } }
        if Bool.random(using: &rng) { s.rules = [try BlockingRule("79000\(Int.random(in: 10...19, using: &rng))####")] }
        return s
    }

    @Test func slotsCoverTheStreamExactly() throws {
        let dir = TempDir()
        let files = randomDirectoryFiles(seed: 7, count: 5, entries: 2_000, span: 20_000)
        var settings = FeedSettings(rules: [try BlockingRule("7900001####")])
        try writeBuildDirectory(dir.path("build"), files)
        let snapshot = try DirectorySnapshot(directory: dir.path("build"), settings: settings)
        let whole = expectedLists(files, settings: settings)
        let total = whole.identification.count + whole.blocking.count
        for slots in [1, 2, 3, 7] {
            let plan = try SlotPlan.make(snapshot, slots: slots, maxEntries: 1_999_999)
            #expect(plan == (try SlotPlan.make(snapshot, slots: slots, maxEntries: 1_999_999)))   // deterministic
            #expect(plan.slots.count == slots && plan.count == total)
            try plan.validate(path: "plan")
            let sizes = plan.slots.map(\.count)
            #expect(sizes.max()! - sizes.min()! <= 2, "balanced: \(sizes)")
            // Each slot loaded into its own extension; together they are the whole stream.
            var ids: [(UInt64, String)] = [], blocks: [UInt64] = []
            for (i, slot) in plan.slots.enumerated() {
                let sim = CallDirectorySimulator(maxEntries: slot.count)
                let feeder = DirectoryFeeder(target: snapshot, generation: 1, range: slot.range) { _ in nil }
                var cursor: LoadCursor? = nil
                try feedUntilComplete(feeder, sim, cursor: &cursor)
                #expect(sim.identificationNumbers.count == slot.identification && sim.blockingNumbers.count == slot.blocking, "slot \(i)")
                ids += simulatorLists(sim).identification
                blocks += simulatorLists(sim).blocking
            }
            #expect(sameLists((ids, blocks), whole))
        }
        // Tight budgets: exactly enough, then one short.
        let per = (total + 2) / 3 + 1
        #expect(try SlotPlan.make(snapshot, slots: 3, maxEntries: per).slots.allSatisfy { $0.count <= per })
        #expect { try SlotPlan.make(snapshot, slots: 3, maxEntries: total / 3 - 1) } throws: {
            ($0 as? DirectoryError)?.code == .budgetExceeded
        }
        settings.slots = 65
        #expect(throws: DirectoryError.self) { try settings.validate() }
    }

    @Test(arguments: [7, 37, 1_000])
    func chunkedLoadingEqualsOneShot(chunk: Int) throws {
        let dir = TempDir()
        let files = randomDirectoryFiles(seed: 11, count: 4, entries: 1_500, span: 20_000)
        try writeBuildDirectory(dir.path("build"), files)
        let settings = FeedSettings(allowList: [79_000_000_100], rules: [try BlockingRule("790000123##")])
        let snapshot = try DirectorySnapshot(directory: dir.path("build"), settings: settings)
        let feeder = DirectoryFeeder(target: snapshot, generation: 1) { _ in nil }

        let oneShot = CallDirectorySimulator()
        var c1: LoadCursor? = nil
        #expect(try feedUntilComplete(feeder, oneShot, cursor: &c1) == 1)

        // The system interrupts any request with more calls than the chunk.
        let chunked = CallDirectorySimulator(requestLimit: chunk)
        var cursor: LoadCursor? = nil
        var requests = 0
        var longest = 0
        while true {
            try chunked.beginRequest()
            // The cursor travels as bytes between requests, as an extension stores it.
            let restored = try cursor.map { try LoadCursor(bytes: $0.bytes) }
            let result = try feeder.serve(chunked, cursor: restored, chunk: chunk)
            try chunked.complete()
            longest = max(longest, result.cursor.bytes.count)
            cursor = result.cursor
            requests += 1
            if result.isComplete { break }
        }
        #expect(sameLists(simulatorLists(chunked), simulatorLists(oneShot)))
        #expect(sameLists(simulatorLists(chunked), expectedLists(files, settings: settings)))
        let total = oneShot.count
        #expect(requests == (total + chunk - 1) / chunk || requests == (total + chunk - 1) / chunk + 1)
        #expect(longest <= 40, "cursor bytes: \(longest)")
    }

    /// Old set loaded; new set installed; the next (incremental) request turns the
    /// simulator's lists into exactly the new set, as a delta or as a full reload.
    @Test(arguments: Array(UInt64(1)...12))
    func incrementalDeltaOverRandomPairs(seed: UInt64) throws {
        let dir = TempDir()
        let store = try InstalledStore(path: dir.path("store"))
        let oldFiles = randomDirectoryFiles(seed: seed, count: 1 + Int(seed % 4), entries: 800, span: 20_000)
        let rate = [0.0, 0.01, 0.05, 0.3, 0.9][Int(seed % 5)]
        let newFiles = Self.mutate(oldFiles, seed: seed &* 7919, rate: rate)
        let oldSettings = try Self.randomSettings(seed: seed)
        var newSettings = seed % 3 == 0 ? try Self.randomSettings(seed: seed &+ 1000) : oldSettings
        let slots = seed % 4 == 1 ? 2 : 1
        newSettings.slots = slots
        var oldWithSlots = oldSettings
        oldWithSlots.slots = slots
        try writeBuildDirectory(dir.path("old"), oldFiles)
        try writeBuildDirectory(dir.path("new"), newFiles)
        try store.install(from: dir.path("old"), settings: oldWithSlots)

        let chunk: Int? = seed % 2 == 0 ? nil : 97
        var sims: [CallDirectorySimulator] = []
        var cursors: [LoadCursor?] = []
        for slot in 0..<slots {
            let sim = CallDirectorySimulator(requestLimit: chunk.map { $0 + 2 })
            var cursor: LoadCursor? = nil
            try feedUntilComplete(try DirectoryFeeder(store: store, slot: slot), sim, cursor: &cursor, chunk: chunk)
            sims.append(sim)
            cursors.append(cursor)
        }
        let oldPlan = try store.plan()
        for (slot, sim) in sims.enumerated() {
            #expect(sameLists(simulatorLists(sim), expectedLists(oldFiles, settings: oldSettings, range: oldPlan.slots[slot].range)))
        }

        try store.install(from: dir.path("new"), settings: newSettings)
        let plan = try store.plan()
        for slot in 0..<slots {
            var cursor = cursors[slot]
            let feeder = try DirectoryFeeder(store: store, slot: slot)
            try sims[slot].beginRequest()
            let first = try feeder.serve(sims[slot], cursor: cursor, chunk: chunk)
            try sims[slot].complete()
            cursor = first.cursor
            if !first.isComplete {
                try feedUntilComplete(feeder, sims[slot], cursor: &cursor, chunk: chunk)
            }
            let expected = expectedLists(newFiles, settings: newSettings, range: plan.slots[slot].range)
            #expect(sameLists(simulatorLists(sims[slot]), expected), "seed \(seed) slot \(slot) mode \(first.mode)")
            #expect(sims[slot].absentRemovals == 0)
            // A slot whose bounds and entries did not change is up to date without weighing.
            if first.mode == .upToDate {
                #expect(!plan.contentChanged(slot: slot) && first.calls == 0 && first.isComplete, "seed \(seed) slot \(slot)")
                continue
            }
            #expect(plan.contentChanged(slot: slot), "seed \(seed) slot \(slot)")
            // The mode chosen is the cheaper one, and a delta sends exactly the counted changes.
            let weighed = try #require(first.weighed)
            if first.mode == .delta {
                #expect(weighed.changes < weighed.fullReload)
                if chunk == nil { #expect(first.calls == weighed.changes) }
            } else {
                #expect(first.removedAll && weighed.changes >= weighed.fullReload)
            }
            if weighed.changes == 0 { #expect(first.mode == .delta && first.calls == 0 && first.isComplete) }
        }
    }

    /// The same delta computed from the folders, without a store (what `lookup diff` prints),
    /// applied by hand: old + delta = new.
    @Test(arguments: [UInt64(21), 22, 23])
    func diffAppliedToTheOldSetGivesTheNewSet(seed: UInt64) throws {
        let dir = TempDir()
        let oldFiles = randomDirectoryFiles(seed: seed, count: 3, entries: 700, span: 20_000)
        let newFiles = Self.mutate(oldFiles, seed: seed, rate: 0.05)
        try writeBuildDirectory(dir.path("old"), oldFiles)
        try writeBuildDirectory(dir.path("new"), newFiles)
        let old = try DirectorySnapshot(directory: dir.path("old")), new = try DirectorySnapshot(directory: dir.path("new"))
        let sim = CallDirectorySimulator()
        try sim.beginRequest()
        try DirectoryDiff.forEach(old: nil, new: old) { change in
            if change.list == .identification { sim.addIdentificationEntry(Int64(change.number), label: change.label) } else { sim.addBlockingEntry(Int64(change.number)) }
        }
        try sim.complete()
        var changes: [DeltaChange] = []
        try sim.beginRequest()
        try DirectoryDiff.forEach(old: old, new: new) { change in
            changes.append(change)
            switch (change.kind, change.list) {
            case (.removal, .identification): sim.removeIdentificationEntry(Int64(change.number))
            case (.removal, .blocking): sim.removeBlockingEntry(Int64(change.number))
            case (.addition, .identification): sim.addIdentificationEntry(Int64(change.number), label: change.label)
            case (.addition, .blocking): sim.addBlockingEntry(Int64(change.number))
            }
        }
        try sim.complete()
        #expect(sameLists(simulatorLists(sim), expectedLists(newFiles)))
        let counts = try DirectoryDiff.count(old: old, new: new)
        #expect(counts.changes == changes.count && counts.changes > 0)
        // Removals come first.
        let firstAddition = changes.firstIndex { $0.kind == .addition } ?? changes.count
        #expect(changes[firstAddition...].allSatisfy { $0.kind == .addition })
    }

    @Test func newInstallInTheMiddleOfAChunkedLoadOrDelta() throws {
        let dir = TempDir()
        let store = try InstalledStore(path: dir.path("store"))
        let v1 = randomDirectoryFiles(seed: 31, count: 2, entries: 1_000, span: 20_000)
        let v2 = Self.mutate(v1, seed: 32, rate: 0.02)
        let v3 = Self.mutate(v2, seed: 33, rate: 0.02)
        for (name, files) in [("v1", v1), ("v2", v2), ("v3", v3)] { try writeBuildDirectory(dir.path(name), files) }
        try store.install(from: dir.path("v1"))
        let sim = CallDirectorySimulator()
        var cursor: LoadCursor? = nil

        // Half of v1 loaded, then v2 arrives: the loaded part is patched, the rest added.
        for _ in 0..<5 {
            try sim.beginRequest()
            cursor = try DirectoryFeeder(store: store, slot: 0).serve(sim, cursor: cursor, chunk: 200).cursor
            try sim.complete()
        }
        #expect(cursor?.isComplete == false)
        try store.install(from: dir.path("v2"))
        try sim.beginRequest()
        let switched = try DirectoryFeeder(store: store, slot: 0).serve(sim, cursor: cursor, chunk: 10)
        try sim.complete()
        #expect(switched.mode == .delta && !switched.isComplete && switched.cursor.base?.generation == 1)
        cursor = switched.cursor

        // In the middle of that delta, v3 arrives: a mix of versions is not patched, it is reloaded.
        try store.install(from: dir.path("v3"))
        try sim.beginRequest()
        let reset = try DirectoryFeeder(store: store, slot: 0).serve(sim, cursor: cursor, chunk: 300)
        try sim.complete()
        #expect(reset.mode == .full && reset.removedAll)
        cursor = reset.cursor
        try feedUntilComplete(try DirectoryFeeder(store: store, slot: 0), sim, cursor: &cursor, chunk: 300)
        #expect(sameLists(simulatorLists(sim), expectedLists(v3)))
    }

    @Test func unknownOrLostStateFallsBackToAFullLoad() throws {
        let dir = TempDir()
        let store = try InstalledStore(path: dir.path("store"))
        let v1 = randomDirectoryFiles(seed: 41, count: 2, entries: 500, span: 20_000)
        let v2 = Self.mutate(v1, seed: 42, rate: 0.01)
        try writeBuildDirectory(dir.path("v1"), v1)
        try writeBuildDirectory(dir.path("v2"), v2)
        try store.install(from: dir.path("v1"))
        let sim = CallDirectorySimulator()
        var cursor: LoadCursor? = nil
        try feedUntilComplete(try DirectoryFeeder(store: store, slot: 0), sim, cursor: &cursor)

        // Incremental request, cursor lost (or damaged bytes): remove all, then everything.
        var bytes = cursor!.bytes
        bytes[3] ^= 1
        #expect(throws: DirectoryError.self) { try LoadCursor(bytes: bytes) }
        try sim.beginRequest()
        let r = try DirectoryFeeder(store: store, slot: 0).serve(sim, cursor: nil)
        try sim.complete()
        #expect(r.mode == .full && r.removedAll && sameLists(simulatorLists(sim), expectedLists(v1)))

        // The loaded generation is gone (two installs since): full reload too.
        try store.install(from: dir.path("v2"))
        try store.install(from: dir.path("v1"))
        try store.install(from: dir.path("v2"))
        #expect(store.generation(1) == nil)
        try sim.beginRequest()
        let lost = try DirectoryFeeder(store: store, slot: 0).serve(sim, cursor: cursor)
        try sim.complete()
        #expect(lost.mode == .full && lost.removedAll && sameLists(simulatorLists(sim), expectedLists(v2)))
        cursor = lost.cursor

        // Up to date: nothing sent.
        try sim.beginRequest()
        let same = try DirectoryFeeder(store: store, slot: 0).serve(sim, cursor: cursor)
        try sim.complete()
        #expect(same.mode == .upToDate && same.calls == 0)
    }

    /// The story of the lost data: switching the extension off and on asks for the full list,
    /// and the store still has it.
    @Test func reEnablingTheExtensionReloadsFromTheStore() throws {
        let dir = TempDir()
        let store = try InstalledStore(path: dir.path("store"))
        let v1 = randomDirectoryFiles(seed: 51, count: 2, entries: 500, span: 20_000)
        try writeBuildDirectory(dir.path("v1"), v1)
        try store.install(from: dir.path("v1"))
        let sim = CallDirectorySimulator()
        var cursor: LoadCursor? = nil
        try feedUntilComplete(try DirectoryFeeder(store: store, slot: 0), sim, cursor: &cursor)
        sim.setEnabled(false)
        sim.setEnabled(true)
        try sim.beginRequest()
        let r = try DirectoryFeeder(store: store, slot: 0).serve(sim, cursor: cursor)   // a stale cursor is ignored
        try sim.complete()
        #expect(r.mode == .full && !r.removedAll)
        #expect(sameLists(simulatorLists(sim), expectedLists(v1)))
    }

    @Test func prefixRulesWithinAndOverTheBudget() throws {
        let dir = TempDir()
        let files = randomDirectoryFiles(seed: 61, count: 2, entries: 1_000, span: 20_000)
        try writeBuildDirectory(dir.path("build"), files)
        let store = try InstalledStore(path: dir.path("store"))
        let entries = expectedLists(files)
        let baseCount = entries.identification.count + entries.blocking.count

        // Within: 10,000 numbers from a prefix, loaded and counted.
        var settings = FeedSettings(rules: [try BlockingRule("+44 20 7946 ####")])
        settings.maxEntries = baseCount + 10_000
        let r = try store.install(from: dir.path("build"), settings: settings)
        #expect(r.plan.count == baseCount + 10_000)
        let sim = CallDirectorySimulator(maxEntries: settings.maxEntries)
        var cursor: LoadCursor? = nil
        try feedUntilComplete(try DirectoryFeeder(store: store, slot: 0), sim, cursor: &cursor, chunk: 4_000)
        #expect(sim.blockingNumbers.filter { (442079460000...442079469999).contains($0) }.count == 10_000)
        #expect(sameLists(simulatorLists(sim), expectedLists(files, settings: settings)))

        // Over: one more number than the budget, refused by name; the store keeps its set.
        settings.rules.append(try BlockingRule("+44 20 7947 0000"))
        settings.rules.append(try BlockingRule("+44 20 7947 0001"))
        #expect { try store.install(from: dir.path("build"), settings: settings) } throws: { e in
            let m = "\(e)"
            return (e as? DirectoryError)?.code == .budgetExceeded && m.contains("+44 20 7946 ####") && m.contains("10,002 of the blocking entries come from rules")
        }
        #expect(try store.current()?.id == 1)
        // A single rule larger than one extension is refused before any streaming.
        let huge = FeedSettings(rules: [try BlockingRule("+1 ### ### ####")])
        #expect { try huge.validate() } throws: { "\($0)".contains("expands to 10,000,000,000 numbers") }
    }

    @Test func cursorBytesRoundTrip() throws {
        var v = LoadCursor.Version(generation: 12, range: 79_000_000_000..<79_500_000_000)
        let a = LoadCursor(target: v, base: nil, phase: .addBlocking, position: 79_000_123_456)
        #expect(try LoadCursor(bytes: a.bytes) == a)
        v.identificationEnd = 79_100_000_000
        let b = LoadCursor(target: LoadCursor.Version(generation: 13, range: 0..<UInt64.max), base: v, phase: .removeBlocking, position: 5)
        #expect(try LoadCursor(bytes: b.bytes) == b)
        #expect(a.bytes.count <= 32 && b.bytes.count <= 48)
        for bad in [[], [1, 2, 3], [UInt8](repeating: 0xFF, count: 20), Array(a.bytes.dropLast())] {
            #expect(throws: DirectoryError.self) { try LoadCursor(bytes: bad) }
        }
    }
}
