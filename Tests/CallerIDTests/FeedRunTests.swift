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
}
