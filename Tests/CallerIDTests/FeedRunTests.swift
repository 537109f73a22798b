import Foundation
import Testing
@testable import CallerID
@testable import CallerIDDirectory

/// A whole load of a slot (`lookup feed`'s, as a library call): through CallKit's simulator or
/// through the checker of its rules that keeps nothing, the two agree on what a load gives and
/// on what CallKit refuses.
@Suite struct FeedRunTests {
    @Test func theCheckerRefusesWhatCallKitRefuses() {
        func run(_ calls: (CallKitRuleChecker) -> Void, maxEntries: Int = 10) -> CallDirectoryError.Code? {
            let checker = CallKitRuleChecker(maxEntries: maxEntries)
            checker.beginRequest(incremental: false)
            calls(checker)
            return checker.error?.code
        }
        #expect(run { $0.addIdentificationEntry(1, label: "a"); $0.addIdentificationEntry(2, label: "b"); $0.addBlockingEntry(1) } == nil)
        #expect(run { $0.addIdentificationEntry(2, label: "a"); $0.addIdentificationEntry(1, label: "b") } == .entriesOutOfOrder)
        #expect(run { $0.addBlockingEntry(5); $0.addBlockingEntry(5) } == .duplicateEntries)
        #expect(run { $0.addBlockingEntry(0) } == .invalidNumber)
        #expect(run({ for n in 1...3 { $0.addBlockingEntry(Int64(n)) } }, maxEntries: 2) == .maximumEntriesExceeded)
        #expect(run { $0.addBlockingEntry(5); $0.removeBlockingEntry(5) } == .unexpectedIncrementalRemoval)
        // The first broken rule is the one reported.
        #expect(run { $0.addBlockingEntry(5); $0.addBlockingEntry(4); $0.addBlockingEntry(4) } == .entriesOutOfOrder)
    }

    @Test(arguments: [nil, 100] as [Int?])
    func aCheckedLoadCountsWhatASimulatedLoadHolds(chunk: Int?) throws {
        let dir = TempDir()
        let files = randomDirectoryFiles(seed: 5, count: 3, entries: 800, span: 10_000)
        try writeBuildDirectory(dir.path("build"), files)
        let snapshot = try DirectorySnapshot(directory: dir.path("build"), settings: FeedSettings())
        let feeder = DirectoryFeeder(target: snapshot, generation: 1) { _ in nil }
        let simulator = CallDirectorySimulator()
        let simulated = try feeder.run(simulator: simulator, checker: nil, from: nil, chunk: chunk)
        let checked = try feeder.run(simulator: nil, checker: CallKitRuleChecker(maxEntries: 1_999_999), from: nil, chunk: chunk)
        #expect(simulated.failure == nil && checked.failure == nil)
        #expect(simulated.identification + simulated.blocking == simulator.count)
        #expect(checked.identification == simulated.identification && checked.blocking == simulated.blocking)
        #expect(checked.requests == simulated.requests)
        if let chunk { #expect(simulated.requests >= simulator.count / chunk) } else { #expect(simulated.requests == 1) }
    }

    @Test func aLoadOverTheBudgetFailsAsCallKitWould() throws {
        let dir = TempDir()
        try writeBuildDirectory(dir.path("build"), randomDirectoryFiles(seed: 9, count: 1, entries: 50, span: 1_000))
        let feeder = DirectoryFeeder(target: try DirectorySnapshot(directory: dir.path("build"), settings: FeedSettings()), generation: 1) { _ in nil }
        let tally = try feeder.run(simulator: nil, checker: CallKitRuleChecker(maxEntries: 10), from: nil, chunk: nil)
        #expect(tally.failure?.code == .maximumEntriesExceeded)
    }

    /// A store's feed, slot by slot: every slot's load together is the whole set, each slot
    /// within its budget; a budget over the system's cap is held to the cap and said; an
    /// update from the previous generation ends with what a load from scratch gives.
    @Test func aStoreFeedOfEverySlotAddsUpToTheWholeSet() throws {
        let dir = TempDir()
        let files = randomDirectoryFiles(seed: 12, count: 2, entries: 600, span: 20_000)
        try writeBuildDirectory(dir.path("build"), files)
        let store = try InstalledStore(path: dir.path("store"))
        var settings = FeedSettings()
        settings.slots = 3
        settings.maxEntries = 1_000
        _ = try store.install(from: dir.path("build"), settings: settings)
        var whole = FeedSettings()
        whole.maxEntries = 10_000
        let all = try DirectoryFeeder(target: DirectorySnapshot(directory: dir.path("build"), settings: whole), generation: 1) { _ in nil }
            .run(simulator: CallDirectorySimulator(), checker: nil, from: nil, chunk: nil)
        var total = 0
        for slot in 0..<3 {
            var request = SlotFeedRequest()
            request.slot = (slot, 3)
            request.simulate = slot == 1
            let report = try store.feed(request)
            #expect(report.tally.failure == nil && report.slot == slot && report.slots == 3 && report.cap == 1_000)
            #expect(report.plan != nil && report.note == nil && report.missing.isEmpty)
            #expect(report.tally.identification + report.tally.blocking <= 1_000)
            total += report.tally.identification + report.tally.blocking
        }
        #expect(total == all.identification + all.blocking)

        var capped = SlotFeedRequest()
        capped.systemCap = 500
        let over = try store.feed(capped)
        #expect(over.cap == 500 && over.note?.contains("above the system's cap of 500") == true)

        var update = SlotFeedRequest()
        update.fromPrevious = true
        #expect(throws: DirectoryError.self) { try store.feed(update) }  // one generation only
        try writeBuildDirectory(dir.path("build2"), randomDirectoryFiles(seed: 13, count: 2, entries: 600, span: 20_000))
        _ = try store.install(from: dir.path("build2"), settings: settings)
        let fresh = try store.feed(SlotFeedRequest())
        let updated = try store.feed(update)
        #expect(updated.previousID != nil && updated.tally.failure == nil)
        #expect(updated.loadedNow == fresh.tally.identification + fresh.tally.blocking)
    }
}

