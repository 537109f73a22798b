/// A failure CallKit would report for a Call Directory request
/// (`CXErrorCodeCallDirectoryManagerError`), with a message saying which entry caused it.
public struct CallDirectoryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// CallKit's codes, same raw values (1–8). ``invalidNumber`` is the simulator's own.
    public enum Code: Int, Sendable, CaseIterable, CustomStringConvertible {
        case noExtensionFound = 1
        case loadingInterrupted = 2
        case entriesOutOfOrder = 3
        case duplicateEntries = 4
        case maximumEntriesExceeded = 5
        case extensionDisabled = 6
        case currentlyLoading = 7
        case unexpectedIncrementalRemoval = 8
        /// Not a CallKit code: a number ≤ 0 or `Int64.max` (CallKit documents no behaviour for
        /// them; the simulator refuses them so that a test proves the loader never sends one).
        case invalidNumber = -1

        /// The CallKit name of the code (`entriesOutOfOrder`).
        public var name: String {
            switch self {
            case .noExtensionFound: "noExtensionFound"
            case .loadingInterrupted: "loadingInterrupted"
            case .entriesOutOfOrder: "entriesOutOfOrder"
            case .duplicateEntries: "duplicateEntries"
            case .maximumEntriesExceeded: "maximumEntriesExceeded"
            case .extensionDisabled: "extensionDisabled"
            case .currentlyLoading: "currentlyLoading"
            case .unexpectedIncrementalRemoval: "unexpectedIncrementalRemoval"
            case .invalidNumber: "invalidNumber"
            }
        }

        public var description: String { "\(name) (\(rawValue))" }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "CallKit error \(code.rawValue) \(code.name): \(message)" }
}

/// The two lists of a Call Directory extension.
public enum CallDirectoryList: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case identification = 0
    case blocking = 1

    /// `identify` / `block`, the words of `lookup diff`.
    public var description: String { self == .identification ? "identify" : "block" }
}

/// A stand-in for the system side of a Call Directory extension that enforces CallKit's rules
/// and keeps what was loaded, so tests and `lookup feed --simulate` can compare.
///
/// A request: ``beginRequest()``, then the ``CallDirectorySink`` calls, then ``complete()``,
/// which throws the first violation (as `completeRequest` fails on a phone) and then keeps the
/// previously loaded lists, or commits the request. The rules:
/// - additions to each list strictly ascending within a request (equal to the previous one:
///   ``CallDirectoryError/Code/duplicateEntries``; smaller: ``CallDirectoryError/Code/entriesOutOfOrder``);
/// - adding a number the list still holds: ``CallDirectoryError/Code/duplicateEntries``;
/// - more than ``maxEntries`` entries, **identification and blocking counted together** (the
///   cap is documented per extension; counting both lists is the choice that can never
///   overfill a phone): ``CallDirectoryError/Code/maximumEntriesExceeded``;
/// - any removal (one or all) in a request that is not incremental:
///   ``CallDirectoryError/Code/unexpectedIncrementalRemoval``;
/// - more than ``requestLimit`` calls in one request (the system killing a slow or greedy
///   extension): ``CallDirectoryError/Code/loadingInterrupted``; ``interrupt()`` does the same;
/// - a request while another runs: ``CallDirectoryError/Code/currentlyLoading``; the extension
///   switched off in Settings: ``CallDirectoryError/Code/extensionDisabled``; not installed:
///   ``CallDirectoryError/Code/noExtensionFound``.
///
/// An incremental request applies removals to the loaded lists as they come and then takes
/// additions; removing a number that is not there is ignored by CallKit and counted in
/// ``absentRemovals``. Requests are incremental once a load has succeeded (unless
/// ``supportsIncremental`` is false, as on iOS 10); switching the extension off drops the lists,
/// so the request after switching it on again is a full load.
public final class CallDirectorySimulator: CallDirectorySink {
    /// Entries allowed in this extension (both lists together): never more than the system's
    /// cap (see ``init(maxEntries:requestLimit:systemCap:)``).
    public let maxEntries: Int
    /// Calls allowed in one request before the system interrupts the extension (nil: no limit).
    public var requestLimit: Int?
    /// False models an app whose extension identifier the system does not know.
    public var isExtensionInstalled = true
    /// False models iOS 10: every request is a full load.
    public var supportsIncremental = true
    /// The extension's switch in Settings › Phone › Call Blocking & Identification.
    public private(set) var isEnabled = true

