import Testing
@testable import CallerIDDirectory

/// The CallKit stand-in: every error it can raise, provoked; commit and rollback.
@Suite struct DirectorySimulatorTests {
    /// Runs one request and returns the error `complete()` reports (nil on success).
    func request(_ sim: CallDirectorySimulator, _ body: (CallDirectorySimulator) -> Void) throws -> CallDirectoryError.Code? {
        try sim.beginRequest()
        body(sim)
        do {
            try sim.complete()
            return nil
        } catch {
            return error.code
        }
    }

    @Test func fullLoadThenIncrementalDelta() throws {
        let sim = CallDirectorySimulator()
        var incremental: [Bool] = []
        #expect(try request(sim) { s in
            incremental.append(s.isIncremental)
            s.addIdentificationEntry(10, label: "a")
            s.addIdentificationEntry(20, label: "b")
            s.addBlockingEntry(20)
            s.addBlockingEntry(30)
        } == nil)
        #expect(sim.identificationNumbers == [10, 20] && sim.identificationLabels == ["a", "b"] && sim.blockingNumbers == [20, 30])
        #expect(try request(sim) { s in
            incremental.append(s.isIncremental)
            s.removeIdentificationEntry(20)        // changed label: remove, then add
            s.removeBlockingEntry(30)
            s.removeBlockingEntry(31)              // absent: ignored, counted
            s.addIdentificationEntry(5, label: "c")   // additions ascending within the request
            s.addIdentificationEntry(20, label: "B")
            s.addBlockingEntry(25)
        } == nil)
        #expect(sim.identificationNumbers == [5, 10, 20] && sim.identificationLabels == ["c", "a", "B"])
        #expect(sim.blockingNumbers == [20, 25])
        #expect(sim.absentRemovals == 1)
        #expect(try request(sim) { s in
            s.removeAllIdentificationEntries()
            s.addIdentificationEntry(7, label: "x")
        } == nil)
        #expect(sim.identificationNumbers == [7] && sim.blockingNumbers == [20, 25])
        #expect(sim.completedRequests == 3)
        #expect(incremental == [false, true])
    }

    @Test func entriesOutOfOrder() throws {
        let sim = CallDirectorySimulator()
        #expect(try request(sim) { $0.addIdentificationEntry(20, label: ""); $0.addIdentificationEntry(10, label: "") } == .entriesOutOfOrder)
        #expect(try request(sim) { $0.addBlockingEntry(20); $0.addBlockingEntry(19) } == .entriesOutOfOrder)
        // The two lists are independent: 5 after 20 in the other list is fine.
        #expect(try request(sim) { $0.addIdentificationEntry(20, label: ""); $0.addBlockingEntry(5) } == nil)
    }

    @Test func duplicateEntries() throws {
        let sim = CallDirectorySimulator()
        #expect(try request(sim) { $0.addBlockingEntry(20); $0.addBlockingEntry(20) } == .duplicateEntries)
        #expect(try request(sim) { $0.addIdentificationEntry(20, label: "a") } == nil)
        // Incremental: adding a number still loaded.
        #expect(try request(sim) { $0.addIdentificationEntry(20, label: "b") } == .duplicateEntries)
        #expect(sim.identificationLabels == ["a"])   // the failed request changed nothing
    }

    @Test func maximumEntriesExceededCountsBothLists() throws {
        let sim = CallDirectorySimulator(maxEntries: 3)
        #expect(try request(sim) { s in
            s.addIdentificationEntry(1, label: ""); s.addIdentificationEntry(2, label: ""); s.addBlockingEntry(1); s.addBlockingEntry(2)
        } == .maximumEntriesExceeded)
        #expect(sim.count == 0)
        #expect(try request(sim) { s in s.addIdentificationEntry(1, label: ""); s.addIdentificationEntry(2, label: ""); s.addBlockingEntry(1) } == nil)
        // Incremental: a removal makes room first.
        #expect(try request(sim) { s in s.removeBlockingEntry(1); s.addBlockingEntry(9) } == nil)
        #expect(try request(sim) { s in s.addBlockingEntry(10) } == .maximumEntriesExceeded)
    }

    @Test func unexpectedIncrementalRemoval() throws {
        let sim = CallDirectorySimulator()
        #expect(try request(sim) { $0.removeIdentificationEntry(1) } == .unexpectedIncrementalRemoval)
        #expect(try request(sim) { $0.removeBlockingEntry(1) } == .unexpectedIncrementalRemoval)
        #expect(try request(sim) { $0.removeAllIdentificationEntries() } == .unexpectedIncrementalRemoval)
        #expect(try request(sim) { $0.removeAllBlockingEntries() } == .unexpectedIncrementalRemoval)
        // iOS 10: never incremental, so never a removal.
        let old = CallDirectorySimulator()
        old.supportsIncremental = false
        #expect(try request(old) { $0.addBlockingEntry(1) } == nil)
        #expect(try request(old) { $0.removeBlockingEntry(1) } == .unexpectedIncrementalRemoval)
    }

    @Test func loadingInterrupted() throws {
        let sim = CallDirectorySimulator(requestLimit: 2)
        #expect(try request(sim) { s in s.addBlockingEntry(1); s.addBlockingEntry(2); s.addBlockingEntry(3) } == .loadingInterrupted)
        #expect(try request(sim) { s in s.addBlockingEntry(1); s.addBlockingEntry(2) } == nil)
        let other = CallDirectorySimulator()
        #expect(try request(other) { s in s.addBlockingEntry(1); s.interrupt() } == .loadingInterrupted)
        #expect(other.count == 0)
    }

    @Test func invalidNumbers() throws {
        let sim = CallDirectorySimulator()
        for n: Int64 in [0, -5, Int64.max] {
            #expect(try request(sim) { $0.addIdentificationEntry(n, label: "") } == .invalidNumber)
        }
        #expect(try request(sim) { $0.addBlockingEntry(Int64.max - 1) } == nil)
    }

    @Test func systemSideErrors() throws {
        let sim = CallDirectorySimulator()
        try sim.beginRequest()
        #expect(throws: CallDirectoryError(.currentlyLoading, "a request is already running for this extension")) { try sim.beginRequest() }
        try sim.complete()

        sim.setEnabled(false)
        #expect { try sim.beginRequest() } throws: { ($0 as? CallDirectoryError)?.code == .extensionDisabled }

        let missing = CallDirectorySimulator()
        missing.isExtensionInstalled = false
        #expect { try missing.beginRequest() } throws: { ($0 as? CallDirectoryError)?.code == .noExtensionFound }
    }

    @Test func reEnablingAsksForTheFullListAgain() throws {
        let sim = CallDirectorySimulator()
        #expect(try request(sim) { $0.addBlockingEntry(1) } == nil)
        var incremental: [Bool] = []
        #expect(try request(sim) { incremental.append($0.isIncremental) } == nil)
        sim.setEnabled(false)
        #expect(sim.count == 0)
        sim.setEnabled(true)
        #expect(try request(sim) { incremental.append($0.isIncremental); $0.addBlockingEntry(2) } == nil)
        #expect(incremental == [true, false])
        #expect(sim.blockingNumbers == [2])
    }

    @Test func everyCodeHasItsCallKitValue() {
        #expect(CallDirectoryError.Code.allCases.filter { $0.rawValue > 0 }.map(\.rawValue) == Array(1...8))
        #expect(CallDirectoryError.Code.maximumEntriesExceeded.description == "maximumEntriesExceeded (5)")
    }
}
