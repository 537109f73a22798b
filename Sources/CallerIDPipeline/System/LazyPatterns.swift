import Foundation

/// A table of ``DigitPattern``s compiled on first use, safe to share between threads: a lock
/// around the table (an uncontended lock costs tens of nanoseconds; compiling every pattern of
/// libphonenumber's metadata up front would cost every process that loads the library 10–20 ms,
/// and a debug build ten times that, while a build or a query meets a few calling codes).
///
/// Invariant: `compiled[i]` is read and written only with `lock` held; a slot, once filled, is
/// never changed, so the value handed out is the one every later caller gets.
final class LazyPatterns: @unchecked Sendable {
    private let lock = NSLock()
    private let sources: [String?]
    private var compiled: [DigitPattern?]
    private var tried: [Bool]

    /// - Parameter sources: the pattern of each slot; nil where there is none.
    init(_ sources: [String?]) {
        self.sources = sources
        compiled = [DigitPattern?](repeating: nil, count: sources.count)
        tried = [Bool](repeating: false, count: sources.count)
    }

    /// Slots with a source not compiled yet.
    var untried: Int {
        lock.lock()
        defer { lock.unlock() }
        return sources.indices.filter { sources[$0] != nil && !tried[$0] }.count
    }

    /// The compiled pattern of slot `index`; nil when it has no source or its source could not be read.
    func pattern(_ index: Int) -> DigitPattern? {
        lock.lock()
        defer { lock.unlock() }
        if tried[index] { return compiled[index] }
        tried[index] = true
        guard let source = sources[index] else { return nil }
        compiled[index] = try? DigitPattern(source)   // unreadable: judged by length only
        return compiled[index]
    }
}