    /// The loaded identification list, ascending, with its labels.
    public private(set) var identificationNumbers: [Int64] = []
    public private(set) var identificationLabels: [String] = []
    /// The loaded blocking list, ascending.
    public private(set) var blockingNumbers: [Int64] = []
    /// Requests completed successfully.
    public private(set) var completedRequests = 0
    /// Removals of numbers the list did not hold (CallKit ignores them).
    public private(set) var absentRemovals = 0
    /// Calls made in the current (or last) request.
    public private(set) var callsInRequest = 0

    public private(set) var isLoading = false
    public private(set) var isIncremental = false
    private var hasLoaded = false
    private var identification = PendingList()
    private var blocking = PendingList()
    private var failure: CallDirectoryError?

    /// CallKit's cap on the entries of one extension (both lists together): a request that
    /// would load more fails with ``CallDirectoryError/Code/maximumEntriesExceeded``.
    public static let callKitMaximumEntries = 1_999_999

    /// A simulated extension.
    /// - Parameters:
    ///   - maxEntries: the entries it accepts (both lists); a budget above `systemCap` is not
    ///     the system's to grant, so the simulator enforces `min(maxEntries, systemCap)`.
    ///   - systemCap: the cap of the CallKit version modelled; the default is
    ///     ``callKitMaximumEntries``. Pass another value only to model another OS version.
    public init(maxEntries: Int = callKitMaximumEntries, requestLimit: Int? = nil, systemCap: Int = callKitMaximumEntries) {
        self.maxEntries = min(maxEntries, systemCap)
        self.requestLimit = requestLimit
    }

    /// Entries loaded (both lists).
    public var count: Int { identificationNumbers.count + blockingNumbers.count }

    /// The loaded identification entries as pairs.
    public var identificationEntries: [(number: Int64, label: String)] {
        zip(identificationNumbers, identificationLabels).map { ($0, $1) }
    }

    /// Starts a request, as the system does when the app calls `reloadExtension`.
    public func beginRequest() throws(CallDirectoryError) {
        guard isExtensionInstalled else { throw CallDirectoryError(.noExtensionFound, "no Call Directory extension with this identifier is installed") }
        guard isEnabled else { throw CallDirectoryError(.extensionDisabled, "the extension is switched off in Settings") }
        guard !isLoading else { throw CallDirectoryError(.currentlyLoading, "a request is already running for this extension") }
        isLoading = true
        isIncremental = supportsIncremental && hasLoaded
        identification = PendingList(base: identificationNumbers)
        blocking = PendingList(base: blockingNumbers)
        failure = nil
        callsInRequest = 0
    }

    /// Ends the request: commits it, or throws its first violation and keeps the previous lists.
    public func complete() throws(CallDirectoryError) {
        precondition(isLoading, "complete() without beginRequest()")
        isLoading = false
        if let failure {
            identification = PendingList()
            blocking = PendingList()
            throw failure
        }
        (identificationNumbers, identificationLabels) = identification.merged(baseLabels: identificationLabels)
        (blockingNumbers, _) = blocking.merged(baseLabels: nil)
        identification = PendingList()
        blocking = PendingList()
        hasLoaded = true
        completedRequests += 1
    }

    /// The system stops the extension mid-request (memory or time): the request fails with 2.
    public func interrupt() {
        fail(.loadingInterrupted, "the system interrupted the extension")
    }

    /// Switches the extension off or on in Settings. Off drops everything loaded; the first
    /// request after switching it on is a full (non-incremental) load.
    public func setEnabled(_ enabled: Bool) {
        isEnabled = enabled
        if !enabled {
            identificationNumbers = []
            identificationLabels = []
            blockingNumbers = []
            hasLoaded = false
        }
    }

    /// The first violation of the current request, if any (CallKit only tells at completion).
    public var pendingError: CallDirectoryError? { failure }

    // MARK: CallDirectorySink

    public func addIdentificationEntry(_ number: Int64, label: String) {
        add(.identification, number, label: label)
    }

    public func addBlockingEntry(_ number: Int64) {
        add(.blocking, number, label: nil)
    }

    public func removeIdentificationEntry(_ number: Int64) { remove(.identification, number) }

    public func removeBlockingEntry(_ number: Int64) { remove(.blocking, number) }

    public func removeAllIdentificationEntries() { removeAll(.identification) }

    public func removeAllBlockingEntries() { removeAll(.blocking) }

    // MARK: Rules

    private func fail(_ code: CallDirectoryError.Code, _ message: String) {
        if failure == nil { failure = CallDirectoryError(code, message) }
    }

    /// Counts a call; false when the request has already failed (later calls change nothing).
    private func call() -> Bool {
        precondition(isLoading, "Call Directory call outside a request: call beginRequest() first")
        callsInRequest += 1
        if let requestLimit, callsInRequest > requestLimit {
            fail(.loadingInterrupted, "more than \(grouped(requestLimit)) calls in one request: the system interrupted the extension")
        }
        return failure == nil
    }

