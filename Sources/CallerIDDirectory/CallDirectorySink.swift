/// What a Call Directory extension hands its entries to: the calls of
/// `CXCallDirectoryExtensionContext`, nothing more.
///
/// Rules the receiver enforces (CallKit on a phone, ``CallDirectorySimulator`` here):
/// - two lists, identification (number + label) and blocking (number), each added in strictly
///   ascending order within a request, without duplicates;
/// - removals only when ``isIncremental`` is true;
/// - at most 1,999,999 entries per extension;
/// - like CallKit, the calls do not fail one by one: the first violation fails the whole request
///   when it completes.
///
/// Numbers are `CXCallDirectoryPhoneNumber` values: `Int64`, country code then national number.
public protocol CallDirectorySink: AnyObject {
    /// True when the system asks for changes to what it already holds (iOS 11+); false when it
    /// wants the complete set from scratch (first load, after the extension was re-enabled).
    var isIncremental: Bool { get }
    func addIdentificationEntry(_ number: Int64, label: String)
    func addBlockingEntry(_ number: Int64)
    func removeIdentificationEntry(_ number: Int64)
    func removeBlockingEntry(_ number: Int64)
    func removeAllIdentificationEntries()
    func removeAllBlockingEntries()
}

#if canImport(CallKit) && os(iOS)
public import CallKit

/// The real thing: forwards each call to the extension's context, unchanged.
@available(iOS 11.0, *)
public final class CallKitSink: CallDirectorySink {
    public let context: CXCallDirectoryExtensionContext

    public init(_ context: CXCallDirectoryExtensionContext) { self.context = context }

    public var isIncremental: Bool { context.isIncremental }

    public func addIdentificationEntry(_ number: Int64, label: String) {
        context.addIdentificationEntry(withNextSequentialPhoneNumber: number, label: label)
    }

    public func addBlockingEntry(_ number: Int64) {
        context.addBlockingEntry(withNextSequentialPhoneNumber: number)
    }

    public func removeIdentificationEntry(_ number: Int64) {
        context.removeIdentificationEntry(withPhoneNumber: number)
    }

    public func removeBlockingEntry(_ number: Int64) {
        context.removeBlockingEntry(withPhoneNumber: number)
    }

    public func removeAllIdentificationEntries() { context.removeAllIdentificationEntries() }

    public func removeAllBlockingEntries() { context.removeAllBlockingEntries() }
}
#endif
