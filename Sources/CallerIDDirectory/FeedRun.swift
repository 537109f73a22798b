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