    private func add(_ list: CallDirectoryList, _ number: Int64, label: String?) {
        guard call() else { return }
        let name = list == .identification ? "identification" : "blocking"
        guard number > 0, number < Int64.max else {
            return fail(.invalidNumber, "\(name) entry \(number) is not a phone number (1 … Int64.max - 1)")
        }
        let other = list == .identification ? blocking.count : identification.count
        // Moved out and back so that appending does not copy the list.
        var pending = list == .identification ? identification : blocking
        if list == .identification { identification = PendingList() } else { blocking = PendingList() }
        defer { if list == .identification { identification = pending } else { blocking = pending } }
        if let last = pending.added.last, number <= last {
            return number == last
                ? fail(.duplicateEntries, "\(name) entry \(number) added twice")
                : fail(.entriesOutOfOrder, "\(name) entry \(number) after \(last): entries must be added in ascending order")
        }
        if pending.baseHolds(number) {
            return fail(.duplicateEntries, "\(name) entry \(number) is already loaded (remove it first)")
        }
        if other + pending.count >= maxEntries {
            return fail(.maximumEntriesExceeded, "\(name) entry \(number) would be entry \(grouped(maxEntries &+ 1)) of this extension (at most \(grouped(maxEntries)), both lists together)")
        }
        pending.added.append(number)
        if let label { pending.labels.append(label) }
    }

    private func remove(_ list: CallDirectoryList, _ number: Int64) {
        guard call() else { return }
        let name = list == .identification ? "identification" : "blocking"
        guard isIncremental else {
            return fail(.unexpectedIncrementalRemoval, "removal of \(name) entry \(number) in a request that is not incremental")
        }
        let found = list == .identification ? identification.remove(number) : blocking.remove(number)
        if !found { absentRemovals += 1 }
    }

    private func removeAll(_ list: CallDirectoryList) {
        guard call() else { return }
        let name = list == .identification ? "identification" : "blocking"
        guard isIncremental else {
            return fail(.unexpectedIncrementalRemoval, "removal of all \(name) entries in a request that is not incremental")
        }
        if list == .identification { identification.removeAll() } else { blocking.removeAll() }
    }
}

/// One list during a request: the loaded numbers minus removals, plus ascending additions.
private struct PendingList {
    var base: [Int64] = []
    var cleared = false
    var removed: Set<Int64> = []
    var added: [Int64] = []
    var labels: [String] = []

    init(base: [Int64] = []) { self.base = base }

    var count: Int { (cleared ? 0 : base.count - removed.count) + added.count }

    func baseHolds(_ n: Int64) -> Bool {
        !cleared && base.sortedIndex(of: n) != nil && !removed.contains(n)
    }

    mutating func remove(_ n: Int64) -> Bool {
        if let i = added.sortedIndex(of: n) {
            added.remove(at: i)
            if !labels.isEmpty { labels.remove(at: i) }
            return true
        }
        guard baseHolds(n) else { return false }
        removed.insert(n)
        return true
    }

    mutating func removeAll() {
        cleared = true
        removed = []
        added = []
        labels = []
    }

    /// The list after the request; labels are merged when `baseLabels` is given.
    func merged(baseLabels: [String]?) -> ([Int64], [String]) {
        var numbers: [Int64] = []
        var outLabels: [String] = []
        numbers.reserveCapacity(count)
        let keep = cleared ? 0 : base.count
        var i = 0, j = 0
        while i < keep || j < added.count {
            if i < keep && removed.contains(base[i]) { i += 1; continue }
            if j == added.count || (i < keep && base[i] < added[j]) {
                numbers.append(base[i])
                if let baseLabels { outLabels.append(baseLabels[i]) }
                i += 1
            } else {
                numbers.append(added[j])
                if baseLabels != nil { outLabels.append(labels[j]) }
                j += 1
            }
        }
        return (numbers, outLabels)
    }
}

extension Array where Element: Comparable {
    /// The index of `x` in this ascending array, if present (binary search).
    func sortedIndex(of x: Element) -> Int? {
        var lo = 0, hi = count
        while lo < hi {
            let mid = (lo + hi) / 2
            if self[mid] < x { lo = mid + 1 } else { hi = mid }
        }
        return lo < count && self[lo] == x ? lo : nil
    }

    /// The first index whose element is ≥ `x`.
    func lowerBound(_ x: Element) -> Int {
        var lo = 0, hi = count
        while lo < hi {
            let mid = (lo + hi) / 2
            if self[mid] < x { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}
